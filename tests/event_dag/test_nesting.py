"""Nesting and levels on interval boundaries, against brute force written here.

Intervals live on a coarse integer grid so that equal starts, equal ends, touching and
zero-length intervals are common; the references enumerate candidates instead of sweeping.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from irprof.event_dag.model import build_event_dag
from irprof.event_dag.nesting import nesting_parents, self_time_ns
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

EVENTS = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 8), st.integers(0, 5)), min_size=1, max_size=10
)


def reference_parents(events: list[tuple[int, int, int]]) -> list[int]:
    """Each event's parent: among the events of its track ordered before it (start, then
    longest first, then row), the last one that encloses it (start <= its start, end >= its
    end)."""

    def key(row: int) -> tuple[int, int, int, int]:
        track, start, dur = events[row]
        return (track, start, -dur, row)

    parents = []
    for row, (track, start, dur) in enumerate(events):
        before = [
            other
            for other in range(len(events))
            if key(other) < key(row)
            and events[other][0] == track
            and events[other][1] <= start
            and events[other][1] + events[other][2] >= start + dur
        ]
        parents.append(max(before, key=key) if before else -1)
    return parents


@given(EVENTS)
def test_parents_are_the_innermost_enclosing_events(events: list[tuple[int, int, int]]) -> None:
    track = np.asarray([e[0] for e in events], dtype=np.int64)
    ts = np.asarray([e[1] for e in events], dtype=np.int64)
    dur = np.asarray([e[2] for e in events], dtype=np.int64)
    assert nesting_parents(track, ts, dur).tolist() == reference_parents(events)


def test_a_child_ending_with_its_parent_is_nested_and_not_counted_twice() -> None:
    track = np.zeros(3, dtype=np.int64)
    ts = np.asarray([0, 5, 10], dtype=np.int64)
    dur = np.asarray([10, 5, 5], dtype=np.int64)  # [0,10) holds [5,10); [10,15) only touches
    parent = nesting_parents(track, ts, dur)
    assert parent.tolist() == [-1, 0, -1]
    assert self_time_ns(dur, parent).tolist() == [5, 5, 5]


def trace_of(intervals: list[tuple[int, int]]) -> Trace:
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    for index, (start, dur) in enumerate(intervals):
        builder.add(start, dur, track, f"e{index}", EventKind.FRAMEWORK_OP)
    return builder.build()


def points(start: int, dur: int) -> set[int]:
    """The integer time points of [start, start + dur); an instant is its own point."""
    return set(range(start, start + dur)) if dur > 0 else {start}


def reference_levels(intervals: list[tuple[int, int]]) -> list[int]:
    """Greedy in start order: an interval joins the current level when it and every member
    share an integer time point."""
    order = sorted(range(len(intervals)), key=lambda i: (intervals[i][0], -intervals[i][1], i))
    levels = [0] * len(intervals)
    members: list[int] = []
    current = -1
    for index in order:
        group = [*members, index]
        if members and set.intersection(*(points(*intervals[i]) for i in group)):
            members = group
        else:
            current += 1
            members = [index]
        levels[index] = current
    return levels


def test_instants_at_one_time_inside_an_interval_share_its_level() -> None:
    dag = build_event_dag(trace_of([(0, 3), (1, 0), (1, 0), (2, 0)]), "levels")
    by_name = {dag.node_name(n): int(dag.level[n]) for n in range(len(dag))}
    assert by_name == {"e0": 0, "e1": 0, "e2": 0, "e3": 1}


def test_touching_intervals_are_separate_levels() -> None:
    dag = build_event_dag(trace_of([(0, 5), (5, 5)]), "levels")
    by_name = {dag.node_name(n): int(dag.level[n]) for n in range(len(dag))}
    assert by_name == {"e0": 0, "e1": 1}


@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 5)), min_size=1, max_size=10))
def test_levels_match_the_reference(intervals: list[tuple[int, int]]) -> None:
    dag = build_event_dag(trace_of(intervals), "levels")
    got = {dag.node_name(n): int(dag.level[n]) for n in range(len(dag))}
    expected = reference_levels(intervals)
    assert got == {f"e{i}": level for i, level in enumerate(expected)}
