"""Multi-rank summary: one trace per rank of a distributed run, side by side, stragglers flagged.

Design notes: docs/views.md, "Module notes", `analyses/ranks.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from irprof.analyses.trace_summary import device_times
from irprof.errors import TraceFormatError, UsageError
from irprof.readers import read_trace
from irprof.trace.model import EventKind, Trace

RANK_FILE_PATTERNS = ("*.json.gz", "*.json")
DEFAULT_STRAGGLER_THRESHOLD = 0.1
_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")


@dataclass(frozen=True)
class RankTime:
    """One rank's step time and where its devices' time went."""

    rank: int
    source: str
    steps: int
    step_ns: int
    compute_ns: int
    communication_ns: int
    memory_ns: int
    idle_ns: int
    straggler: bool


@dataclass(frozen=True)
class RankTable:
    """Every rank of a run, in rank order, with the median step time stragglers are judged by."""

    ranks: tuple[RankTime, ...]
    median_step_ns: int
    threshold: float

    @property
    def stragglers(self) -> tuple[int, ...]:
        """Ranks flagged as stragglers."""
        return tuple(rank.rank for rank in self.ranks if rank.straggler)


def rank_trace_files(directory: Path) -> list[Path]:
    """The rank traces of a directory: every file of the first pattern that matches two or more."""
    for pattern in RANK_FILE_PATTERNS:
        found = sorted(path for path in directory.glob(pattern) if path.is_file())
        if len(found) >= 2:
            return found
    return []


def rank_of(trace: Trace, path: Path) -> int:
    """The rank from `distributedInfo`, else the last number of the file name."""
    return rank_from_metadata(trace.metadata, path)


def rank_from_metadata(metadata: dict[str, Any], path: Path, default: int | None = None) -> int:
    """`rank_of` from a trace's metadata (what a streamed conversion returns); `default` when
    neither the metadata nor the file name gives one (else an error)."""
    fields = metadata.get("trace_fields", {})
    info = fields.get("distributedInfo") if isinstance(fields, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    if isinstance(rank, int) and not isinstance(rank, bool):
        return rank
    found = _LAST_NUMBER.search(path.name)
    if found is not None:
        return int(found.group(1))
    if default is not None:
        return default
    raise TraceFormatError(
        path, "no rank: no distributedInfo.rank and no number in the file name; rename it"
    )


def rank_time(trace: Trace, rank: int, source: str) -> RankTime:
    """One rank's step time and device time split (not yet judged a straggler)."""
    steps = trace.rows_of_kind(EventKind.STEP)
    devices, _streams = device_times(trace)
    if len(steps):
        step_ns = int(trace.dur_ns[steps].mean())
    elif devices:
        step_ns = max(device.window_ns for device in devices)
    else:
        start, end = trace.span_ns()
        step_ns = end - start
    return RankTime(
        rank=rank,
        source=source,
        steps=len(steps),
        step_ns=step_ns,
        compute_ns=sum(device.compute_ns for device in devices),
        communication_ns=sum(device.communication_ns for device in devices),
        memory_ns=sum(device.memory_ns for device in devices),
        idle_ns=sum(device.idle_ns for device in devices),
        straggler=False,
    )


def check_threshold(threshold: float) -> None:
    """Refuse a negative straggler threshold."""
    if threshold < 0:
        raise UsageError(f"straggler threshold {threshold}: must be >= 0")


def rank_table(
    times: Iterable[RankTime], threshold: float = DEFAULT_STRAGGLER_THRESHOLD
) -> RankTable:
    """Ranks side by side, stragglers flagged; two entries claiming one rank is an error."""
    check_threshold(threshold)
    by_rank: dict[int, RankTime] = {}
    for time in times:
        if time.rank in by_rank:
            raise UsageError(
                f"{time.source}: rank {time.rank} is also the rank of "
                f"{by_rank[time.rank].source}; pass one trace per rank"
            )
        by_rank[time.rank] = time
    if not by_rank:
        raise UsageError("no rank traces given")
    median = int(np.median([rank.step_ns for rank in by_rank.values()]))
    limit = median * (1 + threshold)
    ranks = tuple(
        replace(by_rank[rank], straggler=by_rank[rank].step_ns > limit) for rank in sorted(by_rank)
    )
    return RankTable(ranks=ranks, median_step_ns=median, threshold=threshold)


def summarize_ranks(
    paths: Sequence[Path],
    threshold: float = DEFAULT_STRAGGLER_THRESHOLD,
    format: str | None = None,
) -> RankTable:
    """Read every rank trace, one after the other, and compare them (`rank_dataset` does it
    in parallel on Dask); two files claiming one rank is an error."""
    check_threshold(threshold)
    times: list[RankTime] = []
    seen: dict[int, str] = {}
    for path in paths:
        trace = read_trace(path, format)
        rank = rank_of(trace, path)
        if rank in seen:  # before reading the remaining files
            raise UsageError(
                f"{path}: rank {rank} is also the rank of {seen[rank]}; pass one trace per rank"
            )
        seen[rank] = str(path)
        times.append(rank_time(trace, rank, str(path)))
    return rank_table(times, threshold)
