"""Hostile trace input: a clear error naming file, event and field, or a counted repair; never a
traceback, a wrapped number or a wrong total."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.trace_summary import summarize_trace
from irprof.cli.main import main
from irprof.errors import TraceFormatError
from irprof.readers import read_trace

GOOD = {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}


def trace_with(second: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"traceEvents": [GOOD, {**GOOD, **second}], **top}).encode()


def deep_args() -> bytes:
    nested = b"[" * 2000 + b"]" * 2000
    return b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "args": {"a": %s}}]}' % (
        nested
    )


# case -> (file bytes, text the error must contain, besides the file name)
REFUSED: dict[str, tuple[Callable[[], bytes], str]] = {
    "ts 1e308": (lambda: trace_with({"ts": 1e308}), "traceEvents[1] field 'ts'"),
    "ts 2**63": (lambda: trace_with({"ts": 2**63}), "traceEvents[1] field 'ts'"),
    "ts a string": (lambda: trace_with({"ts": "soon"}), "traceEvents[1] field 'ts'"),
    "dur 1e30": (lambda: trace_with({"dur": 1e30}), "traceEvents[1] field 'dur'"),
    "ts + dur overflows": (
        lambda: trace_with({"ts": 4.5e15, "dur": 4e14}),
        "traceEvents[1] field 'dur': dur = 400000000000000.0 us makes the event end beyond",
    ),
    "base time a string": (
        lambda: trace_with({}, baseTimeNanoseconds="1700000000"),
        "field 'baseTimeNanoseconds': expected an integer",
    ),
    "base time 1e308": (
        lambda: trace_with({}, baseTimeNanoseconds=1e308),
        "field 'baseTimeNanoseconds'",
    ),
    "base time 2**63": (
        lambda: trace_with({}, baseTimeNanoseconds=2**63),
        "field 'baseTimeNanoseconds'",
    ),
    "base time plus ts overflows": (
        lambda: trace_with({"ts": 4e15}, baseTimeNanoseconds=2**61),
        "traceEvents[1] field 'ts'",
    ),
    "args nested 2000 deep": (deep_args, "traceEvents[0]: nested deeper"),
    "traceEvents nested 100k deep": (
        lambda: b'{"traceEvents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "nested deeper",
    ),
    # The first element is an array, not an event: refused before the depth matters.
    "bare array nested 100k deep": (
        lambda: b"[" * 100_000 + b"]" * 100_000,
        "traceEvents[0]: Expected `object`, got `array`",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_hostile_values_are_refused_naming_file_event_and_field(tmp_path: Path, case: str) -> None:
    make, expected = REFUSED[case]
    path = tmp_path / "hostile.json"
    path.write_bytes(make())
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    assert str(caught.value).startswith(str(path))
    assert expected in str(caught.value)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_cli_summary_and_convert_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    make, expected = REFUSED[case]
    path = tmp_path / "hostile.json"
    path.write_bytes(make())
    out = tmp_path / "out"
    out.mkdir()
    assert main(["trace", "summary", str(path)]) == 2
    assert main(["trace", "convert", str(path), "-o", str(out / "events.json")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and expected in err and "Traceback" not in err
    assert list(out.iterdir()) == []


def test_invalid_utf8_in_strings_is_replaced_and_counted(tmp_path: Path) -> None:
    # GIVEN raw non-UTF-8 bytes in a name and in a call stack argument, as PyTorch has written
    path = tmp_path / "garbage.json"
    path.write_bytes(
        b'\n{"traceEvents": [{"ph": "X", "name": "op\xff", "pid": 1, "tid": 1, "ts": 1, '
        b'"dur": 2, "args": {"Call stack": "_cupti_monitor.py(0): \xa0~\x85Kd\x7f;"}},'
        b'{"ph": "X", "name": "ok \xe2\x82\xac", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}'
    )
    # WHEN it is read
    trace = read_trace(path)
    # THEN the bad bytes become U+FFFD, valid multi-byte text stays, and the repair is counted
    assert trace.names() == ["op\ufffd", "ok \u20ac"]
    assert trace.args(0) == {"Call stack": "_cupti_monitor.py(0): \ufffd~\ufffdKd\x7f;"}
    assert trace.warnings == ("3 invalid UTF-8 sequence(s) replaced by U+FFFD",)
    assert summarize_trace(trace).warnings == trace.warnings


def test_negative_duration_is_clamped_and_counted_never_subtracted(tmp_path: Path) -> None:
    path = tmp_path / "negative.json"
    path.write_bytes(trace_with({"dur": -5}))
    trace = read_trace(path)
    summary = summarize_trace(trace)
    assert sorted(trace.dur_ns.tolist()) == [0, 2000]
    assert summary.top_by_total[0].total_ns == 2000
    assert "1 event(s) with a negative 'dur' read as 0 ns" in summary.warnings


def test_totals_that_exceed_int64_are_exact_not_wrapped(tmp_path: Path) -> None:
    # GIVEN four events of 2**61 ns each (legal one by one; their sum is beyond int64)
    long_us = 2**61 / 1000
    events = [
        {"ph": "X", "name": "long", "pid": 1, "tid": tid, "ts": 0, "dur": long_us}
        for tid in range(4)
    ]
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(path)
    total = summarize_trace(trace).top_by_total[0].total_ns
    assert total == sum(trace.dur_ns.tolist()) > 2**63


def test_summary_of_a_huge_name_prints_it_shortened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a 2 MB event name (the table used to fold it line by line: 14 s, minutes at 20 MB)
    path = tmp_path / "long_name.json"
    events = [{**GOOD, "name": "x" * 2_000_000 + "TAIL"}, GOOD]
    path.write_text(json.dumps({"traceEvents": events}))
    assert main(["trace", "summary", str(path)]) == 0
    out = capsys.readouterr().out
    # THEN the name is shown by its tail, cut to a table cell, so rendering stays linear
    assert "TAIL" in out and "x" * 200 not in out
    assert len(out) < 20_000
