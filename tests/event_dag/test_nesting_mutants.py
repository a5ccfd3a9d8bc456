"""Self time at its boundaries: exact integers past 2**53 and a zero floor, not one.

Written from the mutants of `event_dag/nesting.py` that the property tests let through: a float
accumulator (exact only up to 2**53 ns, about 104 days, but a trace's clock offsets reach it)
and a floor of 1 ns instead of 0 for an event its children cover entirely.
"""

from __future__ import annotations

import numpy as np

from irprof.event_dag.nesting import nesting_parents, self_time_ns

BIG = 2**53 + 1  # the first integer a float64 cannot hold


def test_self_time_stays_exact_and_integer_past_two_to_the_53() -> None:
    dur = np.asarray([BIG + 4, 3, 0], dtype=np.int64)
    parent = np.asarray([-1, 0, 0], dtype=np.int64)
    self_ns = self_time_ns(dur, parent)
    assert self_ns.dtype == np.int64
    assert self_ns.tolist() == [BIG + 4 - 3 - 0, 3, 0]


def test_an_event_covered_by_its_children_has_zero_self_time() -> None:
    # [0, 10) holds [0, 4) and [4, 10): nothing of it is left; an instant has no self time.
    track = np.zeros(4, dtype=np.int64)
    ts = np.asarray([0, 0, 4, 20], dtype=np.int64)
    dur = np.asarray([10, 4, 6, 0], dtype=np.int64)
    parent = nesting_parents(track, ts, dur)
    assert parent.tolist() == [-1, 0, 0, -1]
    assert self_time_ns(dur, parent).tolist() == [10 - 4 - 6, 4, 6, 0]


def test_broken_overlaps_clamp_at_zero() -> None:
    # Parent 0 is given children longer than itself (a broken trace): clamp, never negative.
    dur = np.asarray([5, 4, 4], dtype=np.int64)
    parent = np.asarray([-1, 0, 0], dtype=np.int64)
    assert self_time_ns(dur, parent).tolist() == [max(5 - 8, 0), 4, 4]


def test_parents_of_large_timestamps_are_exact() -> None:
    # Starts one nanosecond apart beyond 2**53: a float sweep would merge them.
    track = np.zeros(2, dtype=np.int64)
    ts = np.asarray([BIG - 1, BIG], dtype=np.int64)
    dur = np.asarray([1, 1], dtype=np.int64)  # [BIG-1, BIG) and [BIG, BIG+1) only touch
    parent = nesting_parents(track, ts, dur)
    assert parent.dtype == np.int64
    assert parent.tolist() == [-1, -1]
