"""What a trace holds at a glance: counts, tracks, span, and the names that take the most time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irprof.dag.nesting import nesting_parents, self_time_ns
from irprof.trace.model import EventKind, Trace


@dataclass(frozen=True)
class NameTotals:
    """Time of every event sharing one name."""

    name: str
    kind: str  # kind label of the name's first event
    count: int
    total_ns: int
    self_ns: int  # total minus time in child events on the same track

    @property
    def mean_ns(self) -> int:
        """Average duration per event."""
        return self.total_ns // self.count if self.count else 0


@dataclass(frozen=True)
class TraceSummary:
    """Summary data of one trace; renderers turn it into tables."""

    source: str
    format: str
    events: int
    tracks: int
    flows: int
    span_start_ns: int
    span_end_ns: int
    events_by_kind: dict[str, int]
    top_by_total: tuple[NameTotals, ...]
    top_by_self: tuple[NameTotals, ...]
    warnings: tuple[str, ...]

    @property
    def span_ns(self) -> int:
        """Wall time from the first start to the last end."""
        return self.span_end_ns - self.span_start_ns


def summarize_trace(trace: Trace, top: int = 15) -> TraceSummary:
    """Counts, span and the `top` names by total and by self time (counters left out)."""
    timed = trace.kind != EventKind.COUNTER
    parent = nesting_parents(trace.track, trace.ts_ns, np.where(timed, trace.dur_ns, 0))
    self_ns = self_time_ns(np.where(timed, trace.dur_ns, 0), parent)
    names = len(trace.strings)
    count = np.bincount(trace.name[timed], minlength=names)
    total = np.zeros(names, dtype=np.int64)
    np.add.at(total, trace.name[timed], trace.dur_ns[timed])
    own = np.zeros(names, dtype=np.int64)
    np.add.at(own, trace.name[timed], self_ns[timed])
    first_row = np.full(names, -1, dtype=np.int64)
    first_row[trace.name[::-1]] = np.arange(len(trace) - 1, -1, -1)

    def totals(name_id: int) -> NameTotals:
        row = int(first_row[name_id])
        return NameTotals(
            name=trace.strings[name_id],
            kind=EventKind(int(trace.kind[row])).label,
            count=int(count[name_id]),
            total_ns=int(total[name_id]),
            self_ns=int(own[name_id]),
        )

    used = np.nonzero(count > 0)[0]
    by_total = used[np.lexsort((used, -total[used]))][:top]
    by_self = used[np.lexsort((used, -own[used]))][:top]
    kinds = np.bincount(trace.kind.astype(np.int64), minlength=len(EventKind))
    start, end = trace.span_ns()
    return TraceSummary(
        source=str(trace.metadata.get("source", "")),
        format=str(trace.metadata.get("format", "")),
        events=len(trace),
        tracks=len(np.unique(trace.track)),
        flows=len(trace.flows),
        span_start_ns=start,
        span_end_ns=end,
        events_by_kind={kind.label: int(kinds[kind]) for kind in EventKind if kinds[kind]},
        top_by_total=tuple(totals(int(name_id)) for name_id in by_total),
        top_by_self=tuple(totals(int(name_id)) for name_id in by_self),
        warnings=trace.warnings,
    )
