"""Event DAG nodes, levels and edges against brute force, filters at their boundaries.

Written from the mutants of `event_dag/model.py` the first tests let through. Events on a
coarse grid (equal starts, touching intervals and instants are common) with flows between them
are built into a DAG in both modes, and the test recounts what it must hold: the node order,
the overlap levels (maximal runs in start order whose events share an integer time point), all
pairs between adjacent levels, the nesting, sequence and flow edges of the causal mode (one per
pair, the first kind winning), depths, adjacency lists, the filters and the errors' texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.errors import UsageError
from irprof.event_dag.model import (
    EDGE_FLOW,
    EDGE_LEVEL,
    EDGE_NEST,
    EDGE_SEQUENCE,
    DagFilter,
    EventDag,
    build_event_dag,
)
from irprof.event_dag.nesting import nesting_parents
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

# (pid, tid, process, thread): labels "p/0", "p/1", "q/1"
TRACKS = [(1, 0, "p", "0"), (1, 1, "p", "1"), (2, 1, "q", "1")]


@dataclass(frozen=True)
class Event:
    track: int
    start: int
    dur: int
    kind: EventKind

    @property
    def end(self) -> int:
        return self.start + self.dur


EVENTS = st.lists(
    st.builds(
        Event,
        st.integers(0, len(TRACKS) - 1),
        st.integers(0, 8),
        st.integers(0, 4),
        st.sampled_from([EventKind.OTHER, EventKind.OTHER, EventKind.KERNEL, EventKind.COUNTER]),
    ),
    max_size=10,
)
FLOWS = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=6)
FILTERS = st.builds(
    DagFilter,
    st.integers(0, 3),
    st.sampled_from([None, "/1$", "^p/"]),
    st.sampled_from([None, "e1", "^e[0-4]$"]),
)


def build(events: list[Event], flows: list[tuple[int, int]]) -> Trace:
    """Event i is named `e<i>`; flows link events by their position in `events`."""
    builder = TraceBuilder("dag.json")
    builder.metadata["source"] = "dag.json"
    for pid, tid, process, thread in TRACKS:
        builder.track(pid, tid, process, thread)
    rows = [builder.add(e.start, e.dur, e.track, f"e{i}", e.kind) for i, e in enumerate(events)]
    for number, (src, dst) in enumerate(flows):
        if src < len(rows) and dst < len(rows):
            builder.flow(rows[src], rows[dst], number)
    return builder.build()


def selected(events: list[Event], dag_filter: DagFilter) -> list[int]:
    """Positions of the events that become nodes, in node order (start, longest first, added)."""
    label = {i: f"{process}/{thread}" for i, (_, _, process, thread) in enumerate(TRACKS)}
    kept = [
        i
        for i, event in enumerate(events)
        if event.kind != EventKind.COUNTER
        and event.dur >= dag_filter.min_dur_ns
        and (
            dag_filter.track_regex is None or re.search(dag_filter.track_regex, label[event.track])
        )
        and (dag_filter.name_regex is None or re.search(dag_filter.name_regex, f"e{i}"))
    ]
    return sorted(kept, key=lambda i: (events[i].start, -events[i].dur, i))


def points(event: Event) -> set[int]:
    return set(range(event.start, event.end)) if event.dur else {event.start}


def levels_by_points(nodes: list[Event]) -> list[int]:
    """Greedy in node order: a node joins the current level while all share a time point."""
    levels: list[int] = []
    common: set[int] = set()
    for event in nodes:
        if levels and common & points(event):
            common &= points(event)
            levels.append(levels[-1])
        else:
            common = points(event)
            levels.append(levels[-1] + 1 if levels else 0)
    return levels


def node_names(dag: EventDag) -> list[str]:
    return [dag.node_name(node) for node in range(len(dag))]


def edges(dag: EventDag) -> list[tuple[int, int, int]]:
    return list(
        zip(dag.edge_src.tolist(), dag.edge_dst.tolist(), dag.edge_kind.tolist(), strict=True)
    )


@settings(max_examples=200, deadline=None)
@given(EVENTS, FILTERS)
def test_levels_mode_matches_brute_force(events: list[Event], dag_filter: DagFilter) -> None:
    dag = build_event_dag(build(events, []), "levels", dag_filter)
    order = selected(events, dag_filter)
    assert node_names(dag) == [f"e{i}" for i in order]
    nodes = [events[i] for i in order]
    assert dag.ts_ns.tolist() == [e.start for e in nodes]
    assert dag.dur_ns.tolist() == [e.dur for e in nodes]
    assert dag.track.tolist() == [e.track for e in nodes]
    assert dag.kind.tolist() == [int(e.kind) for e in nodes]
    level = levels_by_points(nodes)
    assert dag.level.tolist() == level
    assert edges(dag) == [
        (i, j, EDGE_LEVEL)
        for i in range(len(nodes))
        for j in range(len(nodes))
        if level[j] == level[i] + 1
    ]
    assert (dag.mode, dag.source, dag.notes) == ("levels", "dag.json", ())
    assert dag.track_labels == ("p/0", "p/1", "q/1")
    assert dag.edge_kind.dtype == np.int8


@settings(max_examples=200, deadline=None)
@given(EVENTS, FLOWS, FILTERS)
def test_causal_mode_matches_brute_force(
    events: list[Event], flows: list[tuple[int, int]], dag_filter: DagFilter
) -> None:
    dag = build_event_dag(build(events, flows), "causal", dag_filter)
    order = selected(events, dag_filter)
    node_of = {event: node for node, event in enumerate(order)}
    nodes = [events[i] for i in order]
    assert node_names(dag) == [f"e{i}" for i in order]
    ts = np.asarray([e.start for e in nodes], dtype=np.int64)
    dur = np.asarray([e.dur for e in nodes], dtype=np.int64)
    track = np.asarray([e.track for e in nodes], dtype=np.int64)
    parent = nesting_parents(track, ts, dur).tolist()
    assert dag.parent.tolist() == parent
    depth = []
    for node in range(len(nodes)):
        up, steps = parent[node], 0
        while up >= 0:
            up, steps = parent[up], steps + 1
        depth.append(steps)
    assert dag.level.tolist() == depth

    nest = [(parent[node], node, EDGE_NEST) for node in range(len(nodes)) if parent[node] >= 0]
    sequence = []
    groups: dict[tuple[int, int], list[int]] = {}
    for node in sorted(range(len(nodes)), key=lambda n: (nodes[n].start, -nodes[n].dur, n)):
        groups.setdefault((nodes[node].track, parent[node]), []).append(node)
    for key in sorted(groups):
        members = groups[key]
        sequence += [(a, b, EDGE_SEQUENCE) for a, b in pairwise(members)]
    linked = [
        (node_of[src], node_of[dst])
        for src, dst in flows
        if src < len(events) and dst < len(events) and src in node_of and dst in node_of
    ]
    linked = [(src, dst) for src, dst in linked if src != dst]
    flow = [(src, dst, EDGE_FLOW) for src, dst in linked if src < dst]
    backward = sum(1 for src, dst in linked if src > dst)
    expected: list[tuple[int, int, int]] = []
    for edge in nest + sequence + flow:
        if all(edge[:2] != kept[:2] for kept in expected):
            expected.append(edge)
    assert sorted(edges(dag), key=expected.index) == edges(dag)  # the first kind's order kept
    assert sorted(edges(dag)) == sorted(expected)
    assert dag.notes == (
        (f"{backward} flow link(s) point backwards in time; left out",) if backward else ()
    )
    assert dag.edge_count == len(expected)
    assert dag.successors() == [
        sorted(dst for src, dst, _ in expected if src == node) for node in range(len(nodes))
    ]


def test_nest_wins_over_sequence_and_flow_for_the_same_pair() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1)
    outer = builder.add(0, 10, track, "outer")
    inner = builder.add(2, 3, track, "inner")
    later = builder.add(6, 2, track, "later")
    builder.flow(outer, inner, 1)  # same pair as a nesting edge
    builder.flow(inner, later, 2)  # same pair as a sequence edge
    dag = build_event_dag(builder.build())
    assert node_names(dag) == ["outer", "inner", "later"]
    assert edges(dag) == [(0, 1, EDGE_NEST), (0, 2, EDGE_NEST), (1, 2, EDGE_SEQUENCE)]
    assert dag.notes == ()


def test_level_edges_at_the_limit_are_allowed() -> None:
    builder = TraceBuilder()
    for tid in range(3):
        builder.add(0, 5, builder.track(1, tid), "a")
        builder.add(5, 5, builder.track(1, tid), "b")  # touches: the next level
    trace = builder.build()
    assert build_event_dag(trace, "levels", max_level_edges=9).edge_count == 9
    with pytest.raises(UsageError) as caught:
        build_event_dag(trace, "levels", max_level_edges=8)
    assert str(caught.value) == (
        "levels mode would create 9 edges (all pairs between adjacent levels, limit 8); "
        "narrow the events with --min-dur-ns/--track/--name or use --mode causal"
    )


def test_an_empty_selection_gives_an_empty_dag_in_both_modes() -> None:
    builder = TraceBuilder()
    builder.add(0, 5, builder.track(1, 1), "a")
    trace = builder.build()
    for mode in ("levels", "causal"):
        dag = build_event_dag(trace, mode, DagFilter(min_dur_ns=6))
        assert (len(dag), dag.edge_count, dag.successors()) == (0, 0, [])
        assert dag.level.tolist() == []
    single = build_event_dag(trace, "levels")
    assert (single.level.tolist(), single.edge_count) == ([0], 0)
    empty = build_event_dag(TraceBuilder().build(), "levels")
    assert len(empty) == 0


@pytest.mark.parametrize("mode", ["levels", "causal"])
@pytest.mark.parametrize("events", [0, 1, 3])
def test_every_column_has_its_dtype_with_any_number_of_nodes(mode: str, events: int) -> None:
    """No node (an empty list of Python ints is float64 to numpy), one, and three nested
    ones with a sibling: ids and times int64, edge kinds int8, whatever the mode."""
    builder = TraceBuilder()
    track = builder.track(1, 1)
    for index, (start, dur) in enumerate([(0, 10), (1, 4), (5, 3)][:events]):
        builder.add(start, dur, track, f"e{index}")
    dag = build_event_dag(builder.build(), mode)
    assert len(dag) == events
    int64 = [dag.level, dag.parent, dag.edge_src, dag.edge_dst, dag.ts_ns, dag.dur_ns, dag.rows]
    assert [column.dtype for column in int64] == [np.dtype(np.int64)] * len(int64)
    assert dag.edge_kind.dtype == np.int8
    # Three: e0 holds e1 and e2, which follow each other (causal: 2 nests and 1 sequence);
    # e0 and e1 share a point, e2 starts where e1 ends (levels: 2 pairs to the next level).
    assert dag.edge_count == (0 if events < 2 else {"levels": 2, "causal": 3}[mode])


def test_errors_name_the_option_and_the_choices() -> None:
    trace = TraceBuilder().build()
    with pytest.raises(UsageError) as caught:
        build_event_dag(trace, "level")
    assert str(caught.value) == "--mode 'level': expected one of causal|levels"
    with pytest.raises(UsageError) as caught:
        DagFilter(track_regex="[").select(trace)
    assert str(caught.value).startswith("--track '[' is not a valid regular expression: ")
    with pytest.raises(UsageError) as caught:
        DagFilter(name_regex="(").select(trace)
    assert str(caught.value).startswith("--name '(' is not a valid regular expression: ")


def test_filters_on_a_trace_without_tracks_or_names_select_nothing() -> None:
    trace = TraceBuilder().build()
    assert DagFilter(track_regex=".").select(trace).tolist() == []
    assert DagFilter(name_regex=".").select(trace).tolist() == []


def test_flows_from_and_into_the_first_node() -> None:
    builder = TraceBuilder()
    cpu, gpu = builder.track(1, 1), builder.track(2, 1)
    first = builder.add(0, 5, cpu, "first")
    kernel = builder.add(10, 5, gpu, "kernel")
    late = builder.add(20, 5, gpu, "late")
    builder.flow(first, kernel, 1)  # forward, from node 0
    builder.flow(late, first, 2)  # backward, into node 0
    builder.flow(kernel, kernel, 3)  # to itself: neither
    dag = build_event_dag(builder.build())
    assert node_names(dag) == ["first", "kernel", "late"]
    assert edges(dag) == [(1, 2, EDGE_SEQUENCE), (0, 1, EDGE_FLOW)]
    assert dag.notes == ("1 flow link(s) point backwards in time; left out",)


def test_depths_are_integers() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1)
    builder.add(0, 10, track, "outer")
    builder.add(1, 5, track, "inner")
    builder.add(2, 1, track, "leaf")
    dag = build_event_dag(builder.build())
    assert dag.level.dtype == np.int64
    assert dag.level.tolist() == [0, 1, 2]
    assert dag.edge_src.dtype == dag.edge_dst.dtype == np.int64
    assert dag.name.dtype == dag.track.dtype == dag.parent.dtype == np.int64
    assert dag.source == ""  # a trace without a source in its metadata


def test_the_edge_limit_counts_pairs_of_every_adjacent_level() -> None:
    builder = TraceBuilder()
    for level, width in enumerate((1, 2, 3)):  # 1*2 + 2*3 = 8 edges
        for tid in range(width):
            builder.add(10 * level, 5, builder.track(1, tid), f"l{level}")
    trace = builder.build()
    assert build_event_dag(trace, "levels", max_level_edges=8).edge_count == 8
    with pytest.raises(UsageError, match=r"would create 8 edges .* limit 7\)"):
        build_event_dag(trace, "levels", max_level_edges=7)
    single = TraceBuilder()
    single.add(0, 5, single.track(1, 1), "alone")
    assert build_event_dag(single.build(), "levels", max_level_edges=0).edge_count == 0
    assert build_event_dag(TraceBuilder().build(), "levels", max_level_edges=0).edge_count == 0


def test_networkx_graph_of_the_dag() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1)
    builder.add(0, 10, track, "outer")
    builder.add(1, 5, track, "inner")
    builder.add(20, 1, track, "next")
    graph = build_event_dag(builder.build()).to_networkx()
    assert sorted(graph.edges()) == [(0, 1), (0, 2)]
    assert graph.number_of_nodes() == 3
