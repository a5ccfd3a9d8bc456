"""Binding Chrome trace flow events (`s`/`t`/`f`, Kineto `ac2g`) to the slices they connect.

Chrome's rule: a flow start or step binds to the slice that encloses its timestamp on its thread;
a flow end binds to the enclosing slice when `bp == "e"`, otherwise to the next slice that starts
at or after its timestamp. "Enclosing" means the deepest slice with start <= ts <= end, which in
rows sorted by (ts, -dur) is the last slice starting at or before ts whose end is not before ts.
The common case (a flow point at the start of its slice) is found with one vectorised
`searchsorted` per track; only points that fall after a finished child walk back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from irprof.trace.model import Flows

I64 = npt.NDArray[np.int64]

FLOW_START, FLOW_STEP, FLOW_END = 1, 2, 3
# A point that is not inside any slice after this many steps back is reported unbound rather
# than searched further: pathological traces must not make reading quadratic.
MAX_WALK_BACK = 4096


@dataclass(frozen=True)
class FlowPoints:
    """Flow events of one trace: where they are and how they chain."""

    track: I64
    ts_ns: I64
    phase: npt.NDArray[np.int8]  # FLOW_START / FLOW_STEP / FLOW_END
    bind_enclosing: npt.NDArray[np.bool_]  # False only for `f` without bp == "e"
    key: I64  # interned (category, id): points sharing a key form one flow
    flow_id: I64  # the numeric id written in the trace (a hash when it was a string)
    order: I64  # position in the file, to order points with equal timestamps


def _bind_on_track(
    starts: I64, ends: I64, rows: I64, points_ts: I64, enclosing: npt.NDArray[np.bool_]
) -> I64:
    """Slice row each point binds to on one track (-1 when none)."""
    bound = np.full(len(points_ts), -1, dtype=np.int64)
    if len(starts) == 0:
        return bound
    last_started = np.searchsorted(starts, points_ts, side="right") - 1
    hit = enclosing & (last_started >= 0)
    candidates = np.clip(last_started, 0, None)
    direct = hit & (ends[candidates] >= points_ts)
    bound[direct] = rows[candidates[direct]]
    for point in np.nonzero(hit & ~direct)[0].tolist():
        ts = int(points_ts[point])
        index = int(last_started[point]) - 1
        stop = max(-1, index - MAX_WALK_BACK)
        while index > stop:
            if ends[index] >= ts:
                bound[point] = rows[index]
                break
            index -= 1
    following = ~enclosing
    if following.any():
        next_started = np.searchsorted(starts, points_ts[following], side="left")
        inside = next_started < len(starts)
        targets = np.full(len(next_started), -1, dtype=np.int64)
        targets[inside] = rows[next_started[inside]]
        bound[following] = targets
    return bound


def bind_flows(
    points: FlowPoints, slice_rows: I64, slice_track: I64, slice_ts: I64, slice_end: I64
) -> tuple[Flows, int]:
    """Flow links between slice rows, and how many flow points found no slice to bind to.

    `slice_*` describe the slices (complete events) in row order, which is sorted by start.
    """
    bound = np.full(len(points.ts_ns), -1, dtype=np.int64)
    for track in np.unique(points.track).tolist():
        on_track = slice_track == track
        mine = np.nonzero(points.track == track)[0]
        bound[mine] = _bind_on_track(
            slice_ts[on_track],
            slice_end[on_track],
            slice_rows[on_track],
            points.ts_ns[mine],
            points.bind_enclosing[mine],
        )
    return link_flows(points, bound)


def link_flows(points: FlowPoints, bound: I64) -> tuple[Flows, int]:
    """Flow links from the slice row each point bound to (-1: none), and how many found none."""
    # Chrome orders a flow's points by time; file order breaks ties (s before f at one instant).
    # Unbound points are skipped; a flow end closes its chain, so a later point with the same
    # key starts a new one.
    bound_points = np.nonzero(bound >= 0)[0]
    order = bound_points[
        np.lexsort(
            (
                points.order[bound_points],
                points.ts_ns[bound_points],
                points.key[bound_points],
            )
        )
    ]
    previous, following = order[:-1], order[1:]
    linked = (
        (points.key[previous] == points.key[following])
        & (points.phase[previous] != FLOW_END)
        & (bound[previous] != bound[following])
    )
    src = bound[previous[linked]]
    dst = bound[following[linked]]
    ids = points.flow_id[previous[linked]]
    flows = Flows(src.astype(np.int32), dst.astype(np.int32), ids.astype(np.int64))
    return flows, int(np.count_nonzero(bound < 0))
