"""Busy time: the union of intervals, against brute force over integer time points."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from irprof.analyses.trace_summary import covered_ns

# A coarse grid: equal starts, equal ends, touching and contained intervals are common.
INTERVALS = st.lists(
    st.tuples(st.integers(0, 12), st.integers(0, 6)).map(lambda s: (s[0], s[0] + s[1])),
    max_size=12,
)


def union_by_points(intervals: list[tuple[int, int]]) -> int:
    """Count the integer points t with start <= t < end for some interval."""
    return len({t for start, end in intervals for t in range(start, end)})


@given(INTERVALS)
def test_covered_time_is_the_union_of_the_intervals(intervals: list[tuple[int, int]]) -> None:
    starts = np.asarray([s for s, _ in intervals], dtype=np.int64)
    ends = np.asarray([e for _, e in intervals], dtype=np.int64)
    assert covered_ns(starts, ends) == union_by_points(intervals)


def test_a_short_interval_inside_a_long_one_adds_nothing_after_it() -> None:
    # [0,10) holds [2,4); [5,8) is inside [0,10) too, although it starts after [2,4) ended.
    starts = np.asarray([0, 2, 5], dtype=np.int64)
    ends = np.asarray([10, 4, 8], dtype=np.int64)
    assert covered_ns(starts, ends) == 10
