"""Trace column helpers agree with the numpy calls they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from irprof.trace.columns import dense_unique, time_order

small_ints = st.lists(st.integers(min_value=0, max_value=6), max_size=60)


@given(small_ints, st.data())
def test_time_order_is_lexsort_by_start_then_longest_first(
    starts: list[int], data: st.DataObject
) -> None:
    # Few distinct values: many tied starts and tied durations, where the order is subtle.
    durations = data.draw(st.lists(st.integers(0, 3), min_size=len(starts), max_size=len(starts)))
    ts, dur = np.array(starts, dtype=np.int64), np.array(durations, dtype=np.int64)
    assert time_order(ts, dur).tolist() == np.lexsort((-dur, ts)).tolist()


@given(st.lists(st.integers(min_value=0, max_value=2**40), max_size=40), small_ints)
def test_dense_unique_is_numpy_unique(wide: list[int], narrow: list[int]) -> None:
    for values in (wide, narrow):
        keys = np.array(values, dtype=np.int64)
        unique, inverse = dense_unique(keys)
        expected_unique, expected_inverse = np.unique(keys, return_inverse=True)
        assert unique.tolist() == expected_unique.tolist()
        assert inverse.tolist() == expected_inverse.reshape(-1).tolist()


def test_time_order_example_ties_longest_first_then_file_order() -> None:
    """Starts ascending; at one start the longest first; equal start and length keep file order."""
    ts = np.array([5, 1, 5, 1, 5, 3], dtype=np.int64)
    dur = np.array([1, 2, 3, 2, 3, 9], dtype=np.int64)
    assert time_order(ts, dur).tolist() == [1, 3, 5, 2, 4, 0]


def test_dense_unique_of_negative_empty_and_wide_keys_is_exact_int64() -> None:
    """Negative keys, no keys and keys far beyond the row count give numpy's answer, as int64."""
    cases = {
        (-3, 5, -3, 0): ([-3, 0, 5], [0, 2, 0, 1]),
        (): ([], []),
        (2**40, 7, 2**40): ([7, 2**40], [1, 0, 1]),
        (4, 0, 4, 2): ([0, 2, 4], [2, 0, 2, 1]),
    }
    for keys, (expected_unique, expected_inverse) in cases.items():
        unique, inverse = dense_unique(np.array(keys, dtype=np.int64))
        assert unique.tolist() == expected_unique
        assert inverse.tolist() == expected_inverse
        assert unique.dtype == np.int64 and inverse.dtype == np.int64
