"""Streamed Chrome -> Parquet conversion: the same trace as the in-memory reader, in pieces.

Every test compares `load_parquet(stream_chrome_to_parquet(file))` with `read_trace(file)` field
by field (`traces_equal`), with segments, chunks, blocks and merge batches made tiny, so that
metadata, B/E pairs and flows that refer backwards and forwards cross every kind of boundary.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.chrome import stream_merge as chrome_stream_merge
from irprof.readers.chrome.stream import stream_chrome_to_parquet
from irprof.trace.io import load_parquet, traces_equal
from irprof.trace.model import EventKind, Trace

FIXTURES = Path(__file__).parents[2] / "fixtures" / "traces"
PUBLIC = sorted((FIXTURES / "public").glob("*.json.gz"))
OWN = [
    FIXTURES / "torch_mlp.trace.json.gz",
    FIXTURES / "jax_mlp.perfetto_trace.json.gz",
    FIXTURES / "tf_matmul.trace_viewer.json.gz",
]
TINY = {"segment_bytes": 3000, "chunk_bytes": 64, "block_bytes": 1024}


@pytest.fixture(name="tiny_merge")
def fixture_tiny_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    """Merge rounds of a few rows and merges of two runs at a time."""
    monkeypatch.setattr(chrome_stream_merge, "RUN_BATCH_ROWS", 5)
    monkeypatch.setattr(chrome_stream_merge, "MAX_FANIN", 2)


def streamed(source: Path, tmp_path: Path, **sizes: int) -> Trace:
    output = tmp_path / f"{source.name}.parquet"
    result = stream_chrome_to_parquet(source, output, **sizes)
    trace = load_parquet(output)
    assert (result.events, result.flows, result.tracks) == (
        len(trace),
        len(trace.flows),
        len(trace.tracks),
    )
    return trace


def assert_same(expected: Trace, actual: Trace) -> None:
    assert actual.names() == expected.names()
    assert actual.ts_ns.tolist() == expected.ts_ns.tolist()
    assert actual.flows.src.tolist() == expected.flows.src.tolist()
    assert actual.flows.dst.tolist() == expected.flows.dst.tolist()
    assert actual.tracks == expected.tracks
    assert actual.warnings == expected.warnings
    assert traces_equal(expected, actual)


@pytest.mark.parametrize("source", PUBLIC + OWN, ids=lambda path: path.name[:40])
def test_real_traces_stream_to_the_reader_s_trace(source: Path, tmp_path: Path) -> None:
    # GIVEN a real Kineto / JAX / xprof trace, WHEN streamed in segments of a few kB
    trace = streamed(source, tmp_path, segment_bytes=20_000, chunk_bytes=512, block_bytes=4096)
    # THEN it is the in-memory reader's trace, row for row and byte for byte
    assert_same(read_trace(source), trace)


def crossing_events() -> list[dict[str, Any]]:
    """Events whose meaning depends on events far before or after them in the file."""
    events: list[dict[str, Any]] = [
        # Forward: a B whose E comes last; flows whose slices come later in the file.
        {"ph": "B", "name": "step", "pid": 1, "tid": 1, "ts": 0, "args": {"a": 1}},
        {"ph": "s", "id": "x7", "cat": "fwd", "pid": 2, "tid": 5, "ts": 483.75, "name": "f"},
        {"ph": "f", "id": "x7", "cat": "fwd", "pid": 1, "tid": 1, "ts": 880.0, "name": "f"},
        {"ph": "f", "id": 3, "cat": "ac2g", "pid": 2, "tid": 5, "ts": 26.0, "bp": "e"},
    ]
    for index in range(60):
        ts = 10.0 + index * 15.25
        events.append(
            {"ph": "X", "cat": "cpu_op" if index % 3 else "kernel", "name": f"op{index % 4}",
             "pid": 1 + index % 2, "tid": 1 if index % 2 == 0 else 5, "ts": ts,
             "dur": 12.5 if index % 7 else -1, "args": {"i": index, "s": "}, {" * (index % 2)}}
        )  # fmt: skip
        if index % 9 == 0:
            events.append({"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": ts + 1, "s": "t"})
            events.append({"ph": "C", "name": "mem", "pid": 1, "tid": 0, "ts": ts,
                           "args": {"bytes": index}})  # fmt: skip
    events += [
        # Backward: flows whose start slices came early; a nested B/E pair; an E without B.
        {"ph": "s", "id": 3, "cat": "ac2g", "pid": 1, "tid": 1, "ts": 10.0},
        {"ph": "t", "id": "x7", "cat": "fwd", "pid": 1, "tid": 1, "ts": 682.0},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 100, "args": None},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 200, "args": {"result": "ok"}},
        {"ph": "E", "pid": 3, "tid": 3, "ts": 5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 1000, "args": {}},
        # Metadata last: it names tracks whose events came long before; later M events win.
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "early"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 2, "tid": 5, "args": {"sort_index": 3}},
        {"ph": "M", "name": "process_labels", "pid": 2, "args": {"labels": "GPU 0"}},
    ]
    return events


def write_document(path: Path, events: list[dict[str, Any]], **fields: Any) -> Path:
    text = json.dumps({**{"schemaVersion": 1}, "traceEvents": events, **fields}, indent=1)
    data = b"\xef\xbb\xbf" + text.encode().replace(b"op3", b"op\xff3")  # BOM, invalid UTF-8
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["crossing.json", "crossing.json.gz"])
def test_links_across_segments_resolve_as_in_memory(
    tmp_path: Path, name: str, tiny_merge: None
) -> None:
    # GIVEN a trace with B/E pairs, flows and metadata far from what they refer to, a BOM,
    # invalid UTF-8, a negative dur, string flow ids and Kineto's base time after the events
    source = write_document(
        tmp_path / name, crossing_events(), baseTimeNanoseconds=1_700_000_000_000_000_000
    )
    # WHEN streamed in pieces of a few events
    trace = streamed(source, tmp_path, **TINY)
    expected = read_trace(source)
    # THEN every link resolves as the reader resolves it
    assert_same(expected, trace)
    assert len(trace.flows) == 3
    main = list(zip(trace.tracks.pid, trace.tracks.tid, strict=True)).index((1, 1))
    assert trace.tracks.thread[main] == "main" and "GPU 0" in trace.tracks.process
    assert any("negative" in warning for warning in trace.warnings)
    assert any("UTF-8" in warning for warning in trace.warnings)
    assert any("without an open 'B'" in warning for warning in trace.warnings)
    step = trace.names().index("step")
    assert trace.dur_ns[step] == 1_000_000 and trace.args(step) == {"a": 1}
    assert trace.ts_ns[0] >= 1_700_000_000_000_000_000


def test_epoch_microseconds_are_exact_and_the_bare_array_form_streams(tmp_path: Path) -> None:
    # GIVEN epoch-microsecond times beyond float precision, in an unclosed bare array
    events = [
        f'{{"ph": "X", "name": "k{index}", "pid": 0, "tid": {index % 3}, '
        f'"ts": 1700000000123456.{index:03d}, "dur": 0.5}}'
        for index in range(40)
    ]
    source = tmp_path / "epoch.json"
    source.write_text("[" + ",\n".join(events) + ",\n")  # no closing bracket, trailing comma
    # THEN they are exact to the nanosecond, as the reader reads them
    trace = streamed(source, tmp_path, **TINY)
    assert_same(read_trace(source), trace)
    assert trace.ts_ns[:3].tolist() == [1700000000123456000 + step for step in range(3)]


kinds = st.sampled_from(
    ["X", "X", "X", "B", "E", "i", "C", "M", "s", "t", "f", "b", "e", "S", "F", "T", "O"]
)


@st.composite
def random_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    rng = random.Random(draw(st.integers(0, 2**32)))
    events = []
    for _ in range(draw(st.integers(1, 80))):
        phase = draw(kinds)
        event: dict[str, Any] = {
            "ph": phase,
            "pid": rng.choice([1, 2, "gpu"]),
            "tid": rng.choice([1, 2, 3]),
            "ts": rng.choice([0, 1.5, 2.25, 10, rng.uniform(0, 50)]),
            "name": rng.choice(["a", "b", "thread_name", "process_name", "ProfilerStep#1"]),
            "cat": rng.choice(["cpu_op", "kernel", "ac2g", "user_annotation", ""]),
        }
        if phase == "X":
            event["dur"] = rng.choice([0, 1, 3.5, 20, 100])
        if phase in "stfbeSF":
            event["id"] = rng.choice([1, 2, "z"])
        if phase in "be" and rng.random() < 0.3:
            event["id2"] = {rng.choice(["local", "global"]): event.pop("id")}
            if rng.random() < 0.5:
                event["bp"] = "e"
        if rng.random() < 0.7:
            event["args"] = rng.choice([{"name": "n"}, {"x": [1, {"y": "},"}]}, 5, None, {}])
        events.append(event)
    if not any(event["ph"] in "XiC" for event in events):
        events.append({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1})
    return events


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=random_events())
def test_any_trace_streams_to_the_reader_s_trace(
    tmp_path_factory: pytest.TempPathFactory, events: list[dict[str, Any]], tiny_merge: None
) -> None:
    folder = tmp_path_factory.mktemp("random")
    source = folder / "random.json"
    source.write_text(json.dumps({"traceEvents": events}))
    assert_same(read_trace(source), streamed(source, folder, **TINY))


def test_bad_input_names_the_event_and_leaves_no_output(tmp_path: Path) -> None:
    events = crossing_events()
    events[50]["ts"] = "soon"
    late = crossing_events()
    late[len(late) - 2]["dur"] = "later"  # in a later segment than the first
    cases = {
        "bad_type.json": json.dumps({"traceEvents": events}).encode(),
        "bad_dur.json": json.dumps({"traceEvents": late}).encode(),
        "truncated.json.gz": gzip.compress(json.dumps(crossing_events()).encode())[:-40],
        "cut.json": json.dumps({"traceEvents": crossing_events()}).encode()[:-300],
        "no_events.json": json.dumps({"traceEvents": [], "x": [1]}).encode(),
        "unread.json": json.dumps(
            {"traceEvents": [{"ph": "T", "name": "s", "ts": 1}, {"ph": "B", "name": "b", "ts": 2}]}
        ).encode(),
        "other.json": json.dumps({"events": [1, 2]}).encode(),
    }
    expected = {
        "bad_type.json": r"bad_type\.json at traceEvents\[50\] field 'ts'",
        "bad_dur.json": rf"bad_dur\.json at traceEvents\[{len(late) - 2}\] field 'dur'",
        "truncated.json.gz": "gzip stream is truncated",
        "cut.json": "not valid JSON",
        "no_events.json": "no events",
        "unread.json": r"no events \(1 event\(s\) of phases not read \(1 'T'\); read are "
        r"X, B/E, b/e, S/F, i/I/n, C, M and s/t/f; 1 'B' event\(s\) never closed",
        "other.json": "no 'traceEvents'",
    }
    for name, data in cases.items():
        source = tmp_path / name
        source.write_bytes(data)
        output = tmp_path / "out" / f"{name}.parquet"
        with pytest.raises(TraceFormatError, match=expected[name]):
            stream_chrome_to_parquet(source, output, **TINY)
        assert not output.parent.exists() or list(output.parent.iterdir()) == []


def test_streamed_parquet_reads_back_with_kinds_and_args(tmp_path: Path) -> None:
    source = PUBLIC[1]  # simple_add: kernels, memcpy, ac2g flows
    trace = streamed(source, tmp_path)
    kernels = trace.rows_of_kind(EventKind.KERNEL)
    assert len(kernels) and all("correlation" in args for args in trace.args_many(kernels[:5]))
    assert np.all(np.diff(trace.ts_ns) >= 0)


def test_cli_convert_streams_chrome_json_and_writes_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from irprof.cli.main import main

    source = PUBLIC[-1]  # trace_filter rank 1: distributedInfo.rank = 1
    streamed_file, whole_file = tmp_path / "streamed.parquet", tmp_path / "whole.parquet"
    assert main(["trace", "convert", str(source), "-o", str(streamed_file)]) == 0
    assert "(streamed)" in capsys.readouterr().out
    assert main(["trace", "convert", str(source), "-o", str(whole_file), "--in-memory"]) == 0
    assert "(read whole)" in capsys.readouterr().out
    assert traces_equal(load_parquet(streamed_file), load_parquet(whole_file))
    assert traces_equal(load_parquet(streamed_file), read_trace(source))
    # One trace into a folder: a one-rank dataset, partitioned by the trace's own rank
    assert main(["trace", "convert", str(source), "-o", str(tmp_path / "dataset")]) == 0
    partition = tmp_path / "dataset" / "rank=1" / "events.parquet"
    assert traces_equal(load_parquet(partition), load_parquet(streamed_file))
    # XPlane is read whole (no streaming reader), to the same kind of file
    xplane = FIXTURES / "tf_matmul.xplane.pb"
    assert main(["trace", "convert", str(xplane), "-o", str(tmp_path / "tf.parquet")]) == 0
    assert "(read whole)" in capsys.readouterr().out
    assert traces_equal(load_parquet(tmp_path / "tf.parquet"), read_trace(xplane))
    # A folder that holds other files is not taken for a dataset
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    assert main(["trace", "convert", str(source), "-o", str(tmp_path / "notes")]) == 2
    assert "not an irprof rank dataset" in capsys.readouterr().err
    assert sorted(path.name for path in (tmp_path / "notes").iterdir()) == ["todo.txt"]


def test_async_events_keep_the_track_order_wherever_chunks_end(tmp_path: Path) -> None:
    """An async event moves to its tree's thread; that thread is first seen where the event is,
    before a thread a later event introduces, in the reader's one chunk as in tiny chunks."""
    events = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 0, "dur": 1},
        {"ph": "e", "name": "io", "cat": "c", "id": "z", "pid": 1, "tid": 2, "ts": 9},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "b", "name": "io", "cat": "c", "id2": {"local": "z"}, "pid": 1, "tid": 1, "ts": 2},
    ]
    source = tmp_path / "async.json"
    source.write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(source)
    assert trace.tracks.thread == ("2", "async c z", "1")
    assert_same(trace, streamed(source, tmp_path, **TINY))


def test_paired_slices_tied_with_complete_events_keep_the_reader_s_order(tmp_path: Path) -> None:
    """B/E slices and X events that start together and last as long: the reader puts the
    paired slices after the direct events, in pairing order; so must the streamed runs."""
    events: list[dict[str, Any]] = []
    for tid in (1, 2, 3):
        events += [
            {"ph": "B", "name": f"b{tid}", "pid": 1, "tid": tid, "ts": 5},
            {"ph": "X", "name": f"x{tid}", "pid": 1, "tid": tid, "ts": 5, "dur": 1},
            {"ph": "E", "pid": 1, "tid": tid, "ts": 6},
        ]
    source = tmp_path / "ties.json"
    source.write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(source)
    assert trace.names() == ["x1", "x2", "x3", "b1", "b2", "b3"]
    assert_same(trace, streamed(source, tmp_path, **TINY))
