"""The critical path of a step: the chain of causally linked work that bounds it.

Design notes: docs/views.md, "Module notes", `analyses/critical_path.py`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from irprof.analyses.cuda_sync import SyncDependencies, sync_dependencies
from irprof.analyses.table import Tabular, dataclass_rows, row_columns
from irprof.errors import UsageError
from irprof.event_dag.model import EDGE_NEST, EDGE_SEQUENCE, EventDag
from irprof.trace.model import EventKind, Trace
from irprof.trace.steps import top_level_windows

_NOT_WORK = (EventKind.STEP, EventKind.ENVELOPE, EventKind.COUNTER)
_LOCAL = (EDGE_NEST, EDGE_SEQUENCE)


@dataclass(frozen=True)
class PathEvent:
    """One event on the critical path."""

    node: int
    name: str
    track: str
    ts_ns: int
    dur_ns: int
    self_ns: int  # the work it adds to the path (its own time around children on the path)
    ops: tuple[str, ...]  # IR ops it was attributed to, `level: op` ("" when unknown)


@dataclass(frozen=True)
class CriticalPath(Tabular):
    """The heaviest chain of dependent work in one step; as a table: its events."""

    step: int  # index of the step window (-1: the whole trace, no markers)
    steps: int  # step windows found
    start_ns: int
    end_ns: int
    events: tuple[PathEvent, ...]
    links: tuple[tuple[int, int], ...]  # consecutive node pairs along the path
    sync_links: tuple[tuple[int, int], ...] = ()  # CUDA sync dependencies the path follows
    syncs_followed: bool = False  # whether CUDA sync dependencies were looked for
    sync_edges: int = 0  # CUDA sync dependencies between events of the step
    unresolved_syncs: int = 0  # synchronising calls in the step whose dependency is unknown
    unresolved_reasons: tuple[tuple[str, int], ...] = ()  # (reason, calls), most first

    @property
    def length_ns(self) -> int:
        """Work summed along the path (at most `span_ns`)."""
        return sum(event.self_ns for event in self.events)

    @property
    def span_ns(self) -> int:
        """The step's wall time."""
        return self.end_ns - self.start_ns

    @property
    def nodes(self) -> tuple[int, ...]:
        """DAG node numbers of the path, in order."""
        return tuple(event.node for event in self.events)

    def table_columns(self) -> tuple[str, ...]:
        """The fields of `PathEvent`."""
        return row_columns(PathEvent)

    def table_rows(self) -> list[tuple[Any, ...]]:
        """One tuple per event along the path."""
        return dataclass_rows(self.events, self.table_columns())

    def table_caption(self) -> str:
        """The step and how much of it the path covers."""
        text = f"step {self.step}: {self.length_ns:,} ns of work on a {self.span_ns:,} ns step"
        return f"{text}; {self.sync_summary()}" if self.syncs_followed else text

    def sync_summary(self) -> str:
        """How many CUDA sync dependencies the step has, the path follows, are unresolved."""
        text = (
            f"CUDA syncs: {self.sync_edges} dependencies in the step, {len(self.sync_links)} "
            f"on the path, {self.unresolved_syncs} calls unresolved"
        )
        reasons = "; ".join(f"{reason}: {count}" for reason, count in self.unresolved_reasons)
        return f"{text} ({reasons})" if reasons else text


def dag_step_windows(dag: EventDag) -> list[tuple[int, int]]:
    """(start, end) of each top-level step marker among the DAG's nodes, in time order."""
    nodes = np.nonzero(dag.kind == EventKind.STEP)[0]
    ends = dag.ts_ns[nodes] + dag.dur_ns[nodes]
    return top_level_windows(zip(dag.ts_ns[nodes].tolist(), ends.tolist(), strict=True))


_Edge = tuple[int, int, int, bool]  # (next point, weight, owner or -1, a CUDA sync dependency)


@dataclass
class _Graph:
    """Points 2n (start of node n) and 2n+1 (end), weighted edges, each owned by an event."""

    size: int
    edges: list[list[_Edge]]

    def add(self, src: int, dst: int, weight: int, owner: int, sync: bool = False) -> None:
        self.edges[src].append((dst, max(weight, 0), owner, sync))


def _delegations(
    dag: EventDag, keep: list[bool], flows: list[tuple[int, int]]
) -> tuple[dict[int, list[tuple[int, int]]], list[tuple[int, int]]]:
    """Work handed to another track: for each flow X -> Y, the innermost event A (X or an
    ancestor) still open when Y ends waited for Y. Returns A -> the intervals it waited for, and
    the join edges (Y, A)."""
    ends = (dag.ts_ns + dag.dur_ns).tolist()
    parents = dag.parent.tolist()
    waited: dict[int, list[tuple[int, int]]] = {}
    joins: list[tuple[int, int]] = []
    for src, dst in flows:
        if dag.track[src] == dag.track[dst]:
            continue
        holder = src
        while holder >= 0 and ends[holder] < ends[dst]:
            holder = parents[holder]
        if holder < 0 or not keep[holder]:
            continue
        joins.append((dst, holder))
        span = (int(dag.ts_ns[dst]), ends[dst])
        up = holder
        while up >= 0:  # every enclosing event waited through it as well
            waited.setdefault(up, []).append(span)
            up = parents[up]
    return waited, joins


def _own_time(start: int, end: int, waited: list[tuple[int, int]]) -> int:
    """Length of [start, end] less the parts spent waiting (intervals may overlap)."""
    total = max(end - start, 0)
    covered, reach = 0, start
    for low, high in sorted(waited):
        low, high = max(low, reach), min(high, end)
        if high > low:
            covered += high - low
            reach = high
    return max(total - covered, 0)


@dataclass(frozen=True)
class _Syncs:
    """CUDA sync dependencies between kept nodes, and the nodes that are sync records."""

    pairs: list[tuple[int, int]]
    shadows: set[int]  # device-side records of sync calls: no work, no flows, still on tracks


def _points_graph(dag: EventDag, keep: list[bool], syncs: _Syncs) -> _Graph:
    graph = _Graph(2 * len(dag), [[] for _ in range(2 * len(dag))])
    ts, ends = dag.ts_ns.tolist(), (dag.ts_ns + dag.dur_ns).tolist()
    parents = dag.parent.tolist()
    has_child = [False] * len(dag)
    following = [-1] * len(dag)
    edges = [
        (src, dst, kind)
        for src, dst, kind in zip(
            dag.edge_src.tolist(), dag.edge_dst.tolist(), dag.edge_kind.tolist(), strict=True
        )
        if keep[src] and keep[dst] and (kind in _LOCAL or not {src, dst} & syncs.shadows)
    ]
    waited, joins = _delegations(
        dag, keep, [(src, dst) for src, dst, kind in edges if kind not in _LOCAL]
    )
    for node in syncs.shadows:  # a sync record mirrors its call's blocking: never work
        waited.setdefault(node, []).append((ts[node], ends[node]))
    sync_joins: list[tuple[int, int]] = []
    for src, dst in syncs.pairs:
        if ends[src] <= ts[dst]:  # dst starts after src ends (a stream waiting on an event)
            graph.add(2 * src + 1, 2 * dst, 0, -1, sync=True)
        elif ends[src] <= ends[dst]:  # dst (a host sync call) blocks until src ends
            sync_joins.append((src, dst))
            waited.setdefault(dst, []).append((ts[dst], ends[src]))

    def own(node: int, start: int, end: int) -> int:
        return _own_time(start, end, waited.get(node, []))

    for src, dst, kind in edges:
        if kind == EDGE_NEST:
            if not has_child[src]:  # children come in start order: the first one
                graph.add(2 * src, 2 * dst, own(src, ts[src], ts[dst]), src)
            has_child[src] = True
        elif kind == EDGE_SEQUENCE:
            following[src] = dst
            if ts[dst] < ends[src]:  # overlapping siblings (async work): only start order
                graph.add(2 * src, 2 * dst, 0, -1)
                continue
            up = parents[src]
            inside = up >= 0 and keep[up]
            graph.add(2 * src + 1, 2 * dst, own(up, ends[src], ts[dst]) if inside else 0, up)
        else:  # a flow: a dependency, not work
            graph.add(2 * src + 1 if ends[src] <= ts[dst] else 2 * src, 2 * dst, 0, -1)
    for target, holder in joins:  # the waiting event goes on once the work it handed off ends
        graph.add(2 * target + 1, 2 * holder + 1, own(holder, ends[target], ends[holder]), holder)
    for src, call in sync_joins:  # the sync call returns once the op it waited for ends
        graph.add(2 * src + 1, 2 * call + 1, own(call, ends[src], ends[call]), call, sync=True)
    for node in range(len(dag)):
        if not keep[node]:
            continue
        if not has_child[node]:
            graph.add(2 * node, 2 * node + 1, own(node, ts[node], ends[node]), node)
        up = parents[node]
        if up >= 0 and keep[up] and following[node] < 0:
            graph.add(2 * node + 1, 2 * up + 1, own(up, ends[node], ends[up]), up)
    return graph


def _longest(graph: _Graph) -> tuple[list[int], list[_Edge]]:
    """Points of the heaviest path and the edge taken into each point after the first (Kahn
    order)."""
    indegree = [0] * graph.size
    for edges in graph.edges:
        for dst, _, _, _ in edges:
            indegree[dst] += 1
    ready = [point for point in range(graph.size) if indegree[point] == 0]
    best = [0] * graph.size
    came: list[tuple[int, _Edge]] = [(-1, (-1, 0, -1, False))] * graph.size  # (previous, edge)
    while ready:
        point = ready.pop()
        for edge in graph.edges[point]:
            dst, weight = edge[0], edge[1]
            if came[dst][0] < 0 or best[point] + weight > best[dst]:
                best[dst], came[dst] = best[point] + weight, (point, edge)
            indegree[dst] -= 1
            if indegree[dst] == 0:
                ready.append(dst)
    point = max(range(graph.size), key=best.__getitem__, default=-1)
    points: list[int] = []
    taken: list[_Edge] = []
    while point >= 0:
        points.append(point)
        previous, edge = came[point]
        if previous >= 0:
            taken.append(edge)
        point = previous
    return points[::-1], taken[::-1]


def _step_syncs(dag: EventDag, trace: Trace, keep: list[bool]) -> tuple[_Syncs, SyncDependencies]:
    """The CUDA sync dependencies of `trace` between kept nodes, as node pairs, with the nodes
    that are sync records; and all found (see `irprof.analyses.cuda_sync`)."""
    if len(dag) and int(dag.rows.max()) >= len(trace):
        raise UsageError("critical path: the trace given is not the one the DAG was built from")
    node_of_row = np.full(len(trace), -1, dtype=np.int64)
    node_of_row[dag.rows] = np.arange(len(dag))
    found = sync_dependencies(trace)
    shadows = {node for node in node_of_row[list(found.records)].tolist() if node >= 0}
    pairs = [
        (int(node_of_row[edge.src]), int(node_of_row[edge.dst]))
        for edge in found.edges
        if node_of_row[edge.src] >= 0 and node_of_row[edge.dst] >= 0
    ]
    kept = [(src, dst) for src, dst in pairs if keep[src] and keep[dst]]
    return _Syncs(kept, shadows), found


def critical_path(
    dag: EventDag,
    *,
    step: int | None = None,
    ops_by_event: Callable[[str, int], tuple[str, ...]] | None = None,
    trace: Trace | None = None,
) -> CriticalPath:
    """The critical path of step `step` (default: the longest step) of a causal DAG; given the
    `trace` the DAG was built from, it also follows the dependencies CUDA events and stream or
    device synchronisations create (`irprof.analyses.cuda_sync`). `ops_by_event(name, ts_ns)`
    names the IR ops of the event of that name starting then."""
    if dag.mode != "causal":
        raise UsageError("the critical path needs a causal DAG (--mode causal)")
    windows = dag_step_windows(dag)
    if windows:
        if step is None:
            step = max(range(len(windows)), key=lambda i: windows[i][1] - windows[i][0])
        if not 0 <= step < len(windows):
            raise UsageError(f"--step {step}: the trace has steps 0..{len(windows) - 1}")
        start, end = windows[step]
    else:
        if step not in (None, 0):
            raise UsageError(f"--step {step}: the trace has no step markers (one window)")
        step = -1
        start = int(dag.ts_ns.min()) if len(dag) else 0
        end = int((dag.ts_ns + dag.dur_ns).max()) if len(dag) else 0
    ends = dag.ts_ns + dag.dur_ns
    inside = (dag.ts_ns >= start) & (ends <= end) & ~np.isin(dag.kind, _NOT_WORK)
    keep = inside.tolist()
    syncs, counts = _Syncs([], set()), {}
    if trace is not None:
        syncs, found = _step_syncs(dag, trace, keep)
        counts = _sync_counts(trace, found, len(syncs.pairs), start, end)
    graph = _points_graph(dag, keep, syncs)
    points, taken = _longest(graph)
    work: dict[int, int] = {}
    sync_links: list[tuple[int, int]] = []
    for src, (dst, weight, owner, sync) in zip(points[:-1], taken, strict=True):
        if owner >= 0:
            work[owner] = work.get(owner, 0) + weight
        if sync:
            sync_links.append((src // 2, dst // 2))
    path = list(dict.fromkeys(point // 2 for point in points if inside[point // 2]))
    known = ops_by_event or (lambda name, ts_ns: ())
    events = tuple(
        PathEvent(
            node=node,
            name=dag.node_name(node),
            track=dag.track_labels[int(dag.track[node])],
            ts_ns=int(dag.ts_ns[node]),
            dur_ns=int(dag.dur_ns[node]),
            self_ns=work.get(node, 0),
            ops=known(dag.node_name(node), int(dag.ts_ns[node])),
        )
        for node in path
    )
    return CriticalPath(
        step=step,
        steps=len(windows),
        start_ns=start,
        end_ns=end,
        events=events,
        links=tuple(itertools.pairwise(path)),
        sync_links=tuple(sync_links),
        **counts,
    )


def _sync_counts(
    trace: Trace, found: SyncDependencies, edges: int, start: int, end: int
) -> dict[str, Any]:
    """The CriticalPath fields that count the step's CUDA sync dependencies (`edges` of them
    between events of the step; the unresolved calls inside [start, end])."""
    ends = trace.end_ns
    unresolved = [
        item.reason
        for item in found.unresolved
        if start <= int(trace.ts_ns[item.row]) and int(ends[item.row]) <= end
    ]
    reasons = sorted(Counter(unresolved).items(), key=lambda item: (-item[1], item[0]))
    return {
        "syncs_followed": True,
        "sync_edges": edges,
        "unresolved_syncs": len(unresolved),
        "unresolved_reasons": tuple(reasons),
    }
