"""The streamed Chrome conversion's refusals and its result: times past int64 nanoseconds found
in a later segment or only once Kineto's base time is added, a trace without events, and what
`stream_chrome_to_parquet` returns. Written from the survivors of `readers/chrome/stream.py`'s
mutation run: no streamed test had a time out of range, so the checks were never reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from irprof.errors import TraceFormatError
from irprof.readers.chrome.stream import stream_chrome_to_parquet
from irprof.trace.io import load_parquet

LIMIT_NS = 2**62  # the largest magnitude of an int64 time irprof keeps (4.6e15 us)


def _slices(count: int) -> list[dict[str, Any]]:
    return [
        {"ph": "X", "name": f"op{i}", "cat": "c", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}
        for i in range(count)
    ]


def _write(path: Path, events: list[dict[str, Any]], **fields: Any) -> Path:
    path.write_text(json.dumps({"traceEvents": events, **fields}))
    return path


def _refusal(source: Path, tmp_path: Path) -> str:
    output = tmp_path / "out.parquet"
    with pytest.raises(TraceFormatError) as caught:
        stream_chrome_to_parquet(source, output, segment_bytes=2_000, chunk_bytes=256)
    assert not output.exists()
    return str(caught.value)


@pytest.mark.parametrize(
    ("bad", "field", "problem"),
    [
        ({"ts": 5e15, "dur": 1}, "ts", "ts = 5000000000000000.0 us is not a finite time "
         "within int64 nanoseconds (|ts| < 4.6e15 us with the base)"),
        ({"ts": 4e15, "dur": 7e14}, "dur", "dur = 700000000000000.0 us makes the event end "
         "beyond int64 nanoseconds"),
    ],
)  # fmt: skip
def test_a_time_out_of_range_in_a_later_segment_is_refused_at_its_row(
    tmp_path: Path, bad: dict[str, float], field: str, problem: str
) -> None:
    """150 events (several segments of 2,000 bytes), the 121st out of range: the refusal names
    the file, the event's index in `traceEvents` (not in its segment) and the field."""
    events = _slices(150)
    events[120] = {**events[120], **bad}
    source = _write(tmp_path / "t.json", events)
    assert _refusal(source, tmp_path) == f"{source} at traceEvents[120] field '{field}': {problem}"


def test_a_time_out_of_range_only_with_the_base_is_refused(tmp_path: Path) -> None:
    """Kineto's `baseTimeNanoseconds` is added after the events are read: an event fine alone
    but past 2**62 ns with the base is refused at its row once the base is known."""
    events = _slices(60)
    base_ns = LIMIT_NS - 1_000_000  # 1 ms below the limit: events from 1 ms on are out
    events[45] = {**events[45], "ts": 2_000}  # 2 ms: past the limit with the base
    source = _write(tmp_path / "t.json", events, baseTimeNanoseconds=base_ns)
    assert _refusal(source, tmp_path) == (
        f"{source} at traceEvents[45] field 'ts': ts = 2000.0 us is not a finite time within "
        "int64 nanoseconds (|ts| < 4.6e15 us with the base)"
    )


def test_a_base_time_that_is_not_an_integer_is_refused_naming_the_file(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.json", _slices(3), baseTimeNanoseconds="soon")
    assert _refusal(source, tmp_path) == (
        f"{source} at top-level field 'baseTimeNanoseconds': expected an integer number of "
        "nanoseconds, got str 'soon'"
    )


def test_a_trace_without_events_is_refused(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.json", [])
    assert _refusal(source, tmp_path) == f"{source}: chrome trace contains no events"


def test_the_result_names_the_output_in_a_new_folder_and_its_warnings(tmp_path: Path) -> None:
    """The output's missing parent folders are made; the result says where it wrote, how much,
    and that nothing needed a warning."""
    source = _write(tmp_path / "t.json", _slices(7))
    output = tmp_path / "new" / "deeper" / "out.parquet"
    result = stream_chrome_to_parquet(source, output)
    assert result.output == output
    assert (result.events, result.tracks, result.flows, result.warnings) == (7, 1, 0, ())
    assert len(load_parquet(output)) == 7
