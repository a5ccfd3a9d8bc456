"""Trace -> events.json / Parquet -> Trace round trips, and the trace summary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.trace_summary import summarize_trace
from irprof.cli.main import main
from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.trace.builder import TraceBuilder
from irprof.trace.io import (
    load_events_json,
    load_parquet,
    save_events_json,
    save_parquet,
    traces_equal,
)
from irprof.trace.model import EventKind, HloProgram, Trace

FIXTURES = [
    "tf_matmul.xplane.pb",
    "jax_mlp.xplane.pb",
    "jax_mlp.perfetto_trace.json.gz",
    "torch_mlp.trace.json.gz",
]


def built_trace() -> Trace:
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "main")
    device = builder.track(2, 7, "gpu", "stream 7")
    outer = builder.add(0, 100, host, "step", EventKind.STEP, args={"step_num": 1})
    launch = builder.add(10, 5, host, "launch", EventKind.RUNTIME)
    kernel = builder.add(30, 40, device, "gemm", EventKind.KERNEL, args_json=b'{"grid": [1, 2]}')
    builder.add(50, 0, host, "mark", EventKind.INSTANT, args={"ü": "ñ"})
    builder.flow(launch, kernel, 42)
    builder.flow(outer, launch, 43)
    builder.metadata.update({"source": "built", "profile_start_time_ns": 5, "nested": {"a": [1]}})
    builder.hlo_programs.append(HloProgram(3, "jit_f", b"\x08\x01\xff"))
    builder.warnings.append("1 'E' event(s) without an open 'B'")
    return builder.build()


@pytest.mark.parametrize(
    "save, load", [(save_events_json, load_events_json), (save_parquet, load_parquet)]
)
def test_built_trace_round_trips_field_by_field(
    tmp_path: Path, save: Callable[[Trace, Path], None], load: Callable[[Path], Trace]
) -> None:
    trace = built_trace()
    path = tmp_path / "events.out"
    save(trace, path)
    again = load(path)
    assert traces_equal(trace, again)
    assert again.args(2) == {"grid": [1, 2]}
    assert again.hlo_programs == (HloProgram(3, "jit_f", b"\x08\x01\xff"),)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_fixture_round_trips_through_both_forms(
    tmp_path: Path, fixtures: Path, fixture: str
) -> None:
    trace = read_trace(fixtures / "traces" / fixture)
    save_events_json(trace, tmp_path / "events.json")
    save_parquet(trace, tmp_path / "events.parquet")
    assert traces_equal(trace, load_events_json(tmp_path / "events.json"))
    assert traces_equal(trace, load_parquet(tmp_path / "events.parquet"))
    # read_trace recognises irprof's own forms too
    assert traces_equal(trace, read_trace(tmp_path / "events.json"))
    assert traces_equal(trace, read_trace(tmp_path / "events.parquet"))


def test_round_trip_detects_a_difference(tmp_path: Path) -> None:
    trace = built_trace()
    save_events_json(trace, tmp_path / "events.json")
    text = (tmp_path / "events.json").read_text().replace('"gemm"', '"gemv"')
    (tmp_path / "events.json").write_text(text)
    assert not traces_equal(trace, load_events_json(tmp_path / "events.json"))


def test_wrong_version_and_foreign_parquet_are_rejected(tmp_path: Path) -> None:
    save_events_json(built_trace(), tmp_path / "events.json")
    path = tmp_path / "events.json"
    path.write_text(path.read_text().replace('"version":1', '"version":99'))
    with pytest.raises(TraceFormatError, match="version 99"):
        load_events_json(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(TraceFormatError, match="no irprof header"):
        load_parquet(tmp_path / "other.parquet")


events_strategy = st.lists(
    st.tuples(
        st.integers(0, 2**40),
        st.integers(0, 2**20),
        st.integers(0, 3),
        st.sampled_from(["a", "b", "ç", "aten::mm"]),
        st.sampled_from(list(EventKind)),
        st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    ),
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(events=events_strategy)
def test_any_trace_round_trips(
    tmp_path_factory: pytest.TempPathFactory, events: list[tuple[Any, ...]]
) -> None:
    builder = TraceBuilder()
    for ts, dur, track, name, kind, args in events:
        builder.add(ts, dur, builder.track(track, track), name, kind, args=args)
    trace = builder.build()
    folder = tmp_path_factory.mktemp("rt")
    save_events_json(trace, folder / "e.json")
    save_parquet(trace, folder / "e.parquet")
    assert traces_equal(trace, load_events_json(folder / "e.json"))
    assert traces_equal(trace, load_parquet(folder / "e.parquet"))


def test_summary_self_time_subtracts_children_on_the_same_track_only() -> None:
    builder = TraceBuilder()
    host = builder.track(1, 1)
    other = builder.track(1, 2)
    builder.add(0, 100, host, "parent")
    builder.add(10, 30, host, "child")
    builder.add(50, 20, host, "child")
    builder.add(12, 5, host, "grandchild")
    builder.add(0, 100, other, "elsewhere")  # overlaps, but on another track
    builder.add(5, 0, host, "counter", EventKind.COUNTER)
    summary = summarize_trace(builder.build(), top=3)
    rows = {row.name: row for row in summary.top_by_total}
    assert (rows["parent"].total_ns, rows["parent"].self_ns) == (100, 50)
    assert (rows["elsewhere"].total_ns, rows["elsewhere"].self_ns) == (100, 100)
    assert (rows["child"].count, rows["child"].total_ns, rows["child"].self_ns) == (2, 50, 45)
    assert [row.name for row in summary.top_by_self] == ["elsewhere", "parent", "child"]
    assert summary.events == 6 and summary.tracks == 2 and summary.span_ns == 100
    assert summary.events_by_kind == {"other": 5, "counter": 1}


def test_cli_convert_and_summary(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = fixtures / "traces" / "tf_matmul.xplane.pb"
    assert main(["trace", "convert", str(trace), "-o", str(tmp_path / "events.parquet")]) == 0
    assert "events" in capsys.readouterr().out
    assert traces_equal(read_trace(trace), load_parquet(tmp_path / "events.parquet"))
    assert main(["trace", "summary", str(tmp_path / "events.parquet"), "-n", "5"]) == 0
    out = capsys.readouterr().out
    assert "Top names by self time" in out and "framework_op" in out
