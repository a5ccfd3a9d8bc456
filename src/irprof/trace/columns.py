"""Numpy helpers every reader needs on event columns: the trace's time order, dense ids."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def time_order(ts: I64, dur: I64) -> I64:
    """Row order by (start, longest first), ties in file order: `np.lexsort((-dur, ts))`.

    A stable argsort of the starts (nearly sorted in a trace, so it runs in close to one pass)
    with only the rows of tied starts re-sorted by duration: ~100x faster than the lexsort.
    """
    order = np.argsort(ts, kind="stable")
    same = ts[order[1:]] == ts[order[:-1]]
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=np.bool_)
    tied[1:] = same
    tied[:-1] |= same
    positions = np.nonzero(tied)[0]
    starts_group = np.ones(len(order), dtype=np.bool_)
    starts_group[1:] = ~same
    group = np.cumsum(starts_group)[positions]
    members = order[positions]
    order[positions] = members[np.lexsort((-dur[members], group))]
    return order


def dense_unique(keys: I64) -> tuple[I64, I64]:
    """`np.unique(keys, return_inverse=True)`, by a presence table when the keys are small."""
    if len(keys) and int(keys.min()) >= 0 and int(keys.max()) < 4 * len(keys) + 1024:
        present = np.zeros(int(keys.max()) + 1, dtype=np.bool_)
        present[keys] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return np.nonzero(present)[0].astype(np.int64), remap[keys]
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique.astype(np.int64), inverse.astype(np.int64)
