"""The critical path on small traces built on the boundaries its mutants moved: hand-offs to
other tracks (which event waited, two waits of one event), overlapping siblings, CUDA sync
dependencies between events outside the step or outside the DAG's filter, sync records and
calls that are node 0, and the caption's counts of unresolved syncs.

Written from the mutants of `analyses/critical_path.py`; every expected path, length and self
time is worked out in the comments from the events each case gives.
"""

from __future__ import annotations

from typing import Any

import pytest

from irprof.analyses.critical_path import CriticalPath, PathEvent, critical_path
from irprof.errors import UsageError
from irprof.event_dag import build_event_dag
from irprof.event_dag.model import DagFilter
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

NO_RECORD = "no device-side sync record (Kineto cuda_sync) for the call"
NO_STREAM = "the sync record names no stream"


class Build:
    """A hand-built trace: host calls on threads, kernels on streams (launched by the host call
    of the same correlation, with a flow), Kineto sync records on a track of their own, steps."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()
        self.calls: dict[int, int] = {}

    def host(
        self, name: str, start: int, end: int, corr: int | None = None, thread: int = 0
    ) -> int:
        args = {"correlation": corr} if corr is not None else None
        row = self.builder.add(start, end - start, self.builder.track(1, thread), name,
                               EventKind.RUNTIME, args)  # fmt: skip
        if corr is not None:
            self.calls[corr] = row
        return row

    def kernel(self, name: str, start: int, end: int, stream: int, corr: int) -> int:
        args = {"device": 0, "stream": stream, "correlation": corr}
        row = self.builder.add(start, end - start, self.builder.track(0, stream), name,
                               EventKind.KERNEL, args)  # fmt: skip
        if corr in self.calls:
            self.builder.flow(self.calls[corr], row, row)
        return row

    def record(self, name: str, start: int, end: int, corr: int, **sync: Any) -> int:
        args = {"device": 0, "correlation": corr, "cuda_sync_kind": name, **sync}
        return self.builder.add(start, end - start, self.builder.track(0, 99), name,
                                EventKind.RUNTIME, args)  # fmt: skip

    def step(self, name: str, start: int, end: int) -> int:
        return self.builder.add(start, end - start, self.builder.track(2, 0), name, EventKind.STEP)

    def trace(self) -> Trace:
        return self.builder.build(sort=False)  # rows as added (ties keep this order)


def on_tracks(*events: tuple[str, int, int, int], flows: tuple[tuple[int, int], ...] = ()) -> Trace:
    """Host events (name, track, start, end) and flows between them (indices into `events`)."""
    builder = TraceBuilder()
    rows = [
        builder.add(start, end - start, builder.track(1, track), name, EventKind.RUNTIME)
        for name, track, start, end in events
    ]
    for number, (src, dst) in enumerate(flows):
        builder.flow(rows[src], rows[dst], number)
    return builder.build()


def path_of(
    trace: Trace,
    *,
    syncs: bool = False,
    step: int | None = None,
    dag_filter: DagFilter | None = None,
) -> CriticalPath:
    """The path of `step` of `trace`'s causal DAG (over `dag_filter`'s events), following the
    CUDA sync dependencies when `syncs`."""
    dag = build_event_dag(trace, event_filter=dag_filter)
    return critical_path(dag, step=step, trace=trace if syncs else None)


def work(path: CriticalPath) -> dict[str, int]:
    return {event.name: event.self_ns for event in path.events}


# --- hand-offs to other tracks -----------------------------------------------------------------


def test_a_call_ending_with_the_work_it_handed_off_is_the_one_that_waited() -> None:
    # X (0..95) hands Y (5..95) to track 2; both end at 95, so X waited, not only its caller W:
    # W 0..100: 5 ns after Y; X 0; Y 90. Had W waited alone, X's 95 ns would be its work and
    # the path W, X would weigh 100.
    trace = on_tracks(("W", 1, 0, 100), ("X", 1, 0, 95), ("Y", 2, 5, 95), flows=((1, 2),))
    path = path_of(trace)
    assert work(path) == {"W": 5, "X": 0, "Y": 90}
    assert path.length_ns == 95


def test_a_flow_on_the_same_track_does_not_stop_later_hand_offs() -> None:
    # A -> W is a flow on one track (no hand-off); then X hands Y to track 2 and W waits:
    # A 10, B 5, W 5 (140 - 135), X 0, Y 90: 110 (without the hand-off: A, B, W, X 10, W 90).
    trace = on_tracks(
        ("A", 1, 0, 10), ("B", 1, 15, 20), ("W", 1, 40, 140), ("X", 1, 40, 50),
        ("Y", 2, 45, 135), flows=((0, 2), (3, 4)),
    )  # fmt: skip
    path = path_of(trace)
    assert [event.name for event in path.events] == ["A", "B", "W", "X", "Y"]
    assert work(path) == {"A": 10, "B": 5, "W": 5, "X": 0, "Y": 90}
    assert path.length_ns == 110


def test_a_flow_no_open_event_waits_for_does_not_stop_later_hand_offs() -> None:
    # L (0..10) launches K (15..115): L ends first, nothing waits. Then X hands Y (45..235) to
    # track 2 inside W (40..240): L 10, W 5 + 0, X 0, Y 190: 205 (without: L, W, X: 210).
    trace = on_tracks(
        ("L", 1, 0, 10), ("K", 3, 15, 115), ("W", 1, 40, 240), ("X", 1, 40, 50),
        ("Y", 2, 45, 235), flows=((0, 1), (3, 4)),
    )  # fmt: skip
    path = path_of(trace)
    assert [event.name for event in path.events] == ["L", "W", "X", "Y"]
    assert work(path) == {"L": 10, "W": 5, "X": 0, "Y": 190}


def test_an_event_waiting_twice_subtracts_both_waits() -> None:
    # W (0..100) hands Y1 (10..30) and Y2 (40..60) off: its own time is 100 - 20 - 20 = 60;
    # through Y1: 20 + W's time after it (70 - 20) = 70, the heaviest.
    trace = on_tracks(
        ("W", 1, 0, 100), ("Y1", 2, 10, 30), ("Y2", 3, 40, 60), flows=((0, 1), (0, 2))
    )
    path = path_of(trace)
    assert [event.name for event in path.events] == ["W", "Y1"]
    assert work(path) == {"W": 50, "Y1": 20}
    assert path.length_ns == 70  # W alone: 60 (counting only its last wait: 80)


def test_the_gap_between_two_calls_excludes_the_time_their_caller_waited() -> None:
    # W (0..200) calls X1 (0..10), which hands Y (5..140) off, then X2 (150..160). The gap
    # X1 -> X2 is W's own time less the wait: 140 - 130 = 10; X2 then W's 40: 70 that way.
    # Through Y: 135 then W's 60 after Y: 195.
    trace = on_tracks(
        ("W", 1, 0, 200), ("X1", 1, 0, 10), ("X2", 1, 150, 160), ("Y", 2, 5, 140),
        flows=((1, 3),),
    )  # fmt: skip
    path = path_of(trace)
    assert [event.name for event in path.events] == ["W", "X1", "Y"]
    assert work(path) == {"W": 60, "X1": 0, "Y": 135}


def test_overlapping_siblings_do_not_stop_the_edges_after_them() -> None:
    # A (0..50) and B (40..100) overlap on one track: only start order links them; then C.
    # A 0 (its start leads to B's), B 60, C 90: 150.
    trace = on_tracks(("A", 1, 0, 50), ("B", 1, 40, 100), ("C", 1, 110, 200))
    path = path_of(trace)
    assert [event.name for event in path.events] == ["A", "B", "C"]
    assert path.length_ns == 150


# --- CUDA sync dependencies --------------------------------------------------------------------


def stream_wait(extra: int) -> Trace:
    """A (10..500) on stream 1, recorded; stream 2 waits for it; B (500..600) starts as A ends.
    Z, on a thread of its own from 0, lasts `extra` ns."""
    build = Build()
    build.host("Z", 0, extra, thread=5)
    build.host("launchA", 0, 10, corr=1)
    build.kernel("A", 10, 500, stream=1, corr=1)
    build.host("cudaEventRecord", 20, 25, corr=2)
    build.host("cudaStreamWaitEvent", 20, 25, corr=3, thread=1)
    build.record("Stream Wait Event", 20, 25, corr=3, stream=2, wait_on_stream=1,
                 wait_on_cuda_event_record_corr_id=2)  # fmt: skip
    build.host("launchB", 30, 40, corr=4, thread=1)
    build.kernel("B", 500, 600, stream=2, corr=4)
    return build.trace()


def test_a_stream_wait_adds_no_work_so_a_tie_keeps_the_first_path_found() -> None:
    # launchA 10 + A 490 + B 100 = 600 through the wait; Z alone is 600 too and ends first in
    # point order: the wait's edge weighs nothing, so Z is kept.
    path = path_of(stream_wait(600), syncs=True)
    assert [event.name for event in path.events] == ["Z"]
    path = path_of(stream_wait(599), syncs=True)
    assert [event.name for event in path.events] == ["launchA", "A", "B"]
    assert len(path.sync_links) == 1 and path.sync_edges == 1


def test_a_kernel_whose_start_is_the_end_it_waits_for_starts_its_own_time() -> None:
    # B (a device op with C nested in it) starts when A ends: the path enters B at its start
    # and goes through C: B 100 - 30, C 30.
    build = Build()
    build.host("launchA", 0, 10, corr=1)
    build.kernel("A", 10, 500, stream=1, corr=1)
    build.host("cudaEventRecord", 20, 25, corr=2)
    build.host("cudaStreamWaitEvent", 20, 25, corr=3, thread=1)
    build.record("Stream Wait Event", 20, 25, corr=3, stream=2, wait_on_stream=1,
                 wait_on_cuda_event_record_corr_id=2)  # fmt: skip
    build.host("launchB", 30, 40, corr=4, thread=1)
    build.kernel("B", 500, 600, stream=2, corr=4)
    build.host("launchC", 41, 45, corr=5, thread=1)
    build.kernel("C", 550, 580, stream=2, corr=5)
    trace = build.trace()
    path = path_of(trace, syncs=True)
    assert [event.name for event in path.events] == ["launchA", "A", "B", "C"]
    assert work(path) == {"launchA": 10, "A": 490, "B": 70, "C": 30}


def test_a_host_sync_ending_with_the_kernel_waited_all_along() -> None:
    # The call (30..500) returns as K (10..500) ends: it did no work; the path crosses to it
    # and on to "after" (510..530): 10 + 490 + 0 + 20. Had the call worked, 10 + 470 + 20.
    build = Build()
    build.host("launch", 0, 10, corr=1)
    build.kernel("K", 10, 500, stream=1, corr=1)
    build.host("cudaStreamSynchronize", 30, 500, corr=2)
    build.record("Stream Sync", 30, 500, corr=2, stream=1)
    build.host("after", 510, 530)
    trace = build.trace()
    path = path_of(trace, syncs=True)
    assert work(path) == {"launch": 10, "K": 490, "cudaStreamSynchronize": 0, "after": 20}
    assert [event.name for event in path.events][2:] == ["cudaStreamSynchronize", "after"]
    assert len(path.sync_links) == 1 and path.length_ns == 520


def synced(record_first: bool, kernel_first: bool = False) -> Trace:
    """launch (0..5; left out of the DAG by the tests' filter), K on stream 1, and a stream sync
    call (10..520) with its record; the first of them in node order is node 0."""
    build = Build()
    build.host("launch", 0, 5, corr=1)
    if kernel_first:
        build.kernel("K", 6, 500, stream=1, corr=1)
    if record_first:
        build.record("Stream Sync", 10, 520, corr=2, stream=1)
    build.host("cudaStreamSynchronize", 10, 520, corr=2)
    if not record_first:
        build.record("Stream Sync", 10, 520, corr=2, stream=1)
    if not kernel_first:
        build.kernel("K", 15, 500, stream=1, corr=1)
    return build.trace()


NOT_LAUNCH = DagFilter(name_regex="^(?!launch)")


def test_a_sync_record_that_is_node_zero_is_still_no_work() -> None:
    # K 485 then the call's 20 after it: 505; the record (510 ns) is not work.
    trace = synced(record_first=True)
    path = path_of(trace, syncs=True, dag_filter=NOT_LAUNCH)
    assert path.nodes[0] != 0 and path.length_ns == 505
    assert [event.name for event in path.events] == ["K", "cudaStreamSynchronize"]


def test_a_sync_call_that_is_node_zero_still_waits() -> None:
    trace = synced(record_first=False)
    path = path_of(trace, syncs=True, dag_filter=NOT_LAUNCH)
    assert path.events[-1].node == 0 and path.length_ns == 505
    assert path.sync_links == ((2, 0),)


def test_a_kernel_that_is_node_zero_is_still_waited_for() -> None:
    # K (6..500) 494, then the call's 20: 514; without the dependency the call alone is 510.
    trace = synced(record_first=False, kernel_first=True)
    path = path_of(trace, syncs=True, dag_filter=NOT_LAUNCH)
    assert [event.name for event in path.events] == ["K", "cudaStreamSynchronize"]
    assert path.events[0].node == 0 and path.length_ns == 514


def test_a_dependency_on_an_event_left_out_of_the_dag_is_not_followed() -> None:
    # Only the call and its record are nodes: the call is 510 ns of work, nothing waited.
    trace = synced(record_first=True)
    path = path_of(trace, syncs=True, dag_filter=DagFilter(name_regex="^(?!launch|K)"))
    assert [event.name for event in path.events] == ["cudaStreamSynchronize"]
    assert path.length_ns == 510 and path.sync_edges == 0 and path.sync_links == ()


def stepped() -> Trace:
    """Step 0 (0..100): launch and the start of K (10..150). Step 1 (100..300): a stream sync
    call (110..200) waiting for K, then an unresolved one (250..260)."""
    build = Build()
    build.step("step0", 0, 100)
    build.host("launch", 0, 10, corr=1)
    build.kernel("K", 10, 150, stream=1, corr=1)
    build.step("step1", 100, 200)
    build.host("cudaStreamSynchronize", 110, 200, corr=2)
    build.record("Stream Sync", 110, 200, corr=2, stream=1)
    build.host("cudaStreamSynchronize", 250, 260, corr=5)
    return build.trace()


def test_a_dependency_on_an_event_outside_the_step_is_not_followed() -> None:
    # Step 1 is 100..200 (the call at 250 is past its marker): the call's 90 ns are work.
    trace = stepped()
    path = path_of(trace, syncs=True, step=1)
    assert (path.start_ns, path.end_ns) == (100, 200)
    assert [event.name for event in path.events] == ["cudaStreamSynchronize"]
    assert path.length_ns == 90 and path.sync_edges == 0


def test_unresolved_calls_are_counted_in_their_step_only() -> None:
    trace = stepped()
    first = path_of(trace, syncs=True, step=0)
    assert (first.unresolved_syncs, first.unresolved_reasons) == (0, ())
    assert first.table_caption() == (
        "step 0: 10 ns of work on a 100 ns step; CUDA syncs: 0 dependencies in the step, "
        "0 on the path, 0 calls unresolved"
    )


def unresolved(reasons: list[str]) -> Trace:
    """One stream sync call per reason, 1,000 ns each, 2,000 ns apart."""
    build = Build()
    for number, reason in enumerate(reasons):
        start = 2_000 * number
        build.host("cudaStreamSynchronize", start, start + 1_000, corr=number + 1)
        if reason == NO_STREAM:
            build.record("Stream Sync", start, start + 1_000, corr=number + 1)
    return build.trace()


def test_unresolved_reasons_come_most_frequent_first() -> None:
    trace = unresolved([NO_RECORD, NO_STREAM, NO_STREAM])
    path = path_of(trace, syncs=True)
    assert path.unresolved_syncs == 3
    assert path.unresolved_reasons == ((NO_STREAM, 2), (NO_RECORD, 1))
    # three calls of 1,000 ns in a row, the records no work; from 0 to 5,000
    assert path.table_caption() == (
        "step -1: 3,000 ns of work on a 5,000 ns step; CUDA syncs: 0 dependencies in the step, "
        f"0 on the path, 3 calls unresolved ({NO_STREAM}: 2; {NO_RECORD}: 1)"
    )


def test_unresolved_reasons_of_equal_counts_come_in_name_order() -> None:
    trace = unresolved([NO_STREAM, NO_RECORD])
    path = path_of(trace, syncs=True)
    assert path.unresolved_reasons == ((NO_RECORD, 1), (NO_STREAM, 1))


def test_the_trace_must_be_the_dags_even_one_row_short() -> None:
    build = Build()
    build.host("a", 0, 10)
    build.host("b", 20, 30)
    dag = build_event_dag(build.trace())
    short = Build()
    short.host("a", 0, 10)
    with pytest.raises(UsageError) as error:
        critical_path(dag, trace=short.trace())
    assert str(error.value) == (
        "critical path: the trace given is not the one the DAG was built from"
    )


# --- the path as a table ------------------------------------------------------------------------


def test_the_table_is_the_path_events_fields_and_the_caption_its_figures() -> None:
    events = (
        PathEvent(3, "a", "t/1", 1_000, 2_000, 1_500, ("tf: x",)),
        PathEvent(7, "b", "t/2", 3_000, 10, 10, ()),
    )
    path = CriticalPath(0, 2, 0, 4_000, events, ((3, 7),))
    assert path.table_columns() == ("node", "name", "track", "ts_ns", "dur_ns", "self_ns", "ops")
    assert path.table_rows() == [
        (3, "a", "t/1", 1_000, 2_000, 1_500, ("tf: x",)),
        (7, "b", "t/2", 3_000, 10, 10, ()),
    ]
    assert path.table_caption() == "step 0: 1,510 ns of work on a 4,000 ns step"
    followed = CriticalPath(0, 2, 0, 4_000, events, ((3, 7),), ((3, 7),), True, 2, 3,
                            (("why", 2), ("other", 1)))  # fmt: skip
    assert followed.table_caption() == (
        "step 0: 1,510 ns of work on a 4,000 ns step; CUDA syncs: 2 dependencies in the step, "
        "1 on the path, 3 calls unresolved (why: 2; other: 1)"
    )


# --- the step and the DAG ------------------------------------------------------------------------


def test_the_default_step_is_the_longest() -> None:
    # steps of 300, 100 and 200 ns: the first is the longest (the last starts and ends latest)
    build = Build()
    build.step("step0", 0, 300)
    build.host("a", 10, 20)
    build.step("step1", 300, 400)
    build.step("step2", 400, 600)
    path = path_of(build.trace())
    assert (path.step, path.steps, path.start_ns, path.end_ns) == (0, 3, 0, 300)


def test_a_trace_without_events_has_an_empty_path_over_no_time() -> None:
    path = path_of(Build().trace())
    assert (path.step, path.start_ns, path.end_ns, path.events) == (-1, 0, 0, ())


def test_the_levels_dag_is_refused() -> None:
    build = Build()
    build.host("a", 0, 10)
    with pytest.raises(UsageError) as error:
        critical_path(build_event_dag(build.trace(), mode="levels"))
    assert str(error.value) == "the critical path needs a causal DAG (--mode causal)"


# --- written from the second run's survivors ------------------------------------------------------


def test_a_lighter_route_found_after_a_call_started_does_not_replace_its_own_time() -> None:
    # A (0..100) hands Y (30..40) to track 2 and waits for it: A's own time is 100 - 10 = 90.
    # Through Y: A's start leads to Y's (0), Y 10, then A's 60 after Y: 70. The heavier stays.
    trace = on_tracks(("A", 1, 0, 100), ("Y", 2, 30, 40), flows=((0, 1),))
    path = path_of(trace)
    assert [event.name for event in path.events] == ["A"]
    assert path.length_ns == 100 - 10


def test_of_two_equally_heavy_routes_the_first_found_is_kept() -> None:
    # As above with Y (10..20): A alone 100 - 10 = 90; through Y 10 + 80 = 90. A's own edge
    # (found first, from A's start) is kept: the path is A alone.
    trace = on_tracks(("A", 1, 0, 100), ("Y", 2, 10, 20), flows=((0, 1),))
    path = path_of(trace)
    assert [event.name for event in path.events] == ["A"]
    assert work(path) == {"A": 90}


def test_the_time_before_a_first_child_excludes_the_waits_in_it() -> None:
    # A (0..100) hands Y (30..40) off, then calls C (50..60). Before C: 50 - 10 = 40, C 10,
    # after C 40: 90 through C (the wait is not A's work); through Y: 10 + 60 = 70.
    trace = on_tracks(("A", 1, 0, 100), ("Y", 2, 30, 40), ("C", 1, 50, 60), flows=((0, 1),))
    path = path_of(trace)
    assert [event.name for event in path.events] == ["A", "C"]
    assert work(path) == {"A": 50 - 10 + 100 - 60, "C": 10}
    assert path.length_ns == 90


def test_overlapping_siblings_after_node_zero_link_their_starts_only() -> None:
    # X (0..10) on track 2 leads to S2 (a flow); P (1..10), S1 (10..30) and S2 (20..50) follow
    # on track 1, S1 and S2 overlapping: S1's start leads to S2's start with no work.
    # Through X: 10 + 30 = 40; through P and S1's start: 9 + 0 + 30 = 39; S1 alone 9 + 20.
    trace = on_tracks(
        ("X", 2, 0, 10), ("P", 1, 1, 10), ("S1", 1, 10, 30), ("S2", 1, 20, 50),
        flows=((0, 3),),
    )  # fmt: skip
    path = path_of(trace)
    assert [event.name for event in path.events] == ["X", "S2"]
    assert work(path) == {"X": 10, "S2": 30}


def test_a_sequence_between_top_level_events_adds_no_weight() -> None:
    # P1 (0..4), P2 (4..8) then S (20..50) on track 1; X (1..10) on track 2 leads to S.
    # Through X: 9 + 30 = 39; through P1, P2: 4 + 4 + 30 = 38 (the gaps are nobody's work).
    trace = on_tracks(
        ("P1", 1, 0, 4), ("X", 2, 1, 10), ("P2", 1, 4, 8), ("S", 1, 20, 50), flows=((1, 3),)
    )
    path = path_of(trace)
    assert [event.name for event in path.events] == ["X", "S"]
    assert path.length_ns == 9 + 30


def test_links_are_the_consecutive_nodes_of_the_path() -> None:
    trace = on_tracks(("A", 1, 0, 10), ("B", 1, 20, 30), ("C", 1, 40, 45))
    path = path_of(trace)
    assert len(path.nodes) == 3
    assert path.links == tuple(zip(path.nodes[:-1], path.nodes[1:], strict=True))


def test_without_step_markers_step_zero_is_the_whole_trace_from_its_first_start() -> None:
    # no markers: one window, from the first start (100) to the last end (250)
    trace = on_tracks(("A", 1, 100, 150), ("B", 1, 200, 250))
    path = path_of(trace, step=0)
    assert (path.step, path.steps, path.start_ns, path.end_ns) == (-1, 0, 100, 250)
    assert path.span_ns == 150
    with pytest.raises(UsageError) as error:
        path_of(trace, step=1)
    assert str(error.value) == "--step 1: the trace has no step markers (one window)"


def test_each_event_names_the_ops_of_its_own_name_and_start() -> None:
    # Two events named A (starts 0 and 40) and one B (20): the callable is asked with each
    # event's name and start, so the two A events can name different ops (torch's shared
    # `aten::linear`); without a callable no event names an op.
    trace = on_tracks(("A", 1, 0, 10), ("B", 1, 20, 30), ("A", 1, 40, 45))
    dag = build_event_dag(trace)
    asked: list[tuple[str, int]] = []

    def ops_by_event(name: str, ts_ns: int) -> tuple[str, ...]:
        asked.append((name, ts_ns))
        return (f"torch: {name} at {ts_ns}",)

    path = critical_path(dag, ops_by_event=ops_by_event)
    assert [(event.name, event.ts_ns, event.ops) for event in path.events] == [
        ("A", 0, ("torch: A at 0",)),
        ("B", 20, ("torch: B at 20",)),
        ("A", 40, ("torch: A at 40",)),
    ]
    assert asked == [("A", 0), ("B", 20), ("A", 40)]
    assert all(type(ts) is int for _, ts in asked)
    assert [event.ops for event in critical_path(dag).events] == [(), (), ()]
