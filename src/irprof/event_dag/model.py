"""`EventDag`: the trace as a directed acyclic graph of events, built by sweeps, never pairwise.

Design notes: docs/traces.md, "Module notes", `event_dag/model.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from irprof.errors import UsageError
from irprof.event_dag.nesting import nesting_parents
from irprof.trace.model import EventKind, Trace

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]

DAG_MODES = ("causal", "levels")
EDGE_NEST, EDGE_SEQUENCE, EDGE_FLOW, EDGE_LEVEL = 0, 1, 2, 3
EDGE_KIND_LABELS = ("nest", "sequence", "flow", "level")
DEFAULT_MAX_LEVEL_EDGES = 2_000_000


@dataclass(frozen=True)
class DagFilter:
    """Which events become nodes; counters never do (they are samples, not work)."""

    min_dur_ns: int = 0
    track_regex: str | None = None  # searched in the track label "process/thread"
    name_regex: str | None = None

    def select(self, trace: Trace) -> I64:
        """Trace rows that pass the filter."""
        keep = (trace.kind != EventKind.COUNTER) & (trace.dur_ns >= self.min_dur_ns)
        if self.track_regex is not None:
            pattern = _compile(self.track_regex, "--track")
            labels = [trace.tracks.label(row) for row in range(len(trace.tracks))]
            track_ok = np.array([bool(pattern.search(label)) for label in labels], dtype=bool)
            keep &= track_ok[trace.track] if len(track_ok) else False
        if self.name_regex is not None:
            pattern = _compile(self.name_regex, "--name")
            name_ok = np.array([bool(pattern.search(text)) for text in trace.strings], dtype=bool)
            keep &= name_ok[trace.name] if len(name_ok) else False
        return np.nonzero(keep)[0].astype(np.int64)


def _compile(pattern: str, option: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{option} {pattern!r} is not a valid regular expression: {exc}") from exc


@dataclass(frozen=True, eq=False)
class EventDag:
    """Nodes (events) as columns plus edges as two index arrays."""

    mode: str
    rows: I64  # trace row of each node
    ts_ns: I64
    dur_ns: I64
    track: I64
    name: I64  # index into `strings`
    kind: I8
    level: I64
    parent: I64  # node index of the enclosing event on the same track, -1 for none
    edge_src: I64
    edge_dst: I64
    edge_kind: I8
    strings: tuple[str, ...]
    track_labels: tuple[str, ...]
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def edge_count(self) -> int:
        """Number of edges."""
        return len(self.edge_src)

    def node_name(self, node: int) -> str:
        """Event name of one node."""
        return self.strings[int(self.name[node])]

    def to_networkx(self) -> Any:
        """A `networkx.DiGraph` of this DAG (see `irprof.event_dag.export.dag_to_networkx`)."""
        from irprof.event_dag.export import dag_to_networkx

        return dag_to_networkx(self)

    def successors(self) -> list[list[int]]:
        """Adjacency lists (`adj` in `dag.json`), successors in ascending order."""
        order = np.lexsort((self.edge_dst, self.edge_src))
        src, dst = self.edge_src[order], self.edge_dst[order]
        bounds = np.searchsorted(src, np.arange(len(self) + 1))
        targets = dst.tolist()
        return [targets[bounds[i] : bounds[i + 1]] for i in range(len(self))]


def _node_order(trace: Trace, rows: I64) -> I64:
    """Selected rows in (start, longest first, row) order: the node numbering."""
    return rows[np.lexsort((rows, -trace.dur_ns[rows], trace.ts_ns[rows]))]


def _depth(parent: I64) -> I64:
    """Nesting depth from parent pointers (parents always precede children in node order)."""
    parent_list = parent.tolist()
    depth_list = [0] * len(parent_list)
    for node, up in enumerate(parent_list):
        if up >= 0:
            depth_list[node] = depth_list[up] + 1
    return np.asarray(depth_list, dtype=np.int64)


def _sequence_edges(track: I64, parent: I64, ts: I64, dur: I64) -> tuple[I64, I64]:
    """Consecutive siblings (same track, same parent) in start order."""
    order = np.lexsort((np.arange(len(ts)), -dur, ts, parent, track))
    same = (track[order][1:] == track[order][:-1]) & (parent[order][1:] == parent[order][:-1])
    return order[:-1][same], order[1:][same]


def _flow_edges(trace: Trace, node_of_row: I64) -> tuple[I64, I64, int]:
    """Trace flow links between selected events, forward in node order; backward ones counted."""
    src = node_of_row[trace.flows.src.astype(np.int64)]
    dst = node_of_row[trace.flows.dst.astype(np.int64)]
    both = (src >= 0) & (dst >= 0) & (src != dst)
    forward = both & (src < dst)
    return src[forward], dst[forward], int(np.count_nonzero(both & ~forward))


def _levels(ts: I64, end: I64) -> I64:
    """Overlap levels: maximal runs, in start order, of intervals that share a time point; an
    interval is [start, end), an instant (end == start) the point `start`."""
    levels: list[int] = []
    current = -1
    min_end: int | None = None  # the earliest end among the level's intervals with a duration
    instant: int | None = None  # the point of the level's instants (they must all be equal)
    for start, stop in zip(ts.tolist(), end.tolist(), strict=True):
        joins = (
            current >= 0
            and (min_end is None or start < min_end)
            and (instant is None or instant == start)
        )
        if not joins:
            current, min_end, instant = current + 1, None, None
        if stop > start:
            min_end = stop if min_end is None else min(min_end, stop)
        else:
            instant = start
        levels.append(current)
    return np.asarray(levels, dtype=np.int64)


def _level_edges(level: I64, max_edges: int) -> tuple[I64, I64]:
    """All pairs between each level and the next (the levels construction's definition), capped."""
    counts = np.bincount(level) if len(level) else np.zeros(0, np.int64)
    total = int(np.sum(counts[:-1] * counts[1:])) if len(counts) > 1 else 0
    if total > max_edges:
        raise UsageError(
            f"levels mode would create {total:,} edges (all pairs between adjacent levels, "
            f"limit {max_edges:,}); narrow the events with --min-dur-ns/--track/--name "
            "or use --mode causal"
        )
    starts = np.concatenate([[0], np.cumsum(counts)])
    src_parts, dst_parts = [], []
    for current in range(len(counts) - 1):
        here = np.arange(starts[current], starts[current + 1])
        there = np.arange(starts[current + 1], starts[current + 2])
        src_parts.append(np.repeat(here, len(there)))
        dst_parts.append(np.tile(there, len(here)))
    if not src_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src_parts), np.concatenate(dst_parts)


def build_event_dag(
    trace: Trace,
    mode: str = "causal",
    event_filter: DagFilter | None = None,
    max_level_edges: int = DEFAULT_MAX_LEVEL_EDGES,
) -> EventDag:
    """The event DAG of `trace` in `mode` ("causal" or "levels") over the filtered events."""
    if mode not in DAG_MODES:
        raise UsageError(f"--mode {mode!r}: expected one of {'|'.join(DAG_MODES)}")
    selected = (event_filter or DagFilter()).select(trace)
    rows = _node_order(trace, selected)
    ts, dur = trace.ts_ns[rows], trace.dur_ns[rows]
    track = trace.track[rows].astype(np.int64)
    parent = nesting_parents(track, ts, dur)
    notes: list[str] = []
    if mode == "levels":
        level = _levels(ts, ts + dur)
        src, dst = _level_edges(level, max_level_edges)
        kinds = np.full(len(src), EDGE_LEVEL, dtype=np.int8)
    else:
        level = _depth(parent)
        nested = np.nonzero(parent >= 0)[0].astype(np.int64)
        seq_src, seq_dst = _sequence_edges(track, parent, ts, dur)
        node_of_row = np.full(len(trace) + 1, -1, dtype=np.int64)
        node_of_row[rows] = np.arange(len(rows))
        flow_src, flow_dst, backward = _flow_edges(trace, node_of_row)
        if backward:
            notes.append(f"{backward} flow link(s) point backwards in time; left out")
        src = np.concatenate([parent[nested], seq_src, flow_src])
        dst = np.concatenate([nested, seq_dst, flow_dst])
        kinds = np.concatenate(
            [
                np.full(len(nested), EDGE_NEST, np.int8),
                np.full(len(seq_src), EDGE_SEQUENCE, np.int8),
                np.full(len(flow_src), EDGE_FLOW, np.int8),
            ]
        )
        # One edge per node pair; the first kind listed (nest, then sequence, then flow) wins.
        pair = src * max(len(rows), 1) + dst
        _, first = np.unique(pair, return_index=True)
        first.sort()
        src, dst, kinds = src[first], dst[first], kinds[first]
    return EventDag(
        mode=mode,
        rows=rows,
        ts_ns=ts,
        dur_ns=dur,
        track=track,
        name=trace.name[rows].astype(np.int64),
        kind=trace.kind[rows],
        level=level,
        parent=parent,
        edge_src=src,
        edge_dst=dst,
        edge_kind=kinds,
        strings=trace.strings,
        track_labels=tuple(trace.tracks.label(row) for row in range(len(trace.tracks))),
        source=str(trace.metadata.get("source", "")),
        notes=tuple(notes),
    )
