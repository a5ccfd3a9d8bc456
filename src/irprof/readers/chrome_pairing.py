"""Pairing Chrome `B`/`E` duration events into slices, one stack per (pid, tid)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


class _HasArgs(Protocol):
    @property
    def args(self) -> msgspec.Raw: ...


@dataclass(frozen=True)
class PairedSlices:
    """Slices made from B/E pairs: the B event's row, its duration, args merged with E's."""

    begin_rows: I64
    dur_ns: I64
    merged_args: dict[int, bytes] = field(default_factory=dict)


def _merge_args(begin: bytes, end: bytes) -> bytes:
    """The spec merges an E event's args into its B event's."""
    merged: dict[str, Any] = msgspec.json.decode(begin) if begin else {}
    extra = msgspec.json.decode(end)
    if isinstance(merged, dict) and isinstance(extra, dict):
        merged.update(extra)
    return msgspec.json.encode(merged)


def pair_begin_end(
    events: Sequence[_HasArgs],
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
        return PairedSlices(np.zeros(0, np.int64), np.zeros(0, np.int64))
    # Per track by time; file order breaks ties so "E then B" at one instant closes first.
    order = np.lexsort((rows, ts_ns[rows], track[rows]))
    stacks: dict[int, list[int]] = {}
    begins: list[int] = []
    durations: list[int] = []
    merged: dict[int, bytes] = {}
    unmatched_ends = 0
    for row in rows[order].tolist():
        stack = stacks.setdefault(int(track[row]), [])
        if phase[row] == begin_code:
            stack.append(row)
            continue
        if not stack:
            unmatched_ends += 1
            continue
        begin = stack.pop()
        begins.append(begin)
        durations.append(int(ts_ns[row] - ts_ns[begin]))
        end_args = bytes(events[row].args)
        if end_args and end_args != b"{}":
            merged[begin] = _merge_args(bytes(events[begin].args), end_args)
    unclosed = sum(len(stack) for stack in stacks.values())
    if unmatched_ends:
        warnings.append(f"{unmatched_ends} 'E' event(s) without an open 'B' on their thread")
    if unclosed:
        warnings.append(f"{unclosed} 'B' event(s) never closed by an 'E' (dropped)")
    return PairedSlices(
        np.asarray(begins, dtype=np.int64), np.asarray(durations, dtype=np.int64), merged
    )
