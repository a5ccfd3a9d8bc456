"""Interval nesting per track: one sort and one stack sweep, O(n log n), never pairwise.

Events on one track are properly nested in a well-formed trace. Rows are visited in
(track, start, -duration) order with a stack of open ancestors: an event is the child of the
innermost open event that contains it, [start, end] within [start, end]. An event that only
partly overlaps the open one (broken or asynchronous traces) is not forced inside it; the open
one is closed and the event is treated as a sibling, so nesting never invents containment.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def track_order(track: npt.NDArray[np.integer], ts_ns: I64, dur_ns: I64) -> I64:
    """Row indices sorted by (track, start, longest first); stable for exact ties."""
    return np.lexsort((-dur_ns, ts_ns, track)).astype(np.int64)


def nesting_parents(track: npt.NDArray[np.integer], ts_ns: I64, dur_ns: I64) -> I64:
    """Parent row of each row on its own track (-1 for top-level events)."""
    order = track_order(track, ts_ns, dur_ns)
    order_list = order.tolist()
    tracks = track[order].tolist()
    ends = (ts_ns + dur_ns)[order].tolist()
    parents_sorted = [-1] * len(order_list)
    stack_pos: list[int] = []  # positions (in sorted order) of the open ancestors
    previous_track = None
    for position, current_track in enumerate(tracks):
        if current_track != previous_track:
            stack_pos.clear()
            previous_track = current_track
        end = ends[position]
        while stack_pos and ends[stack_pos[-1]] < end:
            stack_pos.pop()
        if stack_pos:
            parents_sorted[position] = order_list[stack_pos[-1]]
        stack_pos.append(position)
    parent = np.empty(len(order_list), dtype=np.int64)
    parent[order] = parents_sorted  # every row: `order` is a permutation of them
    return parent


def self_time_ns(dur_ns: I64, parent: I64) -> I64:
    """Duration minus the durations of direct children (clamped at 0 for broken overlaps)."""
    children = np.zeros(len(dur_ns), dtype=np.int64)
    nested = parent >= 0
    np.add.at(children, parent[nested], dur_ns[nested])
    self_ns: I64 = np.maximum(dur_ns - children, 0)
    return self_ns
