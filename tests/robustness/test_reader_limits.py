"""Hostile input to every reader, irprof's own formats included: one time rule for all (refuse
what int64 cannot hold, count and clamp negative durations), unchecked values refused or ignored
with a warning, and a TraceFormatError naming the file and the field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from irprof.analyses.trace_summary import summarize_trace
from irprof.cli.main import main
from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.xplane_proto.xplane_pb2 import XSpace
from irprof.trace.io import save_events_json, save_parquet
from tests.readers.test_xplane import add_stat_names, host_space

GOOD = {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
COMPACT = (",", ":")  # as irprof writes its own events.json


def iree_line(**fields: Any) -> str:
    record = {
        "type": "host_dispatch_event",
        "key": "main_dispatch_0",
        "start_host_time_ns": 1000,
        "duration_ns": 10,
        "physical_device_ordinal": 0,
        "queue_ordinal": 0,
        **fields,
    }
    return json.dumps(record, separators=(",", ":")) + "\n"


def refused(path: Path) -> str:
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    return message


# --- item 6: one time rule for every reader -------------------------------------------------


def test_iree_start_plus_duration_beyond_int64_is_refused_naming_the_line(tmp_path: Path) -> None:
    # GIVEN a start and a duration each legal, whose sum wraps int64
    path = tmp_path / "profile.jsonl"
    path.write_text(iree_line() + iree_line(start_host_time_ns=2**62 - 10, duration_ns=2**62))
    # THEN the file is refused at the event's line, never summarised with negative seconds
    message = refused(path)
    assert "at line 2 field 'dur'" in message and "beyond int64" in message


def test_events_json_negative_duration_is_clamped_and_counted_like_chrome(tmp_path: Path) -> None:
    chrome = tmp_path / "chrome.json"
    chrome.write_text(json.dumps({"traceEvents": [GOOD, {**GOOD, "dur": -5}]}))
    path = tmp_path / "events.json"
    save_events_json(read_trace(chrome), path)
    document = json.loads(path.read_text())
    document["columns"]["dur_ns"] = [-999_000, 2000]
    document["warnings"] = []
    path.write_text(json.dumps(document, separators=COMPACT))
    trace = read_trace(path)
    assert sorted(trace.dur_ns.tolist()) == [0, 2000]
    assert trace.warnings == ("1 event(s) with a negative 'dur' read as 0 ns",)
    assert summarize_trace(trace).top_by_total[0].total_ns == 2000


def saved_events(tmp_path: Path, **changes: Any) -> Path:
    """A saved events.json of a two-event trace with a flow, then `changes` applied to it."""
    source = tmp_path / "chrome.json"
    flow = {"cat": "c", "name": "f", "pid": 1, "tid": 1, "id": 7}
    source.write_text(
        json.dumps(
            {
                "traceEvents": [
                    GOOD,
                    {**GOOD, "name": "b", "ts": 5},
                    {**flow, "ph": "s", "ts": 1},
                    {**flow, "ph": "f", "ts": 5, "bp": "e"},
                ]
            }
        )
    )
    path = tmp_path / "events.json"
    save_events_json(read_trace(source), path)
    document = json.loads(path.read_text())
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        target = document
        for parent in parents:
            target = target[parent]
        target[last] = value
    path.write_text(json.dumps(document, separators=COMPACT))
    return path


EVENTS_JSON_MUTANTS: dict[str, tuple[dict[str, Any], str]] = {
    "end beyond int64": ({"columns__ts_ns": [2**62 - 5, 10]}, "field 'dur'"),
    "ts 2**64": ({"columns__ts_ns": [2**64, 10]}, "field 'columns.ts_ns'"),
    "bad base64": (
        {"hlo_programs": [{"program_id": 1, "name": "p", "proto_base64": "!!not base64"}]},
        "hlo_programs[0].proto_base64",
    ),
    "empty kind_labels": ({"kind_labels": []}, "field 'kind_labels'"),
    "kind out of range": ({"columns__kind": [0, 99]}, "field 'columns.kind'"),
    "name out of range": ({"columns__name": [0, 1000]}, "field 'columns.name'"),
    "negative name": ({"columns__name": [0, -1]}, "field 'columns.name'"),
    "track out of range": ({"columns__track": [0, 5]}, "field 'columns.track'"),
    "flow end out of range": ({"flows__dst": [40]}, "field 'flows.dst'"),
    "ragged flows": ({"flows__src": [0, 1]}, "header 'flows'"),
    "ragged tracks": ({"tracks__tid": [1, 2]}, "header 'tracks'"),
    "ragged columns": ({"columns__dur_ns": [1]}, "event columns and args"),
    "pid 2**64": ({"tracks__pid": [2**64]}, "field 'tracks.pid'"),
}


@pytest.mark.parametrize("case", sorted(EVENTS_JSON_MUTANTS))
def test_forged_events_json_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    changes, expected = EVENTS_JSON_MUTANTS[case]
    path = saved_events(tmp_path, **changes)
    assert expected in refused(path)
    assert main(["trace", "summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err


def test_events_json_rewritten_with_spaces_is_still_detected(tmp_path: Path) -> None:
    compact = saved_events(tmp_path)
    spaced = tmp_path / "spaced.json"
    spaced.write_text(json.dumps(json.loads(compact.read_text()), indent=1))
    assert read_trace(spaced).names() == read_trace(compact).names() == ["a", "b"]


def saved_parquet(tmp_path: Path) -> tuple[Path, pa.Table]:
    source = saved_events(tmp_path)
    path = tmp_path / "events.parquet"
    save_parquet(read_trace(source), path)
    return path, pq.read_table(path)


def rewrite(path: Path, table: pa.Table, column: str, values: pa.Array) -> None:
    metadata = table.schema.metadata
    index = table.schema.get_field_index(column)
    table = table.set_column(index, column, values).replace_schema_metadata(metadata)
    pq.write_table(table, path)


PARQUET_MUTANTS: dict[str, tuple[str, Any, str]] = {
    "ts_ns as strings": ("ts_ns", pa.array(["1000", "5000"]), "column 'ts_ns' has type string"),
    "track out of range": ("track", pa.array([0, 9], pa.int32()), "field 'columns.track'"),
    "name not in the header": (
        "name",
        pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["a", "zzz"])),
        "value 'zzz' is not in the header's name table",
    ),
    "kind not a dictionary": ("kind", pa.array([1, 2], pa.int8()), "column 'kind' has type int8"),
    "dur_ns with a null": ("dur_ns", pa.array([1, None], pa.int64()), "field 'columns.dur_ns'"),
}


@pytest.mark.parametrize("case", sorted(PARQUET_MUTANTS))
def test_forged_parquet_is_refused_naming_the_column(tmp_path: Path, case: str) -> None:
    column, values, expected = PARQUET_MUTANTS[case]
    path, table = saved_parquet(tmp_path)
    rewrite(path, table, column, values)
    assert expected in refused(path)


def test_parquet_without_an_event_column_is_refused(tmp_path: Path) -> None:
    path, table = saved_parquet(tmp_path)
    pq.write_table(
        table.drop_columns(["track"]).replace_schema_metadata(table.schema.metadata), path
    )
    assert "no 'track' column" in refused(path)


# --- item 9: XPlane stats, Chrome ids, IREE nesting ------------------------------------------


def xplane_with(tmp_path: Path, flow_id: Any, program_id: Any, start: Any) -> Path:
    space = host_space()
    environment = space.planes[0]
    del environment.stats[:]
    environment.stats.add(metadata_id=1, **start)
    # Every _p/_c on the python and compute lines gets the hostile id.
    for plane in space.planes[1:]:
        names = {meta.name: key for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                for stat in event.stats:
                    if stat.metadata_id in (names["_p"], names["_c"]):
                        stat.Clear()
                        stat.metadata_id = names["_p" if event.metadata_id == 4 else "_c"]
                        if isinstance(flow_id, bytes):
                            stat.bytes_value = flow_id
                        elif isinstance(flow_id, str):
                            stat.str_value = flow_id
                        else:
                            stat.double_value = flow_id
    metadata_plane = space.planes.add(name="/host:metadata")
    ids = add_stat_names(metadata_plane, ["Hlo Proto", "program_id"])
    program = metadata_plane.event_metadata[1]
    program.id, program.name = 1, "jit_f(1)"
    program.stats.add(metadata_id=ids["Hlo Proto"], bytes_value=b"\x08\x01")
    program.stats.add(metadata_id=ids["program_id"], **program_id)
    path = tmp_path / "hostile.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return path


@pytest.mark.parametrize(
    ("flow_id", "program_id", "start"),
    [
        ("seventy-seven", {"str_value": "one"}, {"str_value": "soon"}),
        (b"\x01\x02", {"double_value": float("nan")}, {"double_value": float("nan")}),
        (float("inf"), {"bytes_value": b"\x01"}, {"double_value": float("inf")}),
    ],
)
def test_xplane_stats_that_are_not_integers_are_ignored_with_warnings(
    tmp_path: Path, flow_id: Any, program_id: dict[str, Any], start: dict[str, Any]
) -> None:
    space_path = xplane_with(tmp_path, flow_id, program_id, start)
    XSpace.FromString(space_path.read_bytes())  # the file itself is a valid protobuf
    trace = read_trace(space_path)
    assert len(trace.flows) == 0
    assert [program.program_id for program in trace.hlo_programs] == [-1]
    assert trace.metadata["profile_start_time_ns"] is None
    warnings = " ".join(trace.warnings)
    assert "2 producer/consumer context(s)" in warnings
    assert "program_id" in warnings and "'profile_start_time'" in warnings


def test_chrome_flow_id_and_pid_beyond_int64_read_and_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = {"cat": "c", "name": "f", "pid": 1, "tid": 1, "id": 2**63 + 5}
    path = tmp_path / "big_ids.json"
    events = [
        GOOD,
        {**GOOD, "pid": 2**63 + 1, "tid": 2**64 - 1},
        {**GOOD, "name": "b", "ts": 5},
        {**flow, "ph": "s", "ts": 1},
        {**flow, "ph": "f", "ts": 5, "bp": "e"},
    ]
    path.write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(path)
    assert len(trace.flows) == 1
    assert str(2**63 + 1) in {trace.tracks.process[row] for row in range(len(trace.tracks))}
    assert main(["sql", str(path), "select count(*) as n from tracks"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_iree_jsonl_nested_5000_deep_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        iree_line() + '{"type":"host_dispatch_event","x":' + "[" * 5000 + "]" * 5000 + "}\n"
    )
    assert "line 2" in refused(path)


# --- item 10: a gzip bomb is refused before it fills memory ----------------------------------


def gzip_bomb(tmp_path: Path, inflated: int = 50 << 20) -> Path:
    """`inflated` bytes of a Chrome trace that is mostly zeros, as ~50 KB of gzip."""
    import gzip

    path = tmp_path / "bomb.json.gz"
    body = b'{"traceEvents": [], "pad": "' + b"0" * inflated + b'"}'
    path.write_bytes(gzip.compress(body, compresslevel=9))
    return path


def test_gzip_inflating_past_the_limit_is_refused_naming_the_limit(tmp_path: Path) -> None:
    path = gzip_bomb(tmp_path)
    assert path.stat().st_size < 200_000
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path, max_bytes=10 << 20)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert "inflates to more than 10,485,760 bytes" in message
    assert "MAX_DECOMPRESSED_BYTES" in message and "trace convert" in message


def test_gzip_within_the_limit_and_multi_member_gzip_still_read(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "two_members.json.gz"
    text = json.dumps({"traceEvents": [GOOD, {**GOOD, "name": "b"}]}).encode()
    path.write_bytes(gzip.compress(text[:20]) + gzip.compress(text[20:]) + b"\x00" * 8)
    assert read_trace(path, max_bytes=len(text)).names() == ["a", "b"]
    with pytest.raises(TraceFormatError, match="inflates to more than"):
        read_trace(path, max_bytes=len(text) - 1)


# --- item 11: the streamed convert holds one bounded segment ---------------------------------


def test_streamed_convert_refuses_a_segment_without_event_boundary(tmp_path: Path) -> None:
    import gzip

    from irprof.readers.chrome.stream import stream_chrome_to_parquet

    # GIVEN an event array whose two events are separated by 20 MB of whitespace
    path = tmp_path / "spaces.json.gz"
    event = json.dumps(GOOD).encode()
    body = b'{"traceEvents": [' + event + b"," + b" " * (20 << 20) + event + b"]}"
    path.write_bytes(gzip.compress(body))
    out = tmp_path / "out.parquet"
    with pytest.raises(TraceFormatError) as caught:
        stream_chrome_to_parquet(path, out, max_segment_bytes=1 << 20, block_bytes=1 << 18)
    message = str(caught.value)
    assert message.startswith(str(path)) and "no event boundary" in message
    assert "MAX_SEGMENT_BYTES" in message
    assert not out.exists()


# --- item 13: a duplicate traceEvents key, one rule ------------------------------------------


DUPLICATE = (
    b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}],'
    b' "other": 1, "traceEvents": [{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1,'
    b' "dur": 2}]}'
)


def test_duplicate_trace_events_is_refused_in_memory_and_streamed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "duplicate.json"
    path.write_bytes(DUPLICATE)
    assert "duplicate top-level key 'traceEvents'" in refused(path)
    assert main(["trace", "convert", str(path), "-o", str(tmp_path / "out.parquet")]) == 2
    err = capsys.readouterr().err
    assert "duplicate top-level key 'traceEvents'" in err
    assert not (tmp_path / "out.parquet").exists()


def test_a_nested_trace_events_key_is_not_a_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"traceEvents": [GOOD], "meta": {"traceEvents": [1]}}))
    assert read_trace(path).names() == ["a"]


# --- item 14: iree-profile JSONL with spaces --------------------------------------------------


def test_iree_jsonl_written_with_spaces_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "spaced.jsonl"
    path.write_text("\n" + json.dumps(json.loads(iree_line()), indent=None) + "\n")
    assert path.read_text().startswith('\n{"type": "host_dispatch_event"')
    trace = read_trace(path)
    assert trace.names() == ["main_dispatch_0"] and trace.dur_ns.tolist() == [10]
