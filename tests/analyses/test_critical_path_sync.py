"""The critical path follows CUDA event waits and host syncs: HTA's public multi-stream trace
checked against dependencies found here straight from its JSON; small traces built on the
boundaries and random programs run on a simulated GPU (their dependencies known by
construction), their paths found by brute force over every chain."""

from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.critical_path import CriticalPath, critical_path
from irprof.analyses.cuda_sync import sync_dependencies
from irprof.errors import UsageError
from irprof.event_dag import build_event_dag
from irprof.readers import read_trace
from irprof.renderers.critical_path_table import critical_path_table
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

PUBLIC = Path(__file__).parents[1] / "fixtures" / "traces" / "public"
EVENT_SYNC_TRACE = PUBLIC / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


# --- the public trace, with an oracle read from its raw JSON -------------------------------


def _raw_events() -> list[dict[str, Any]]:
    with gzip.open(EVENT_SYNC_TRACE, "rt") as handle:
        document = json.load(handle)
    return [event for event in document["traceEvents"] if event.get("ph") == "X"]


def _key(event: dict[str, Any]) -> tuple[str, int, int]:
    """(name, start ns, duration ns): how an event of the JSON is found in the path."""
    return (event["name"], round(event["ts"] * 1000), round(event["dur"] * 1000))


def _end(event: dict[str, Any]) -> float:
    return float(event["ts"] + event["dur"])


@dataclass
class _Raw:
    """The JSON's host calls by correlation and its device ops with their launches."""

    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    syncs: dict[int, dict[str, Any]] = field(default_factory=dict)  # cuda_sync by correlation
    ops: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # op, launch


def _raw() -> _Raw:
    raw = _Raw()
    events = _raw_events()
    for event in events:
        if event.get("cat") == "cuda_runtime":
            raw.calls[event["args"]["correlation"]] = event
        elif event.get("cat") == "cuda_sync":
            raw.syncs[event["args"]["correlation"]] = event
    for event in events:
        if event.get("cat") in DEVICE_CATEGORIES:
            raw.ops.append((event, raw.calls[event["args"]["correlation"]]))
    return raw


def _allowed_dependencies(raw: _Raw) -> set[tuple[tuple[str, int, int], tuple[str, int, int]]]:
    """Every (op, dependent) pair a wait or sync of the JSON allows: any op launched before the
    event was recorded (or the sync called) on the stream waited on, and any op launched after
    the wait on the waiting stream (or the sync call itself)."""
    allowed = set()
    for call in raw.calls.values():
        sync = raw.syncs.get(call["args"]["correlation"])
        if call["name"] == "cudaStreamWaitEvent" and sync is not None:
            record = raw.calls[sync["args"]["wait_on_cuda_event_record_corr_id"]]
            for op, launch in raw.ops:
                for later, later_launch in raw.ops:
                    if (
                        op["args"]["stream"] == sync["args"]["wait_on_stream"]
                        and _end(launch) <= record["ts"]
                        and later["args"]["stream"] == sync["args"]["stream"]
                        and later_launch["ts"] >= _end(call)
                    ):
                        allowed.add((_key(op), _key(later)))
        elif call["name"] == "cudaDeviceSynchronize":
            for op, launch in raw.ops:
                if _end(launch) <= call["ts"]:
                    allowed.add((_key(op), _key(call)))
    return allowed


def _public_path() -> tuple[CriticalPath, Trace]:
    trace = read_trace(str(EVENT_SYNC_TRACE))
    return critical_path(build_event_dag(trace), trace=trace), trace


def test_public_trace_path_crosses_only_waits_and_syncs_the_json_has() -> None:
    path, _ = _public_path()
    raw = _raw()
    allowed = _allowed_dependencies(raw)
    by_node = {event.node: event for event in path.events}
    crossed = {
        (
            (by_node[src].name, by_node[src].ts_ns, by_node[src].dur_ns),
            (by_node[dst].name, by_node[dst].ts_ns, by_node[dst].dur_ns),
        )
        for src, dst in path.sync_links
    }
    assert crossed, "the path should cross at least one sync dependency"
    assert crossed <= allowed
    # one cudaStreamWaitEvent and one cudaDeviceSynchronize; the event queries are not syncs
    assert path.syncs_followed and path.unresolved_syncs == 0
    names = [call["name"] for call in raw.calls.values()]
    assert names.count("cudaStreamWaitEvent") == 1 and names.count("cudaDeviceSynchronize") == 1


def test_public_trace_path_length_is_bounded_by_a_chain_through_the_synced_kernel() -> None:
    """Lower bound: the main thread's top-level work (less the device time it waited through)
    up to the launch of the last kernel the device sync waits for, that kernel, and the sync
    call's time after the kernel ends."""
    path, _ = _public_path()
    raw = _raw()
    events = _raw_events()
    assert path.length_ns <= path.span_ns
    sync = next(call for call in raw.calls.values() if call["name"] == "cudaDeviceSynchronize")
    waited = [
        (op, launch)
        for op, launch in raw.ops
        if _end(launch) <= sync["ts"] and sync["ts"] < _end(op) <= _end(sync)
    ]
    assert len(waited) == 1
    kernel, launch = waited[0]
    host = [
        event
        for event in events
        if event["tid"] == sync["tid"] and event.get("cat") in ("cpu_op", "cuda_runtime")
    ]
    top = [
        event
        for event in host
        if not any(
            other is not event and other["ts"] <= event["ts"] and _end(event) <= _end(other)
            for other in host
        )
    ]
    holder = next(event for event in top if event["ts"] <= launch["ts"] <= _end(event))

    def handed_off(event: dict[str, Any]) -> float:
        """Device time an event waited through: ops it launched that ended inside it (the
        model does not count an event's time as work while work it handed off runs)."""
        return sum(
            float(op["dur"])
            for op, op_launch in raw.ops
            if event["ts"] <= op_launch["ts"] <= _end(event) and _end(op) <= _end(event)
        )

    before = sum(event["dur"] - handed_off(event) for event in top if _end(event) <= holder["ts"])
    lead = _end(launch) - holder["ts"] - handed_off(holder)
    bound = before + lead + kernel["dur"] + (_end(sync) - _end(kernel))
    assert path.length_ns >= round(bound * 1000)
    # without the sync dependencies the path cannot reach the call's end through the kernel
    plain = critical_path(build_event_dag(read_trace(str(EVENT_SYNC_TRACE))))
    assert plain.length_ns < round(bound * 1000)


def test_public_trace_table_reports_the_syncs() -> None:
    path, _ = _public_path()
    table = critical_path_table(path)
    assert "CUDA syncs:" in str(table.caption) and "1 on the path" in str(table.caption)


# --- small traces on the boundaries ----------------------------------------------------------


@dataclass(frozen=True)
class Ev:
    """One event of a hand-built trace: host calls on threads, device ops on streams."""

    name: str
    start: int
    end: int
    thread: int = 0  # host thread (used when stream < 0)
    stream: int = -1  # device stream (a device op) or -1 (a host call)
    corr: int | None = None
    sync: dict[str, Any] | None = None  # a device-side sync record's args (track: `stream`,
    # or a track of its own)


def build(events: list[Ev]) -> Trace:
    builder = TraceBuilder()
    rows = {}
    for number, event in enumerate(events):
        args: dict[str, Any] = {}
        if event.sync is not None:
            track = builder.track(0, event.stream if event.stream >= 0 else 99)
            kind = EventKind.RUNTIME
            args = {"device": 0, "correlation": event.corr, **event.sync}
        elif event.stream >= 0:
            track = builder.track(0, event.stream)
            kind = EventKind.KERNEL
            args = {"device": 0, "stream": event.stream, "correlation": event.corr}
        else:
            track = builder.track(1, event.thread)
            kind = EventKind.RUNTIME
            if event.corr is not None:
                args = {"correlation": event.corr}
        rows[number] = builder.add(
            event.start, event.end - event.start, track, event.name, kind, args
        )
    for number, event in enumerate(events):  # Kineto's ac2g: call -> device op or sync record
        if event.stream >= 0 or event.sync is not None:
            launch = next(
                (
                    i
                    for i, other in enumerate(events)
                    if other.stream < 0 and other.sync is None and other.corr == event.corr
                ),
                None,
            )
            if launch is not None:
                builder.flow(rows[launch], rows[number], number)
    return builder.build(sort=False)


def brute_force(events: list[Ev], deps: list[tuple[int, int]]) -> tuple[int, list[str]]:
    """Longest path by enumerating every chain of points (event starts and ends). Every event
    is a top-level leaf; links: an event's start to its end (its work: its duration less the
    time it blocked in a sync), the next event on its track, launch -> op, and the sync
    dependencies `deps` (into the dependent's start, or into a blocked call's end)."""
    work = [e for e in events if e.sync is None]  # sync records are no work and have no links
    index = {id(e): i for i, e in enumerate(work)}
    dep_pairs = [(index[id(events[s])], index[id(events[d])]) for s, d in deps]
    blocked: dict[int, int] = {}  # a blocked call -> when the last op it waited for ended
    for src, dst in dep_pairs:
        if work[src].end > work[dst].start:
            blocked[dst] = max(blocked.get(dst, 0), work[src].end)
    links: dict[tuple[int, int], list[tuple[tuple[int, int], int]]] = {}

    def link(a: tuple[int, int], b: tuple[int, int], weight: int) -> None:
        links.setdefault(a, []).append((b, weight))

    for i, e in enumerate(work):
        link((i, 0), (i, 1), e.end - max(e.start, min(blocked.get(i, e.start), e.end)))
        track = (e.stream, e.thread)
        after = [
            j
            for j, o in enumerate(work)
            if (o.stream, o.thread) == track and o.start >= e.end and j != i
        ]
        if after:
            link((i, 1), (min(after, key=lambda j: (work[j].start, j)), 0), 0)
        if e.stream < 0 and e.corr is not None:
            for j, o in enumerate(work):
                if o.stream >= 0 and o.corr == e.corr:
                    link((i, 1) if e.end <= o.start else (i, 0), (j, 0), 0)
    for src, dst in dep_pairs:
        if work[src].end <= work[dst].start:
            link((src, 1), (dst, 0), 0)
        else:
            link((src, 1), (dst, 1), work[dst].end - blocked[dst])

    @functools.cache  # every chain from `point` is still tried; each point's best kept once
    def walk(point: tuple[int, int]) -> tuple[int, list[int]]:
        best, chain = 0, [point[0]]
        for nxt, weight in links.get(point, []):
            length, rest = walk(nxt)
            if weight + length > best:
                best, chain = weight + length, [point[0], *rest]
        return best, chain

    length, chain = max((walk((i, 0)) for i in range(len(work))), key=lambda found: found[0])
    return length, [work[i].name for i in dict.fromkeys(chain)]


def wait_record(stream: int, on_stream: int, record_corr: int) -> dict[str, Any]:
    return {
        "cuda_sync_kind": "Stream Wait Event",
        "stream": stream,
        "wait_on_stream": on_stream,
        "wait_on_cuda_event_record_corr_id": record_corr,
    }


def check(events: list[Ev], expected_deps: list[tuple[int, int]], unresolved: int) -> CriticalPath:
    """Build, find the syncs and the path; compare with the expected dependencies (event
    indices) and the brute-force path."""
    trace = build(events)
    found = sync_dependencies(trace)
    assert sorted((edge.src, edge.dst) for edge in found.edges) == sorted(expected_deps)
    assert len(found.unresolved) == unresolved
    path = critical_path(build_event_dag(trace), trace=trace)
    length, _ = brute_force(events, expected_deps)
    assert path.length_ns == length
    assert path.unresolved_syncs == unresolved
    assert path.length_ns <= path.span_ns
    return path


def stream_wait(record_at: int, wait_at: int) -> list[Ev]:
    """Thread 0 launches A on stream 1 and records an event; thread 1 makes stream 2 wait on
    it and launches B there. A is long, so B (and the path) must wait for it."""
    return [
        Ev("launchA", 0, 10, corr=1),
        Ev("A", 10, 500, stream=1, corr=1),
        Ev("cudaEventRecord", record_at, record_at + 5, corr=2),
        Ev("cudaStreamWaitEvent", wait_at, wait_at + 5, thread=1, corr=3),
        Ev("Stream Wait Event", wait_at, wait_at + 5, corr=3, sync=wait_record(2, 1, 2)),
        Ev("launchB", wait_at + 10, wait_at + 20, thread=1, corr=4),
        Ev("B", 500, 600, stream=2, corr=4),
    ]


def test_a_wait_whose_record_happens_exactly_when_the_wait_is_issued() -> None:
    path = check(stream_wait(record_at=20, wait_at=20), [(1, 6)], unresolved=0)
    assert [e.name for e in path.events] == ["launchA", "A", "B"] and path.length_ns == 600
    assert len(path.sync_links) == 1


def test_a_record_issued_after_the_wait_is_unresolved() -> None:
    path = check(stream_wait(record_at=21, wait_at=20), [], unresolved=1)
    assert path.sync_links == ()


def test_an_op_whose_launch_ends_exactly_at_the_record_is_waited_for() -> None:
    # K0 (ending exactly when the event is recorded) and then K1 run on stream 1; K1's launch
    # call ends exactly when the record call starts, so the event captures K1: C, launched on
    # stream 2 after the wait, depends on K1 and starts exactly when K1 ends.
    events = [
        Ev("launch0", 0, 4, corr=1),
        Ev("K0", 4, 12, stream=1, corr=1),
        Ev("launch1", 4, 12, corr=2),
        Ev("K1", 12, 50, stream=1, corr=2),
        Ev("cudaEventRecord", 12, 14, thread=2, corr=3),
        Ev("launch2", 14, 20, corr=4),
        Ev("K2", 50, 900, stream=1, corr=4),
        Ev("cudaStreamWaitEvent", 30, 35, thread=1, corr=5),
        Ev("Stream Wait Event", 30, 35, corr=5, sync=wait_record(2, 1, 3)),
        Ev("launchC", 40, 45, thread=1, corr=6),
        Ev("C", 50, 300, stream=2, corr=6),
    ]
    path = check(events, [(3, 10)], unresolved=0)
    assert path.sync_links == ()  # K2 (880 ns) outweighs C: the path does not need the wait
    # K1's launch ending one ns after the record began: only K0 is known to precede the record
    events[2] = Ev("launch1", 4, 13, corr=2)
    check(events, [(1, 10)], unresolved=0)


def test_the_wait_depends_on_the_record_it_names_among_two_of_the_same_event() -> None:
    # Two records of the same CUDA event; Kineto names the latest one before the wait (corr 4).
    events = [
        Ev("launch1", 0, 10, corr=1),
        Ev("K1", 10, 50, stream=1, corr=1),
        Ev("cudaEventRecord", 12, 14, corr=2),
        Ev("launch2", 14, 20, corr=3),
        Ev("K2", 50, 400, stream=1, corr=3),
        Ev("cudaEventRecord", 22, 24, corr=4),
        Ev("cudaStreamWaitEvent", 30, 32, thread=1, corr=5),
        Ev("Stream Wait Event", 30, 32, corr=5, sync=wait_record(2, 1, 4)),
        Ev("launchC", 40, 45, thread=1, corr=6),
        Ev("C", 400, 450, stream=2, corr=6),
    ]
    path = check(events, [(4, 9)], unresolved=0)
    assert [e.name for e in path.events][-2:] == ["K2", "C"]
    # naming the first record instead: the wait depends on K1 only
    events[7] = Ev("Stream Wait Event", 30, 32, corr=5, sync=wait_record(2, 1, 2))
    events[9] = Ev("C", 60, 110, stream=2, corr=6)
    check(events, [(1, 9)], unresolved=0)


def test_a_wait_on_an_event_never_recorded_adds_no_edge() -> None:
    events = stream_wait(record_at=20, wait_at=20)
    events[4] = Ev("Stream Wait Event", 20, 25, corr=3, sync=wait_record(2, -1, -1))
    path = check(events, [], unresolved=1)
    assert path.unresolved_reasons and "never recorded" in path.unresolved_reasons[0][0]
    # and when the named record is not in the trace
    events[4] = Ev("Stream Wait Event", 20, 25, corr=3, sync=wait_record(2, 1, 77))
    check(events, [], unresolved=1)


def test_a_host_sync_blocks_until_the_kernel_ends_and_is_not_work_meanwhile() -> None:
    # The stream sync call starts at 30 and returns at 520; K ends at 500: the call's work is
    # 20 ns (after K), the path runs through K.
    events = [
        Ev("launch", 0, 10, corr=1),
        Ev("K", 10, 500, stream=1, corr=1),
        Ev("cudaStreamSynchronize", 30, 520, corr=2),
        Ev("Stream Sync", 30, 520, corr=2, sync={"cuda_sync_kind": "Stream Sync", "stream": 1}),
        Ev("after", 530, 560, corr=None),
    ]
    path = check(events, [(1, 2)], unresolved=0)
    assert [e.name for e in path.events] == ["launch", "K", "cudaStreamSynchronize", "after"]
    assert {e.name: e.self_ns for e in path.events}["cudaStreamSynchronize"] == 20
    # without the sync record the stream is unknown: unresolved, the call's time is work
    check(events[:3] + events[4:], [], unresolved=1)


def test_a_long_sync_record_is_neither_work_nor_what_the_call_waits_for() -> None:
    # Kineto's record of a sync spans the call; it mirrors the blocking, it is not device work
    events = [
        Ev("launch", 0, 10, corr=1),
        Ev("K", 10, 500, stream=1, corr=1),
        Ev("cudaStreamSynchronize", 20, 1000, corr=2),
        Ev("Stream Sync", 20, 1000, corr=2, sync={"cuda_sync_kind": "Stream Sync", "stream": 1}),
    ]
    path = check(events, [(1, 2)], unresolved=0)
    assert path.length_ns == 1000 and "Stream Sync" not in [e.name for e in path.events]


def test_a_sync_record_on_the_waiting_stream_adds_no_work_to_it() -> None:
    # As Kineto writes it, the record of a long cudaStreamWaitEvent sits on stream 2 between P
    # and C: the stream's chain goes on through it, but its time is the host call's.
    events = [
        Ev("launchP", 0, 5, corr=1),
        Ev("P", 5, 20, stream=2, corr=1),
        Ev("launchA", 5, 10, corr=2),
        Ev("A", 20, 30, stream=1, corr=2),
        Ev("cudaEventRecord", 10, 12, corr=3),
        Ev("cudaStreamWaitEvent", 25, 400, thread=1, corr=4),
        Ev("Stream Wait Event", 25, 400, stream=2, corr=4, sync=wait_record(2, 1, 3)),
        Ev("launchC", 400, 405, thread=1, corr=5),
        Ev("C", 405, 455, stream=2, corr=5),
    ]
    path = check(events, [(3, 8)], unresolved=0)
    assert [e.name for e in path.events] == ["cudaStreamWaitEvent", "launchC", "C"]


def test_a_device_sync_waits_for_the_last_op_of_every_stream() -> None:
    events = [
        Ev("launch1", 0, 10, corr=1),
        Ev("K1", 10, 300, stream=1, corr=1),
        Ev("launch2", 10, 20, corr=2),
        Ev("K2", 20, 200, stream=2, corr=2),
        Ev("launch3", 20, 30, corr=3),
        Ev("K3", 300, 310, stream=1, corr=3),
        Ev("cudaDeviceSynchronize", 40, 320, corr=4),
        Ev("late", 330, 340, corr=5),  # launched after the sync began: not waited for
        Ev("K4", 340, 900, stream=2, corr=5),
    ]
    check(events, [(5, 6), (3, 6)], unresolved=0)


def test_the_trace_must_be_the_dags() -> None:
    small = build([Ev("a", 0, 10)])
    big = build([Ev(f"e{i}", i * 10, i * 10 + 5) for i in range(5)])
    with pytest.raises(UsageError, match="not the one the DAG was built from"):
        critical_path(build_event_dag(big), trace=small)


# --- random programs run on a simulated GPU: the dependencies are known by construction -----

Step = tuple[str, int, int, int]  # (what, stream, event or other stream, duration)
steps = st.lists(
    st.tuples(
        st.sampled_from(["launch", "launch", "launch", "record", "wait", "ssync", "dsync"]),
        st.integers(1, 3),
        st.integers(0, 3),
        st.integers(1, 60),
    ),
    min_size=1,
    max_size=14,
)


def simulate(program: list[Step]) -> tuple[list[Ev], list[tuple[int, int]], int]:
    """One host thread runs `program`; each stream runs its kernels in launch order, after
    every event it was told to wait for. Returns the events, the true dependencies (indices)
    and how many waits name an event never recorded."""
    events: list[Ev] = []
    clock, corr = 0, 0
    free: dict[int, int] = {}  # stream -> when its last kernel ends
    last: dict[int, int] = {}  # stream -> index of its last launched kernel
    gate: dict[int, int] = {}  # stream -> its next kernel may not start before
    pending: dict[int, list[int]] = {}  # stream -> kernels its next kernel waits for
    recorded: dict[int, tuple[int, int, int | None]] = {}  # event -> (corr, stream, kernel)
    deps: list[tuple[int, int]] = []
    never = 0

    def call(name: str, length: int) -> int:
        nonlocal clock, corr
        corr += 1
        events.append(Ev(name, clock, clock + length, corr=corr))
        clock += length + 1
        return len(events) - 1

    for what, stream, other, dur in program:
        if what == "launch":
            launch = call("cudaLaunchKernel", 3)
            start = max(events[launch].end, free.get(stream, 0), gate.get(stream, 0))
            events.append(Ev(f"K{len(events)}", start, start + dur, stream=stream, corr=corr))
            deps.extend((source, len(events) - 1) for source in pending.pop(stream, []))
            free[stream], last[stream] = start + dur, len(events) - 1
        elif what == "record":
            call("cudaEventRecord", 2)
            recorded[other] = (corr, stream, last.get(stream))
        elif what == "wait":
            waiter = stream % 3 + 1
            record_corr, on_stream, source = recorded.get(other, (-1, -1, None))
            index = call("cudaStreamWaitEvent", 2)
            args = wait_record(waiter, on_stream, record_corr)
            never += record_corr < 0
            if source is not None:  # else nothing recorded to wait for (or never recorded)
                gate[waiter] = max(gate.get(waiter, 0), events[source].end)
                pending.setdefault(waiter, []).append(source)
            sync = Ev(
                "Stream Wait Event", events[index].start, events[index].end, corr=corr, sync=args
            )
            events.append(sync)
        else:
            synced = [stream] if what == "ssync" else sorted(last)
            waits_for = [last[s] for s in synced if s in last]
            end = max([clock + 2, *(events[k].end + 1 for k in waits_for)])
            name = "cudaStreamSynchronize" if what == "ssync" else "cudaDeviceSynchronize"
            index = call(name, end - clock)
            kind = {"cuda_sync_kind": "Stream Sync" if what == "ssync" else "Context Sync"}
            record = Ev(
                "sync record",
                events[index].start,
                events[index].end,
                corr=corr,
                sync={**kind, "stream": stream if what == "ssync" else -1},
            )
            events.append(record)
            deps.extend((k, index) for k in waits_for)
    return events, deps, never


@settings(max_examples=80, deadline=None)
@given(steps)
def test_simulated_programs_give_their_true_dependencies_and_brute_force_paths(
    program: list[Step],
) -> None:
    events, deps, never = simulate(program)
    if not any(event.sync is None for event in events):
        return
    check(events, deps, unresolved=never)
