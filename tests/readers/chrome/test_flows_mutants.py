"""A flow point inside a nested slice binds to the innermost slice, not to its parent.

Written from the mutants of `readers/chrome/flows.py` the first tests let through: the walk
back for points after a finished child also ran for points their last-started slice already
encloses, moving them to the parent.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from irprof.readers.chrome.flows import FLOW_END, FLOW_START, FlowPoints, bind_flows


def i64(*values: int) -> npt.NDArray[np.int64]:
    return np.asarray(values, dtype=np.int64)


def test_a_point_inside_a_child_binds_to_the_child() -> None:
    # Track 0: parent row 0 [0, 10], child row 1 [2, 5], row 2 [20, 30]. Track 1: row 3 [0, 50].
    slice_rows, slice_track = i64(0, 1, 2, 3), i64(0, 0, 0, 1)
    slice_ts, slice_end = i64(0, 2, 20, 0), i64(10, 5, 30, 50)
    points = FlowPoints(
        track=i64(0, 0, 0, 0),
        ts_ns=i64(3, 15, 7, 40),
        phase=np.asarray([FLOW_START, FLOW_END, FLOW_START, FLOW_END], dtype=np.int8),
        # The first end binds to the next slice (row 2), the second to its enclosing one: none.
        bind_enclosing=np.asarray([True, False, True, True]),
        key=i64(0, 0, 1, 1),
        flow_id=i64(7, 7, 8, 8),
        order=i64(0, 1, 2, 3),
    )
    flows, unbound = bind_flows(points, slice_rows, slice_track, slice_ts, slice_end)
    # ts 3 is inside the child (row 1); ts 7 is after the child ended: the parent (row 0).
    assert flows.src.tolist() == [1]
    assert flows.dst.tolist() == [2]
    assert flows.flow_id.tolist() == [7]
    assert unbound == 1  # ts 40 on track 0 is in no slice
