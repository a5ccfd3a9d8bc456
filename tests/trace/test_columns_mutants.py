"""The time check every reader runs: the int64 limits at their edges, the errors' full texts,
and negative durations repaired and counted.

Written from the mutants of `trace/columns.py` the first tests let through: no test of
`tests/trace/test_columns.py` called `check_time_columns`, which the readers' tests reach only
through whole files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.trace.columns import MAX_ABS_NS, check_time_columns, negative_durations_warning

LIMIT = 2**62


def check(
    ts: list[int], dur: list[int], locate: Callable[[int], str] | None = None
) -> tuple[list[int], list[str]]:
    warnings: list[str] = []
    fixed = check_time_columns(
        Path("t.json"),
        np.asarray(ts, dtype=np.int64),
        np.asarray(dur, dtype=np.int64),
        warnings,
        locate,
    )
    assert fixed.dtype == np.int64
    return fixed.tolist(), warnings


def refused(ts: list[int], dur: list[int], locate: Callable[[int], str] | None = None) -> str:
    with pytest.raises(TraceFormatError) as caught:
        check(ts, dur, locate)
    return str(caught.value)


def test_the_limit_is_two_to_the_62() -> None:
    assert MAX_ABS_NS == LIMIT
    # Just inside on every side: accepted unchanged.
    assert check([LIMIT - 1, -(LIMIT - 1), 0], [0, 0, LIMIT - 1]) == ([0, 0, LIMIT - 1], [])
    assert check([LIMIT - 2, -(LIMIT - 2)], [1, -1]) == (
        [1, 0],
        ["1 event(s) with a negative 'dur' read as 0 ns"],
    )


def test_a_start_at_the_limit_is_refused_with_its_place() -> None:
    ts_why = "is beyond int64 nanoseconds (|ts| < 2**62 ns expected)"
    assert refused([0, LIMIT], [0, 0]) == (
        f"t.json at event 1 field 'ts': ts = {LIMIT} ns {ts_why}"
    )
    assert refused([-LIMIT, 0, -LIMIT - 5], [0, 0, 0]) == (
        f"t.json at event 0 field 'ts': ts = {-LIMIT} ns {ts_why} (1 more event(s) like it)"
    )
    located = refused([0, 0, LIMIT], [0, 0, 0], lambda row: f"line {row + 10}")
    assert located.startswith("t.json at line 12 field 'ts': ")


def test_a_duration_at_the_limit_is_refused() -> None:
    dur_why = "is beyond int64 nanoseconds (|dur| < 2**62 ns expected)"
    assert refused([0, 0], [LIMIT, LIMIT + 1]) == (
        f"t.json at event 0 field 'dur': dur = {LIMIT} ns {dur_why} (1 more event(s) like it)"
    )
    assert refused([0], [-LIMIT]) == f"t.json at event 0 field 'dur': dur = {-LIMIT} ns {dur_why}"


def test_an_end_at_the_limit_is_refused() -> None:
    end_why = "makes the event end beyond int64 nanoseconds (ts + dur < 2**62 ns expected)"
    assert refused([5, LIMIT - 10], [1, 10]) == (
        f"t.json at event 1 field 'dur': dur = 10 ns {end_why}"
    )
    # A negative duration is checked before it is repaired: the end is -2**62.
    assert refused([-(LIMIT - 1), -(LIMIT - 1)], [-1, -2]) == (
        f"t.json at event 0 field 'dur': dur = -1 ns {end_why} (1 more event(s) like it)"
    )


def test_starts_are_checked_before_durations() -> None:
    message = refused([0, LIMIT], [LIMIT, 0])
    assert message.startswith("t.json at event 1 field 'ts': ")


def test_negative_durations_are_read_as_zero_and_counted() -> None:
    assert check([0, 1, 2, 3], [-5, 4, -1, 0]) == (
        [0, 4, 0, 0],
        ["2 event(s) with a negative 'dur' read as 0 ns"],
    )
    assert check([], []) == ([], [])
    assert negative_durations_warning(7) == "7 event(s) with a negative 'dur' read as 0 ns"
    warnings = ["earlier"]
    check_time_columns("t.json", np.asarray([0]), np.asarray([-1]), warnings)
    assert warnings == ["earlier", "1 event(s) with a negative 'dur' read as 0 ns"]


def test_a_narrow_duration_column_comes_back_as_int64() -> None:
    # three durations of 2**30 ns: their sum, 3 * 2**30, does not fit in int32
    ts = np.array([0, 10, 20], dtype=np.int32)
    dur = np.full(3, 2**30, dtype=np.int32)
    # narrower columns than the signature asks for, as a reader's arrays may be
    checked = check_time_columns("t.json", ts, dur, [])  # type: ignore[arg-type]
    assert checked.dtype == np.int64
    assert int(checked.sum()) == 3 * 2**30
    warnings: list[str] = []
    narrow = np.array([2**30, -1, 2**30], np.int32)
    repaired = check_time_columns("t.json", ts, narrow, warnings)  # type: ignore[arg-type]
    assert repaired.dtype == np.int64
    assert repaired.tolist() == [2**30, 0, 2**30]
    assert warnings == [negative_durations_warning(1)]
