"""Pairing Chrome `B`/`E` duration events into slices, one stack per (pid, tid)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PairedSlices:
    """Slices made from B/E pairs: the B and E event rows and the duration."""

    begin_rows: I64
    end_rows: I64
    dur_ns: I64


def merge_args(begin: bytes, end: bytes) -> bytes:
    """The spec merges an E event's args into its B event's."""
    merged: Any = msgspec.json.decode(begin) if begin else {}
    extra = msgspec.json.decode(end)
    if isinstance(merged, dict) and isinstance(extra, dict):
        merged.update(extra)
    return msgspec.json.encode(merged)


def pair_begin_end(
    phase: npt.NDArray[np.int8],
    track: I64,
    ts_ns: I64,
    begin_code: int,
    end_code: int,
    warnings: list[str],
) -> PairedSlices:
    """Match each E to the latest open B on its track; unbalanced events go to `warnings`."""
    rows = np.nonzero((phase == begin_code) | (phase == end_code))[0]
    if len(rows) == 0:
        empty = np.zeros(0, np.int64)
        return PairedSlices(empty, empty, empty)
    # Per track by time; file order breaks ties so "E then B" at one instant closes first.
    order = np.lexsort((rows, ts_ns[rows], track[rows]))
    stacks: dict[int, list[int]] = {}
    begins: list[int] = []
    ends: list[int] = []
    unmatched_ends = 0
    for row in rows[order].tolist():
        stack = stacks.setdefault(int(track[row]), [])
        if phase[row] == begin_code:
            stack.append(row)
        elif stack:
            begins.append(stack.pop())
            ends.append(row)
        else:
            unmatched_ends += 1
    unclosed = sum(len(stack) for stack in stacks.values())
    if unmatched_ends:
        warnings.append(f"{unmatched_ends} 'E' event(s) without an open 'B' on their thread")
    if unclosed:
        warnings.append(f"{unclosed} 'B' event(s) never closed by an 'E' (dropped)")
    begin_rows = np.asarray(begins, dtype=np.int64)
    end_rows = np.asarray(ends, dtype=np.int64)
    return PairedSlices(begin_rows, end_rows, ts_ns[end_rows] - ts_ns[begin_rows])
