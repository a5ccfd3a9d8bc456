"""What the Chrome reader repairs and refuses, at the edges: invalid UTF-8 replaced and counted
(U+FFFD already in the file not counted, a sequence cut at the end or at a chunk boundary),
`baseTimeNanoseconds` as an integer or a named error, and starts and ends one nanosecond inside
and at the int64 limit the reader allows (|t| < 2**62 ns), with the event's index and field.

Written for `readers/chrome/checks.py`, whose own tests reached it only through whole files.
The limits and messages expected here come from the module's docstring, not from its code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.readers.chrome.checks import _REPAIR_CHUNK, base_time_ns, check_times, repair_utf8

LIMIT = 2**62  # |ns| must stay below this
PATH = Path("trace.json")
FFFD = "\ufffd".encode()


def test_ascii_comes_back_as_it_is() -> None:
    data = b'{"traceEvents": []}'
    repaired, count = repair_utf8(data)
    assert repaired is data and count == 0
    assert repair_utf8(b"") == (b"", 0)


def test_valid_utf8_is_kept_even_across_a_chunk_boundary() -> None:
    text = "é€😀"
    assert repair_utf8(text.encode()) == (text.encode(), 0)
    # a 3-byte character split by the checker's chunks is still valid
    data = b"a" * (_REPAIR_CHUNK - 1) + "€".encode() + b"z"
    repaired, count = repair_utf8(data)
    assert count == 0 and repaired == data


@pytest.mark.parametrize(
    ("data", "expected", "count"),
    [
        (b"a\xffb\xfe", "a\ufffdb\ufffd", 2),  # two stray bytes, two replacements
        (b"ok \xe2\x82", "ok \ufffd", 1),  # a sequence cut off at the end of the file
        (b"\xff", "\ufffd", 1),
        ("x\ufffd".encode() + b"\xc3", "x\ufffd\ufffd", 1),  # the file's own U+FFFD: not counted
        ("é".encode() + b"\x80" + "€".encode(), "é\ufffd€", 1),  # valid text around it kept
    ],
)
def test_invalid_bytes_are_replaced_and_counted(data: bytes, expected: str, count: int) -> None:
    assert repair_utf8(data) == (expected.encode(), count)


def test_repair_across_chunk_boundaries() -> None:
    # a valid character cut by the repairing pass's chunks survives whole; a bad byte in the
    # second chunk is found; nothing is lost at either end
    head = b"a" * (_REPAIR_CHUNK - 1)
    data = b"\xff" + head[1:] + "€".encode() + b"b\xfe" + b"c"
    repaired, count = repair_utf8(data)
    expected = (FFFD + head[1:] + "€".encode() + b"b" + FFFD + b"c", 2)
    assert (repaired, count) == expected
    assert len(repaired) == len(data) - 2 + 2 * len(FFFD)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 0), (0, 0), (5, 5), (-7, -7), (5.0, 5), (float(2**40), 2**40),
     (LIMIT - 1, LIMIT - 1), (-(LIMIT - 1), -(LIMIT - 1))],
)  # fmt: skip
def test_base_time_as_an_integer(value: object, expected: int) -> None:
    found = base_time_ns(PATH, value)
    assert found == expected and type(found) is int


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (5.5, "expected an integer number of nanoseconds, got float 5.5"),
        (True, "expected an integer number of nanoseconds, got bool True"),
        ("12", "expected an integer number of nanoseconds, got str 12"),
        ("9" * 50, f"expected an integer number of nanoseconds, got str {'9' * 40}"),
        (float("nan"), "expected an integer number of nanoseconds, got float nan"),
        (LIMIT, f"{LIMIT} is beyond the int64 nanosecond range (|value| < 2**62 expected)"),
        (-LIMIT, f"{-LIMIT} is beyond the int64 nanosecond range (|value| < 2**62 expected)"),
        (float(LIMIT), f"{LIMIT} is beyond the int64 nanosecond range (|value| < 2**62 expected)"),
    ],
)
def test_base_time_refused(value: object, problem: str) -> None:
    with pytest.raises(TraceFormatError) as caught:
        base_time_ns(PATH, value)
    error = caught.value
    assert error.path == "trace.json"
    assert error.where == "top-level field 'baseTimeNanoseconds'"
    assert error.problem.replace("'", "") == problem  # a long value: its first 40 characters


def times(ts: list[int], dur: list[int], base: int = 0, first_row: int = 0) -> None:
    check_times(PATH, np.array(ts, np.int64), np.array(dur, np.int64), base, first_row)


@pytest.mark.parametrize(
    ("ts", "dur", "base"),
    [
        ([LIMIT - 1], [0], 0),  # the last start allowed
        ([-(LIMIT - 1)], [0], 0),
        ([LIMIT - 11], [0], 10),  # with the base
        ([0], [LIMIT - 1], 0),  # the last end allowed
        ([10], [-(LIMIT - 1) - 10], 0),  # an end as far back as allowed
        ([5, -3], [5, 0], -2),
        ([], [], 0),
    ],
)
def test_times_within_the_range(ts: list[int], dur: list[int], base: int) -> None:
    times(ts, dur, base)  # no error


def refused(ts: list[int], dur: list[int], base: int = 0, first_row: int = 0) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as caught:
        times(ts, dur, base, first_row)
    assert caught.value.path == "trace.json"  # the message names the file
    return caught.value


START = "is not a finite time within int64 nanoseconds (|ts| < 4.6e15 us with the base)"
END = "makes the event end beyond int64 nanoseconds"


def test_a_start_at_the_limit_is_refused_with_its_row() -> None:
    error = refused([0, LIMIT], [0, 0])
    assert error.where == "traceEvents[1] field 'ts'"
    assert error.problem == f"ts = {LIMIT / 1000!r} us {START}"
    # below the limit on its own, at it with the base; the value shown is the event's ts
    error = refused([LIMIT - 10], [0], base=10, first_row=7)
    assert error.where == "traceEvents[7] field 'ts'"
    assert error.problem == f"ts = {(LIMIT - 10) / 1000!r} us {START}"
    error = refused([1, -LIMIT + 5], [0, 0], base=-5)
    assert error.where == "traceEvents[1] field 'ts'"


def test_an_end_at_the_limit_is_refused_with_its_row() -> None:
    error = refused([0, 1, 2], [0, LIMIT - 1, LIMIT - 2])
    # event 1 ends at 2**62, event 2 too: the first named, the other counted
    assert error.where == "traceEvents[1] field 'dur'"
    assert error.problem == f"dur = {(LIMIT - 1) / 1000!r} us {END} (1 more event(s) like it)"
    error = refused([-1], [-(LIMIT - 1)], first_row=100)
    assert error.where == "traceEvents[100] field 'dur'"
    assert error.problem == f"dur = {-(LIMIT - 1) / 1000!r} us {END}"


def test_starts_are_checked_before_ends_and_counted() -> None:
    error = refused([LIMIT, 0, LIMIT, LIMIT], [0, LIMIT, 0, 0], first_row=3)
    assert error.where == "traceEvents[3] field 'ts'"
    assert error.problem.endswith("(2 more event(s) like it)")


def test_rows_count_from_the_first_event_by_default() -> None:
    ts, dur = np.array([0, LIMIT], np.int64), np.array([0, 0], np.int64)
    with pytest.raises(TraceFormatError) as caught:
        check_times(PATH, ts, dur, 0)  # a whole file: no offset
    assert caught.value.where == "traceEvents[1] field 'ts'"
    assert str(caught.value).startswith("trace.json at traceEvents[1] field 'ts': ts = ")
