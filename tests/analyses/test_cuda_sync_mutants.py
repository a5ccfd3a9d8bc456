"""The dependencies of CUDA event waits and synchronisations, read straight from
`sync_dependencies`: every call on the boundaries of "launched before" and "launched after",
every unresolved reason, the id fields Kineto leaves unknown, and random streams checked
against the rule of the module's docstring applied by brute force.

Written from the mutants of `analyses/cuda_sync.py`, whose only tests went through the
critical path. Every expected edge is worked out in the comments from the events each case
gives.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.cuda_sync import (
    DEVICE_SYNC,
    EVENT_SYNC,
    NO_SYNC_DEPENDENCIES,
    RECORD_CALL,
    STREAM_SYNC,
    STREAM_WAIT,
    SyncDependencies,
    SyncDependency,
    UnresolvedSync,
    sync_dependencies,
)
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind

NO_RECORD = "no device-side sync record (Kineto cuda_sync) for the call"
NO_STREAM = "the sync record names no stream"
NO_EVENT = "the sync record names no cudaEventRecord (event never recorded?)"
RECORD_MISSING = "its cudaEventRecord call is not in the trace"
RECORD_LATE = "its cudaEventRecord call starts after the wait"
NO_WAITING = "the sync record names no waiting stream"
CONTRADICTED = "the op waited for ends after what waits for it"
SEVERAL_DEVICES = "device unknown: no sync record and work on several devices"


class Build:
    """Host calls on threads of pid 1; device ops on streams (pid 10 + device) launched by the
    host call of the same correlation; Kineto's device-side sync records on a track of their
    own. Rows are in the order added."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()

    def call(self, name: str, start: int, end: int, corr: Any = None, thread: int = 0) -> int:
        args = {"correlation": corr} if corr is not None else None
        track = self.builder.track(1, thread)
        return self.builder.add(start, end - start, track, name, EventKind.RUNTIME, args)

    def op(
        self,
        start: int,
        end: int,
        stream: Any,
        corr: Any,
        device: Any = 0,
        kind: EventKind = EventKind.KERNEL,
    ) -> int:
        args = {"device": device, "stream": stream, "correlation": corr}
        track = self.builder.track(10 + (device if isinstance(device, int) else 9), 7)
        return self.builder.add(start, end - start, track, "op", kind, args)

    def launch(
        self, start: int, end: int, corr: int, op_start: int, op_end: int, stream: int,
        device: int = 0, thread: int = 0,
    ) -> int:  # fmt: skip
        """A cudaLaunchKernel call and its kernel; returns the kernel's row."""
        self.call("cudaLaunchKernel", start, end, corr, thread)
        return self.op(op_start, op_end, stream, corr, device)

    def record(self, corr: int, **args: Any) -> int:
        """The device-side record of the call of correlation `corr` (at time 0, 1 ns)."""
        track = self.builder.track(1, 99)
        fields = {"correlation": corr, "cuda_sync_kind": "sync", **args}
        return self.builder.add(0, 1, track, "cuda_sync", EventKind.RUNTIME, fields)

    def found(self) -> SyncDependencies:
        return sync_dependencies(self.builder.build(sort=False))


def edges(found: SyncDependencies) -> list[tuple[int, int, str, int]]:
    return [(edge.src, edge.dst, edge.call, edge.call_row) for edge in found.edges]


def reasons(found: SyncDependencies) -> list[str]:
    return [item.reason for item in found.unresolved]


# --- cudaStreamWaitEvent ------------------------------------------------------------------------


def stream_wait(
    record_start: int = 20, wait: tuple[int, int] = (30, 35), **fields: Any
) -> tuple[Build, dict[str, int]]:
    """Stream 1: K1 (launched 0..10), K2 (launched 10..20), K3 (launched 25..28). The event is
    recorded at `record_start`; stream 2 waits for it during `wait`: K4 launched 34..40 (not
    after the wait ends at 35), K5 launched 35..40, K6 launched 40..45."""
    build = Build()
    rows = {
        "K1": build.launch(0, 10, 1, 20, 50, stream=1),
        "K2": build.launch(10, 20, 2, 50, 80, stream=1),
    }
    rows["record"] = build.call(RECORD_CALL, record_start, record_start + 5, 3)
    rows["K3"] = build.launch(25, 28, 4, 80, 90, stream=1)
    rows["wait"] = build.call(STREAM_WAIT, *wait, 5)
    args = {"stream": 2, "wait_on_stream": 1, "wait_on_cuda_event_record_corr_id": 3}
    args.update({"device": 0, **fields})
    rows["sync"] = build.record(5, **{k: v for k, v in args.items() if v is not None})
    rows["K4"] = build.launch(34, 40, 6, 90, 100, stream=2, thread=1)
    rows["K5"] = build.launch(35, 40, 7, 100, 110, stream=2, thread=2)
    rows["K6"] = build.launch(40, 45, 8, 110, 120, stream=2)
    return build, rows


def test_a_stream_wait_links_the_last_op_before_the_record_to_the_first_after_the_wait() -> None:
    # K2's launch ends as the record starts (20): before it. K5's launch starts as the wait ends
    # (35): after it. K2 ends at 80, K5 starts at 100.
    build, rows = stream_wait()
    found = build.found()
    assert edges(found) == [(rows["K2"], rows["K5"], STREAM_WAIT, rows["wait"])]
    assert found.edges == (SyncDependency(rows["K2"], rows["K5"], STREAM_WAIT, rows["wait"]),)
    assert (found.unresolved, found.calls, found.records) == ((), 1, (rows["sync"],))
    assert found.reasons() == {}


def test_a_launch_ending_one_ns_after_the_record_is_not_before_it() -> None:
    # the record starts at 19: K2's launch (10..20) ends after it, K1's (0..10) before
    build, rows = stream_wait(record_start=19, wait=(30, 35))
    assert edges(build.found()) == [(rows["K1"], rows["K5"], STREAM_WAIT, rows["wait"])]


def test_a_record_starting_with_the_wait_is_not_after_it() -> None:
    # record and wait both start at 30: K2 and K3 (launched 25..28) are before it; K3 ends at 90,
    # K5 starts at 100
    build, rows = stream_wait(record_start=30, wait=(30, 35))
    assert edges(build.found()) == [(rows["K3"], rows["K5"], STREAM_WAIT, rows["wait"])]


def test_a_record_starting_after_the_wait_is_unresolved() -> None:
    build, rows = stream_wait(record_start=31, wait=(30, 35))
    found = build.found()
    assert found.edges == ()
    assert found.unresolved == (UnresolvedSync(rows["wait"], STREAM_WAIT, RECORD_LATE),)
    assert found.reasons() == {RECORD_LATE: 1}


def test_a_wait_ending_one_ns_later_takes_the_next_launch() -> None:
    # the wait ends at 36: K5's launch (35..40) began before, K6's (40..45) after
    build, rows = stream_wait(wait=(30, 36))
    assert edges(build.found()) == [(rows["K2"], rows["K6"], STREAM_WAIT, rows["wait"])]


def test_the_first_op_after_a_wait_is_found_by_launch_start_not_stream_order() -> None:
    # stream 2: A runs first (100..110) but was launched 40..41; B runs next (110..120) and was
    # launched 36..45 (started before A's launch, ended after it). The wait ends at 37: only A
    # was launched from then on (B began at 36), so A is the target.
    build = Build()
    k2 = build.launch(10, 20, 2, 50, 80, stream=1)
    build.call(RECORD_CALL, 20, 25, 3)
    wait = build.call(STREAM_WAIT, 30, 37, 5)
    build.record(5, device=0, stream=2, wait_on_stream=1, wait_on_cuda_event_record_corr_id=3)
    a = build.launch(40, 41, 7, 100, 110, stream=2)
    build.launch(36, 45, 8, 110, 120, stream=2, thread=1)
    assert edges(build.found()) == [(k2, a, STREAM_WAIT, wait)]


def test_a_wait_with_nothing_launched_after_it_adds_nothing() -> None:
    build, _ = stream_wait(wait=(30, 41))
    found = build.found()
    assert (found.edges, found.unresolved, found.calls) == ((), (), 1)


def test_a_wait_on_a_stream_with_nothing_before_the_record_adds_nothing() -> None:
    build, _ = stream_wait(wait_on_stream=3)
    found = build.found()
    assert (found.edges, found.unresolved) == ((), ())


def test_a_waiting_stream_without_ops_adds_nothing_and_without_a_name_is_unresolved() -> None:
    build, rows = stream_wait(stream=4)
    assert (build.found().edges, build.found().unresolved) == ((), ())
    build, rows = stream_wait(stream=None)
    found = build.found()
    assert found.edges == ()
    assert found.unresolved == (UnresolvedSync(rows["wait"], STREAM_WAIT, NO_WAITING),)
    build, rows = stream_wait(stream=-1)
    assert reasons(build.found()) == [NO_WAITING]


def test_the_device_of_the_record_picks_the_streams() -> None:
    # the same streams on device 1: nothing launched there
    build, _ = stream_wait(device=1)
    assert (build.found().edges, build.found().unresolved) == ((), ())


def test_a_record_naming_no_event_or_no_stream_is_unresolved() -> None:
    for fields in (
        {"wait_on_cuda_event_record_corr_id": None},
        {"wait_on_cuda_event_record_corr_id": -1},
        {"wait_on_cuda_event_record_corr_id": 0xFFFF_FFFF},
        {"wait_on_stream": None},
        {"wait_on_stream": 0xFFFF_FFFF},
    ):
        build, rows = stream_wait(**fields)
        found = build.found()
        assert found.edges == ()
        assert found.unresolved == (UnresolvedSync(rows["wait"], STREAM_WAIT, NO_EVENT),)


def test_a_record_naming_a_call_not_in_the_trace_or_not_a_record_is_unresolved() -> None:
    build, rows = stream_wait(wait_on_cuda_event_record_corr_id=42)
    assert build.found().unresolved == (UnresolvedSync(rows["wait"], STREAM_WAIT, RECORD_MISSING),)
    # correlation 2 is K2's launch, not a cudaEventRecord
    build, rows = stream_wait(wait_on_cuda_event_record_corr_id=2)
    assert reasons(build.found()) == [RECORD_MISSING]


def test_a_wait_whose_source_ends_after_its_target_starts_is_unresolved() -> None:
    # K2 (50..101) ends after K5 starts (100); at 100 exactly it is a dependency
    for end, expected in ((100, True), (101, False)):
        build = Build()
        k2 = build.launch(10, 20, 2, 50, end, stream=1)
        build.call(RECORD_CALL, 20, 25, 3)
        wait = build.call(STREAM_WAIT, 30, 35, 5)
        build.record(5, device=0, stream=2, wait_on_stream=1, wait_on_cuda_event_record_corr_id=3)
        k5 = build.launch(35, 40, 7, 100, 110, stream=2)
        found = build.found()
        if expected:
            assert edges(found) == [(k2, k5, STREAM_WAIT, wait)]
        else:
            assert found.edges == ()
            assert found.unresolved == (UnresolvedSync(wait, STREAM_WAIT, CONTRADICTED),)


# --- cudaEventSynchronize -----------------------------------------------------------------------


def test_an_event_sync_waits_inside_the_call_for_the_last_op_before_the_record() -> None:
    # the call (30..80) ends as K2 (50..80) ends: a dependency; ending at 79 it is contradicted
    for call_end, expected in ((80, True), (79, False)):
        build = Build()
        build.launch(0, 10, 1, 20, 50, stream=1)
        k2 = build.launch(10, 20, 2, 50, 80, stream=1)
        build.call(RECORD_CALL, 20, 25, 3)
        build.launch(25, 28, 4, 80, 90, stream=1)
        call = build.call(EVENT_SYNC, 30, call_end, 5)
        build.record(5, device=0, wait_on_stream=1, wait_on_cuda_event_record_corr_id=3)
        found = build.found()
        if expected:
            assert edges(found) == [(k2, call, EVENT_SYNC, call)]
            assert found.unresolved == ()
        else:
            assert found.edges == ()
            assert found.unresolved == (UnresolvedSync(call, EVENT_SYNC, CONTRADICTED),)


def test_the_last_op_before_a_record_is_found_by_launch_end_not_stream_order() -> None:
    # stream 1 runs A (20..30), B (30..40), C (40..50); their launches end at 15, 20 and 8 (C
    # launched from another thread). By the record at 10 only C's launch had ended: C.
    build = Build()
    build.launch(0, 15, 1, 20, 30, stream=1)
    build.launch(1, 20, 2, 30, 40, stream=1, thread=1)
    c = build.launch(5, 8, 3, 40, 50, stream=1, thread=2)
    build.call(RECORD_CALL, 10, 11, 4)
    call = build.call(EVENT_SYNC, 12, 60, 5)
    build.record(5, device=0, wait_on_stream=1, wait_on_cuda_event_record_corr_id=4)
    assert edges(build.found()) == [(c, call, EVENT_SYNC, call)]


def test_an_event_sync_needs_no_waiting_stream() -> None:
    build = Build()
    k1 = build.launch(0, 10, 1, 20, 50, stream=1)
    build.call(RECORD_CALL, 20, 25, 3)
    call = build.call(EVENT_SYNC, 30, 60, 5)
    build.record(5, device=0, stream=-1, wait_on_stream=1, wait_on_cuda_event_record_corr_id=3)
    assert edges(build.found()) == [(k1, call, EVENT_SYNC, call)]


# --- cudaStreamSynchronize ----------------------------------------------------------------------


def stream_sync(call: tuple[int, int], **fields: Any) -> tuple[Build, dict[str, int]]:
    """Stream 1: K1 (launched 0..10, runs 20..50), K2 (launched 10..20, runs 50..80); stream 2:
    K3 (launched 12..14, runs 30..40). The call synchronises stream 1 during `call`."""
    build = Build()
    rows = {
        "K1": build.launch(0, 10, 1, 20, 50, stream=1),
        "K2": build.launch(10, 20, 2, 50, 80, stream=1),
        "K3": build.launch(12, 14, 3, 30, 40, stream=2, thread=1),
    }
    rows["call"] = build.call(STREAM_SYNC, *call, 5)
    args = {"device": 0, "stream": 1, **fields}
    rows["sync"] = build.record(5, **{k: v for k, v in args.items() if v is not None})
    return build, rows


def test_a_stream_sync_waits_for_the_last_op_launched_on_its_stream_before_it() -> None:
    # the call starts as K2's launch ends (20) and ends as K2 ends (80)
    build, rows = stream_sync((20, 80))
    found = build.found()
    assert edges(found) == [(rows["K2"], rows["call"], STREAM_SYNC, rows["call"])]
    assert (found.unresolved, found.calls, found.records) == ((), 1, (rows["sync"],))


def test_a_stream_sync_starting_one_ns_earlier_waits_for_the_op_before() -> None:
    build, rows = stream_sync((19, 80))
    assert edges(build.found()) == [(rows["K1"], rows["call"], STREAM_SYNC, rows["call"])]


def test_a_stream_sync_returning_before_its_op_ends_is_unresolved() -> None:
    build, rows = stream_sync((20, 79))
    found = build.found()
    assert found.unresolved == (UnresolvedSync(rows["call"], STREAM_SYNC, CONTRADICTED),)


def test_a_stream_sync_before_any_launch_or_on_an_idle_stream_adds_nothing() -> None:
    for call, fields in (((5, 80), {}), ((20, 80), {"stream": 3}), ((20, 80), {"device": 1})):
        build, _ = stream_sync(call, **fields)
        found = build.found()
        assert (found.edges, found.unresolved, found.calls) == ((), (), 1)


def test_a_stream_sync_whose_record_names_no_stream_is_unresolved() -> None:
    for stream in (None, -1, 0xFFFF_FFFF, True, "1"):
        build, rows = stream_sync((20, 80), stream=stream)
        found = build.found()
        assert found.unresolved == (UnresolvedSync(rows["call"], STREAM_SYNC, NO_STREAM),)


def test_stream_zero_and_the_largest_known_id_are_streams() -> None:
    # 0 and 0xFFFF_FFFE are ids; only 0xFFFF_FFFF (and -1) mean unknown
    for stream in (0, 0xFFFF_FFFE):
        build = Build()
        k = build.launch(0, 10, 0xFFFF_FFFE, 20, 30, stream=stream)
        call = build.call(STREAM_SYNC, 10, 40, 5)
        build.record(5, device=0, stream=stream)
        assert edges(build.found()) == [(k, call, STREAM_SYNC, call)]


def test_correlation_zero_is_a_correlation() -> None:
    build = Build()
    k = build.launch(0, 10, 0, 20, 30, stream=1)
    call = build.call(STREAM_SYNC, 10, 40, 1)
    build.record(1, device=0, stream=1)
    assert edges(build.found()) == [(k, call, STREAM_SYNC, call)]


def test_a_call_without_a_record_or_a_known_correlation_is_unresolved() -> None:
    for corr in (5, None, -1, 0xFFFF_FFFF, True):
        build = Build()
        build.launch(0, 10, 1, 20, 30, stream=1)
        call = build.call(STREAM_SYNC, 10, 40, corr)
        build.record(6, device=0, stream=1)  # another call's record
        found = build.found()
        assert found.unresolved == (UnresolvedSync(call, STREAM_SYNC, NO_RECORD),)
        assert found.reasons() == {NO_RECORD: 1}


def test_ops_whose_launch_is_unknown_or_ambiguous_are_not_waited_for() -> None:
    # K2 has no correlation, K3 no stream, K4's correlation is two calls' (merged processes),
    # K5's correlation is unknown: the call waits for K1
    build = Build()
    k1 = build.launch(0, 5, 1, 10, 20, stream=1)
    build.op(20, 30, 1, None)
    build.call("cudaLaunchKernel", 6, 8, 3)
    build.op(30, 40, None, 3)
    build.call("cudaLaunchKernel", 6, 8, 4)
    build.call("cudaLaunchKernel", 7, 9, 4, thread=1)
    build.op(40, 50, 1, 4)
    build.call("cudaLaunchKernel", 8, 9, -1)
    build.op(50, 60, 1, -1)
    call = build.call(STREAM_SYNC, 10, 100, 5)
    build.record(5, device=0, stream=1)
    assert edges(build.found()) == [(k1, call, STREAM_SYNC, call)]


def test_an_op_of_unknown_launch_does_not_hide_the_ops_after_it() -> None:
    # the first device row has no correlation; K, after it, is launched and waited for
    build = Build()
    build.op(5, 8, 1, None)
    k = build.launch(0, 5, 1, 10, 20, stream=1)
    call = build.call(STREAM_SYNC, 10, 100, 5)
    build.record(5, device=0, stream=1)
    assert edges(build.found()) == [(k, call, STREAM_SYNC, call)]


def test_ops_without_a_device_are_on_a_stream_of_their_own() -> None:
    build = Build()
    build.launch(0, 5, 1, 10, 20, stream=1)
    build.call("cudaLaunchKernel", 5, 6, 2)
    k2 = build.op(20, 30, 1, 2, device=None)
    call = build.call(STREAM_SYNC, 10, 100, 5)
    build.record(5, stream=1)  # no device: the ops launched with none
    assert edges(build.found()) == [(k2, call, STREAM_SYNC, call)]


# --- cudaDeviceSynchronize ----------------------------------------------------------------------


def test_a_device_sync_waits_for_the_last_op_of_every_stream_of_its_device() -> None:
    # device 0: stream 1 (K1 then K2), stream 2 (K3); device 1: K4. The record names device 0.
    build = Build()
    build.launch(0, 2, 1, 10, 20, stream=1)
    k2 = build.launch(2, 4, 2, 20, 30, stream=1)
    k3 = build.launch(4, 6, 3, 15, 25, stream=2)
    build.launch(6, 8, 4, 10, 40, stream=1, device=1)
    build.launch(12, 14, 6, 40, 50, stream=2)  # launched after the call starts
    call = build.call(DEVICE_SYNC, 10, 40, 5)
    build.record(5, device=0)
    found = build.found()
    assert sorted(edges(found)) == sorted(
        [(k2, call, DEVICE_SYNC, call), (k3, call, DEVICE_SYNC, call)]
    )
    assert found.unresolved == ()


def test_a_device_sync_without_a_record_takes_the_only_device() -> None:
    build = Build()
    k1 = build.launch(0, 2, 1, 10, 20, stream=1, device=1)
    call = build.call(DEVICE_SYNC, 10, 40, 5)
    found = build.found()
    assert edges(found) == [(k1, call, DEVICE_SYNC, call)]
    # a record without a device counts as none
    build = Build()
    k1 = build.launch(0, 2, 1, 10, 20, stream=1, device=1)
    call = build.call(DEVICE_SYNC, 10, 40, 5)
    build.record(5)
    assert edges(build.found()) == [(k1, call, DEVICE_SYNC, call)]


def test_a_device_sync_without_a_record_and_two_devices_is_unresolved() -> None:
    build = Build()
    build.launch(0, 2, 1, 10, 20, stream=1, device=0)
    build.launch(2, 4, 2, 10, 20, stream=1, device=1)
    call = build.call(DEVICE_SYNC, 10, 40, 5)
    found = build.found()
    assert found.edges == ()
    assert found.unresolved == (UnresolvedSync(call, DEVICE_SYNC, SEVERAL_DEVICES),)


def test_a_device_sync_with_no_device_work_adds_nothing() -> None:
    build = Build()
    build.call(DEVICE_SYNC, 10, 40, 5)
    found = build.found()
    assert (found.edges, found.unresolved, found.calls, found.records) == ((), (), 1, ())


def test_a_device_sync_returning_before_one_stream_ends_keeps_the_others() -> None:
    # K1 (10..20) on stream 1 is waited for; K2 (10..50) on stream 2 ends after the call (40)
    build = Build()
    k1 = build.launch(0, 2, 1, 10, 20, stream=1)
    build.launch(2, 4, 2, 10, 50, stream=2)
    call = build.call(DEVICE_SYNC, 10, 40, 5)
    build.record(5, device=0)
    found = build.found()
    assert edges(found) == [(k1, call, DEVICE_SYNC, call)]
    assert found.unresolved == (UnresolvedSync(call, DEVICE_SYNC, CONTRADICTED),)


# --- the calls ------------------------------------------------------------------------------------


def test_a_trace_without_synchronising_calls_has_no_dependencies() -> None:
    build = Build()
    build.launch(0, 2, 1, 10, 20, stream=1)
    build.call("cudaEventQuery", 5, 6, 2)
    build.record(2, device=0, stream=1)
    assert build.found() is NO_SYNC_DEPENDENCIES
    assert SyncDependencies((), (), 0, ()) == NO_SYNC_DEPENDENCIES


def test_every_call_is_counted_and_reasons_are_tallied() -> None:
    # a stream sync, an event sync and a device sync without records; a stream wait
    build = Build()
    build.launch(0, 2, 1, 10, 20, stream=1)
    rows = [
        build.call(STREAM_SYNC, 30, 40, 5),
        build.call(EVENT_SYNC, 40, 50, 6),
        build.call(STREAM_WAIT, 50, 60, None),
        build.call(DEVICE_SYNC, 60, 70, 8),
    ]
    first = build.record(9, device=0, stream=1)
    second = build.record(10, device=0, stream=1)
    found = build.found()
    assert found.calls == 4
    assert found.records == (first, second)
    assert found.unresolved == (
        UnresolvedSync(rows[0], STREAM_SYNC, NO_RECORD),
        UnresolvedSync(rows[1], EVENT_SYNC, NO_RECORD),
        UnresolvedSync(rows[2], STREAM_WAIT, NO_RECORD),
    )
    assert found.reasons() == {NO_RECORD: 3}
    assert len(found.edges) == 1 and found.edges[0].call == DEVICE_SYNC


# --- random streams against the rule, by brute force ---------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 1),  # stream
            st.integers(0, 40),  # launch start
            st.integers(0, 10),  # launch length
            st.integers(0, 60),  # device start
            st.integers(0, 10),  # device length
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(0, 50),  # record start
    st.integers(0, 50),  # wait start
    st.integers(0, 20),  # wait length
)
def test_random_waits_follow_the_rule(
    ops: list[tuple[int, int, int, int, int]], record_at: int, wait_at: int, wait_len: int
) -> None:
    build = Build()
    rows = []
    for corr, (stream, launch, launch_len, start, length) in enumerate(ops, start=100):
        row = build.launch(
            launch, launch + launch_len, corr, start, start + length, stream, thread=corr
        )
        rows.append(row)
    build.call(RECORD_CALL, record_at, record_at + 1, 1)
    wait = build.call(STREAM_WAIT, wait_at, wait_at + wait_len, 2)
    build.record(2, device=0, stream=1, wait_on_stream=0, wait_on_cuda_event_record_corr_id=1)
    found = build.found()

    # the rule: the latest op (in stream order: device start, then row) of stream 0 launched
    # by the record's start; the earliest of stream 1 launched from the wait's end
    def key(i: int) -> tuple[int, int]:
        return (ops[i][3], rows[i])

    before = [i for i, op in enumerate(ops) if op[0] == 0 and op[1] + op[2] <= record_at]
    after = [i for i, op in enumerate(ops) if op[0] == 1 and op[1] >= wait_at + wait_len]
    expected: list[tuple[int, int, str, int]] = []
    why: list[str] = []
    if record_at > wait_at:
        why = [RECORD_LATE]
    elif before and after:
        src, dst = max(before, key=key), min(after, key=key)
        if ops[src][3] + ops[src][4] > ops[dst][3]:
            why = [CONTRADICTED]
        else:
            expected = [(rows[src], rows[dst], STREAM_WAIT, wait)]
    assert edges(found) == expected
    assert reasons(found) == why
