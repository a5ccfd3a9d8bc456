"""The iree-profile dispatch reader on lines written here: the integers it accepts (0 and
int64's largest, never a bool or a negative), records it skips, the start field it falls back
to, tracks and arguments per event, the summary and warnings, where a bad line is named and
the sniffing of the first record.

Written from the mutants of `readers/iree_profile.py`. Every expected value is the one written
into the line.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from irprof.errors import TraceFormatError
from irprof.readers.iree_profile import INT64_MAX, READER, read_iree_profile
from irprof.readers.trace_bytes import TraceBytes
from irprof.trace.model import EventKind, Trace


def event(**fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "host_dispatch_event",
        "physical_device_ordinal": 0,
        "queue_ordinal": 0,
        "key": "main_dispatch_0_x",
        "start_host_time_ns": 1_000,
        "duration_ns": 250,
    }
    record.update(fields)
    return {name: value for name, value in record.items() if value is not None}


def lines(*records: dict[str, Any] | str) -> bytes:
    return b"".join(
        (record if isinstance(record, str) else json.dumps(record)).encode() + b"\n"
        for record in records
    )


def read(tmp_path: Path, *records: dict[str, Any] | str) -> Trace:
    path = tmp_path / "d.jsonl"
    path.write_bytes(lines(*records))
    return read_iree_profile(path)


def refused(tmp_path: Path, *records: dict[str, Any] | str) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as caught:
        read(tmp_path, *records)
    return caught.value


def test_each_event_is_a_dispatch_on_its_device_and_queue_with_its_context(
    tmp_path: Path,
) -> None:
    trace = read(
        tmp_path,
        event(physical_device_ordinal=1, queue_ordinal=2, key="k_a", submission_id=7,
              tile_count=3, workgroup_size=[4, 1, 1], unknown_field=9),
        event(key="k_b", start_host_time_ns=5_000, duration_ns=0),
        event(physical_device_ordinal=1, queue_ordinal=2, key="k_c", start_host_time_ns=9_000),
    )  # fmt: skip
    found = {
        trace.name_of(row): (int(trace.ts_ns[row]), int(trace.dur_ns[row]), int(trace.track[row]))
        for row in range(len(trace))
    }
    assert set(found) == {"k_a", "k_b", "k_c"}
    assert found["k_a"][:2] == (1_000, 250) and found["k_b"][:2] == (5_000, 0)
    assert found["k_a"][2] == found["k_c"][2] != found["k_b"][2]
    assert trace.tracks.label(found["k_a"][2]) == "iree device 1/queue 2"
    assert trace.tracks.label(found["k_b"][2]) == "iree device 0/queue 0"
    assert set(trace.kind.tolist()) == {int(EventKind.DISPATCH)}
    row_a = next(row for row in range(len(trace)) if trace.name_of(row) == "k_a")
    assert trace.args(row_a) == {
        "dispatch": "k_a", "device": 1, "queue": 2, "submission_id": 7, "tile_count": 3,
        "workgroup_size": [4, 1, 1],
    }  # fmt: skip
    assert trace.metadata["clock"] == "iree_host_time_ns (monotonic)"
    assert not any("invalid" in warning for warning in trace.warnings)


def test_a_device_timed_dispatch_falls_back_to_its_start_time(tmp_path: Path) -> None:
    trace = read(
        tmp_path,
        event(type="dispatch_event", start_host_time_ns=None, start_time_ns=42),
        event(key="both", start_host_time_ns=10, start_time_ns=99),
    )
    starts = {trace.name_of(row): int(trace.ts_ns[row]) for row in range(len(trace))}
    assert starts == {"main_dispatch_0_x": 42, "both": 10}


def test_integers_from_zero_to_int64_max_are_accepted(tmp_path: Path) -> None:
    trace = read(tmp_path, event(start_host_time_ns=0, duration_ns=0, queue_ordinal=INT64_MAX))
    assert (int(trace.ts_ns[0]), int(trace.dur_ns[0])) == (0, 0)
    assert trace.args(0)["queue"] == INT64_MAX == (1 << 63) - 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("duration_ns", -1),
        ("duration_ns", True),
        ("duration_ns", False),
        ("duration_ns", 2.0),
        ("duration_ns", "5"),
        ("queue_ordinal", INT64_MAX + 1),
        ("physical_device_ordinal", None),
        ("start_host_time_ns", -5),
    ],
)
def test_other_values_are_refused_naming_the_field_and_value(
    tmp_path: Path, field: str, value: object
) -> None:
    record = event(**{field: value})
    if value is None:
        record.pop(field, None)
    error = refused(tmp_path, event(), "", "   ", record)
    assert error.path == str(tmp_path / "d.jsonl")
    assert error.where == "line 4"  # blank lines count
    assert error.problem == f"field '{field}' must be a non-negative integer, got {value!r}"


def test_records_without_timing_are_skipped(tmp_path: Path) -> None:
    trace = read(
        tmp_path,
        {"type": "dispatch_summary", "matched_host_dispatches": 1},
        {"type": "executable", "key": "x"},
        {"type": 5},
        {"no_type": True},
        event(key="kept"),
        event(key="not-valid", valid=False),
        event(key="valid-zero", valid=0),
        event(key="valid-true", valid=True),
        {"type": "dispatch_summary", "matched_host_dispatches": 2},
    )
    assert sorted(trace.names()) == ["kept", "valid-true", "valid-zero"]
    assert trace.metadata["iree_dispatch_summary"] == {
        "type": "dispatch_summary",
        "matched_host_dispatches": 2,
    }
    assert "1 dispatch events marked invalid by IREE were skipped" in trace.warnings


def test_no_warning_without_invalid_events(tmp_path: Path) -> None:
    trace = read(tmp_path, event())
    assert not any("invalid" in warning for warning in trace.warnings)
    two = read(tmp_path, event(valid=False), event(valid=False), event())
    assert "2 dispatch events marked invalid by IREE were skipped" in two.warnings


@pytest.mark.parametrize("key", [None, "", 7])
def test_an_event_needs_a_key(tmp_path: Path, key: object) -> None:
    record = event(key=key) if key is not None else {**event(), "key": None}
    error = refused(tmp_path, event(), record)
    assert error.where == "line 2"
    assert error.problem == "dispatch event without a 'key' (dispatch function name)"


def test_an_event_needs_a_start(tmp_path: Path) -> None:
    error = refused(tmp_path, event(start_host_time_ns=None))
    assert error.where == "line 1"
    assert error.problem == "dispatch event without a start time ('start_host_time_ns')"


def test_lines_that_are_not_json_objects(tmp_path: Path) -> None:
    error = refused(tmp_path, event(), "[1, 2]")
    assert error.where == "line 2" and error.problem.startswith("not a JSON object (")
    assert error.problem.endswith("); expected iree-profile --format=jsonl lines")
    deep = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    error = refused(tmp_path, event(), event(), deep)
    assert (error.path, error.where, error.problem) == (
        str(tmp_path / "d.jsonl"),
        "line 3",
        "JSON nested too deep for an iree-profile record",
    )


def test_a_line_that_is_not_utf8_names_its_file_and_line(tmp_path: Path) -> None:
    """A byte flip inside a string (found by mutating a real profile): msgspec raises
    `UnicodeDecodeError`, which escaped the reader."""
    path = tmp_path / "d.jsonl"
    path.write_bytes(lines(event()) + lines(event(key="main_dispatch_0")).replace(b"_0", b"\xb9"))
    with pytest.raises(TraceFormatError) as caught:
        read_iree_profile(path)
    error = caught.value
    assert (error.path, error.where, error.problem) == (
        str(path),
        "line 2",
        "not UTF-8 text (invalid start byte in a string); expected iree-profile --format=jsonl "
        "lines",
    )


def test_an_event_past_int64_names_its_file_line(tmp_path: Path) -> None:
    # each value fits on its own; start + duration does not: the builder names the line
    error = refused(
        tmp_path, event(), "", event(start_host_time_ns=INT64_MAX - 10, duration_ns=INT64_MAX)
    )
    assert error.where is not None and "line 3" in error.where
    assert error.path == str(tmp_path / "d.jsonl")


def test_data_given_is_read_instead_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    trace = READER.read(path, TraceBytes(lines(event(key="given"))))
    assert trace.names() == ["given"]
    assert read_iree_profile(path, lines(event(key="also"))).names() == ["also"]
    with pytest.raises(TraceFormatError) as caught:
        read_iree_profile(path)
    assert caught.value.path == str(path)
    assert caught.value.problem == f"cannot read: {os.strerror(errno.ENOENT)}"
    assert READER.name == "iree-profile"


@pytest.mark.parametrize(
    ("head", "sniffed"),
    [
        (b'{"type":"host_dispatch_event","key":"x"}', True),
        (b'{"type":"dispatch_event"}', True),
        (b'{"type":"dispatch_summary"}', True),
        (b' \r\n\t{ \n"type" \t: \r"dispatch_event"}', True),
        (b'{"type":"executable"}', False),
        (b'{"key":"x","type":"dispatch_event"}', False),
        (b'{"type":"dispatch_eventX"}', False),
        (b'x{"type":"dispatch_event"}', False),
        (b'{"type":"host_dispatch_events"}', False),
        (b"", False),
    ],
)
def test_sniffing_reads_the_first_records_type(head: bytes, sniffed: bool) -> None:
    assert READER.sniff(head) is sniffed


def test_one_track_per_device_and_queue(tmp_path: Path) -> None:
    trace = read(
        tmp_path,
        event(physical_device_ordinal=0, queue_ordinal=2, key="d0q2"),
        event(physical_device_ordinal=1, queue_ordinal=2, key="d1q2"),
        event(physical_device_ordinal=1, queue_ordinal=0, key="d1q0"),
        event(physical_device_ordinal=1, queue_ordinal=2, key="d1q2b", start_host_time_ns=2_000),
    )
    track_of = {trace.name_of(row): int(trace.track[row]) for row in range(len(trace))}
    assert len(set(track_of.values())) == 3 and track_of["d1q2"] == track_of["d1q2b"]
    for name, (device, queue) in {"d0q2": (0, 2), "d1q2": (1, 2), "d1q0": (1, 0)}.items():
        track = track_of[name]
        assert (trace.tracks.pid[track], trace.tracks.tid[track]) == (device, queue)
        assert trace.tracks.label(track) == f"iree device {device}/queue {queue}"
