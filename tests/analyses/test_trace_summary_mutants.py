"""Trace summary figures against brute force: name totals, device and stream time, steps.

Written from the mutants of `analyses/trace_summary.py` the first tests let through. Traces on
a coarse integer grid (equal starts, touching and nested events are common) are summarized and
every figure is recounted in the test from the events: counts and totals per name, compute,
communication, memory, busy and their union per stream, per device and per step window (each a
set of integer time points), the order of names, devices and steps, and the kinds counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.device_waits import stream_waits
from irprof.analyses.trace_summary import (
    DeviceTime,
    NameTotals,
    StepDeviceTime,
    sum_by_name,
    summarize_trace,
)
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

COMPUTE = {EventKind.KERNEL, EventKind.DISPATCH}
COMMUNICATION = {EventKind.COLLECTIVE}
MEMORY = {EventKind.MEMCPY, EventKind.MEMSET}
DEVICE = COMPUTE | COMMUNICATION | MEMORY
# (pid, tid, process, thread): pids 1 and 3 share a process name, so they are one device;
# pid 2 is labelled "GPU 2" by Kineto's process labels; a thread name with spaces around it.
STREAMS = [
    (1, 7, "dev A", " s7 "),
    (1, 8, "dev A", "s8"),
    (2, 7, "dev B", "s7"),
    (3, 1, "dev A", "x"),
]
LABELS = {"process_labels:2": "GPU 2"}
KINDS = [
    EventKind.KERNEL,
    EventKind.DISPATCH,
    EventKind.COLLECTIVE,
    EventKind.MEMCPY,
    EventKind.MEMSET,
    EventKind.RUNTIME,
    EventKind.OTHER,
    EventKind.STEP,
    EventKind.COUNTER,
    EventKind.ENVELOPE,
]
NAMES = ["a", "b", "c", "d"]


@dataclass(frozen=True)
class Event:
    start: int
    dur: int
    stream: int
    name: int
    kind: EventKind

    @property
    def end(self) -> int:
        return self.start + self.dur


EVENTS = st.lists(
    st.builds(
        Event,
        st.integers(0, 12),
        st.integers(0, 6),
        st.integers(0, len(STREAMS) - 1),
        st.integers(0, len(NAMES) - 1),
        st.sampled_from(KINDS),
    ),
    max_size=14,
)


def build(events: list[Event]) -> Trace:
    builder = TraceBuilder("t.json")
    builder.metadata["sort_index"] = dict(LABELS)
    builder.metadata["source"] = "t.json"
    builder.metadata["format"] = "chrome"
    for pid, tid, process, thread in STREAMS:
        builder.track(pid, tid, process, thread)
    for event in events:
        builder.add(event.start, event.dur, event.stream, NAMES[event.name], event.kind)
    return builder.build()


def in_trace_order(events: list[Event]) -> list[Event]:
    """The builder's order: by start, longest first, ties in the order added."""
    return sorted(events, key=lambda event: (event.start, -event.dur))


def device_of(stream: int) -> str:
    pid, _tid, process, _thread = STREAMS[stream]
    return LABELS.get(f"process_labels:{pid}", process)


def points(spans: list[tuple[int, int, EventKind]], kinds: set[EventKind]) -> int:
    return len({t for start, end, kind in spans if kind in kinds for t in range(start, end)})


def expected_time(
    events: list[Event], device: str, stream: str, window: tuple[int, int] | None = None
) -> DeviceTime:
    spans = [(event.start, event.end, event.kind) for event in events]
    if window is not None:
        clipped = [(max(s, window[0]), min(e, window[1]), k) for s, e, k in spans]
        spans = [(s, e, k) for s, e, k in clipped if e > s]
        width = window[1] - window[0]
    else:
        width = max(e for _, e, _ in spans) - min(s for s, _, _ in spans)
    return DeviceTime(
        device=device,
        stream=stream,
        events=len(spans),
        window_ns=width,
        compute_ns=points(spans, COMPUTE),
        communication_ns=points(spans, COMMUNICATION),
        memory_ns=points(spans, MEMORY),
        busy_ns=points(spans, DEVICE),
        compute_or_comm_ns=points(spans, COMPUTE | COMMUNICATION),
    )


def top_level_steps(events: list[Event]) -> list[tuple[int, int]]:
    """Step markers no earlier kept marker overlaps; the longest of equal starts first."""
    kept: list[tuple[int, int]] = []
    spans = [(e.start, e.end) for e in events if e.kind == EventKind.STEP]
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


@settings(max_examples=150, deadline=None)
@given(EVENTS)
def test_device_stream_and_step_time_match_brute_force(events: list[Event]) -> None:
    summary = summarize_trace(build(events))
    device_events = [event for event in events if event.kind in DEVICE]
    used_streams = sorted({event.stream for event in device_events})
    assert summary.streams == tuple(
        expected_time(
            [event for event in device_events if event.stream == stream],
            device_of(stream),
            STREAMS[stream][3].strip(),
        )
        for stream in used_streams
    )
    devices = list(dict.fromkeys(device_of(stream) for stream in used_streams))
    assert summary.devices == tuple(
        expected_time([event for event in device_events if device_of(event.stream) == d], d, "")
        for d in devices
    )
    ordered = list(dict.fromkeys(device_of(e.stream) for e in in_trace_order(device_events)))
    windows = top_level_steps(events) if device_events else []
    assert summary.steps == tuple(
        StepDeviceTime(
            step,
            window[0],
            expected_time(
                [event for event in device_events if device_of(event.stream) == d], d, "", window
            ),
        )
        for step, window in enumerate(windows)
        for d in ordered
    )


@settings(max_examples=150, deadline=None)
@given(EVENTS, st.integers(1, 5))
def test_name_counts_totals_and_ranks_match_brute_force(events: list[Event], top: int) -> None:
    trace = build(events)
    summary = summarize_trace(trace, top=top)
    ordered = in_trace_order(events)
    timed = [event for event in ordered if event.kind != EventKind.COUNTER]
    envelope = {event.name for event in events if event.kind == EventKind.ENVELOPE}

    def ranked(rows: list[Event]) -> list[tuple[str, str, int, int]]:
        found = []
        for name in sorted({event.name for event in rows}):
            mine = [event for event in rows if event.name == name]
            first = next(event for event in ordered if event.name == name)
            found.append((NAMES[name], first.kind.label, len(mine), sum(e.dur for e in mine)))
        # Descending total, ties by the name's id (the order names were first added).
        ids = {NAMES[event.name]: trace.strings.index(NAMES[event.name]) for event in events}
        return sorted(found, key=lambda row: (-row[3], ids[row[0]]))[:top]

    def seen(rows: tuple[NameTotals, ...]) -> list[tuple[str, str, int, int]]:
        return [(row.name, row.kind, row.count, row.total_ns) for row in rows]

    assert seen(summary.top_by_total) == ranked([e for e in timed if e.name not in envelope])
    assert seen(summary.top_device) == ranked([e for e in timed if e.kind in DEVICE])
    kinds = [event.kind for event in events]
    assert summary.events_by_kind == {
        kind.label: kinds.count(kind) for kind in EventKind if kind in kinds
    }
    assert summary.events == len(events)
    assert summary.tracks == len({event.stream for event in events})
    assert summary.flows == 0
    if events:
        assert summary.span_start_ns == min(event.start for event in events)
        assert summary.span_end_ns == max(event.end for event in events)
    assert summary.source == "t.json"
    assert summary.format == "chrome"
    assert summary.waits == stream_waits(trace)


def test_self_time_subtracts_direct_children_on_the_same_track() -> None:
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "main")
    other = builder.track(1, 2, "host", "worker")
    builder.add(0, 100, host, "outer", EventKind.FRAMEWORK_OP)
    builder.add(10, 30, host, "inner", EventKind.FRAMEWORK_OP)
    builder.add(15, 5, host, "leaf", EventKind.FRAMEWORK_OP)  # inside inner: not outer's child
    builder.add(60, 40, host, "inner", EventKind.FRAMEWORK_OP)  # ends with outer
    builder.add(0, 100, other, "outer", EventKind.FRAMEWORK_OP)  # another track: no children
    builder.add(20, 0, host, "mark", EventKind.COUNTER)  # counters have no time
    builder.add(5, 7, host, "count", EventKind.COUNTER)
    summary = summarize_trace(builder.build(), top=10)
    by_self = {row.name: (row.count, row.total_ns, row.self_ns) for row in summary.top_by_self}
    # The self-time ranking still shows each name's total time (and its mean) beside the self.
    assert by_self == {
        "outer": (2, 200, (100 - 30 - 40) + 100),
        "inner": (2, 70, (30 - 5) + 40),
        "leaf": (1, 5, 5),
    }
    assert [row.mean_ns for row in summary.top_by_self] == [100, 35, 5]
    assert [row.name for row in summary.top_by_self] == ["outer", "inner", "leaf"]
    assert [row.name for row in summary.top_by_total] == ["outer", "inner", "leaf"]
    outer = summary.top_by_total[0]
    assert (outer.self_ns, outer.mean_ns, outer.kind) == (130, 100, "framework_op")
    assert summary.events_by_kind == {"framework_op": 5, "counter": 2}


def test_self_ranking_differs_from_total_ranking() -> None:
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "main")
    builder.add(0, 100, host, "wrapper", EventKind.FRAMEWORK_OP)
    builder.add(0, 90, host, "work", EventKind.FRAMEWORK_OP)
    summary = summarize_trace(builder.build(), top=1)
    assert [(row.name, row.self_ns) for row in summary.top_by_self] == [("work", 90)]
    assert [(row.name, row.total_ns) for row in summary.top_by_total] == [("wrapper", 100)]


def test_a_name_without_events_has_a_zero_mean() -> None:
    assert NameTotals("x", "kernel", 0, 0, 0).mean_ns == 0
    assert NameTotals("x", "kernel", 3, 10, 0).mean_ns == 3


def test_totals_past_int64_stay_exact() -> None:
    builder = TraceBuilder()
    longest = 2**62 - 1  # the longest duration a reader accepts
    for tid in range(3):
        builder.add(0, longest, builder.track(1, tid, "gpu", f"s{tid}"), "k", EventKind.KERNEL)
    summary = summarize_trace(builder.build())
    assert summary.top_by_total[0].total_ns == 3 * longest
    assert summary.top_by_self[0].self_ns == 3 * longest
    assert summary.top_device[0].total_ns == 3 * longest
    assert summary.top_device[0].mean_ns == longest


def test_sum_by_name_switches_to_python_ints_at_two_to_the_62() -> None:
    names = np.asarray([0, 1, 0], dtype=np.int64)
    below = np.asarray([2**61, 5, 2**61 - 1024], dtype=np.int64)  # 2**62 - 1019 in all
    total = sum_by_name(names, below, 3)
    assert total.dtype == np.int64
    assert total.tolist() == [2**62 - 1024, 5, 0]
    at = np.asarray([2**61, 0, 2**61], dtype=np.int64)
    total = sum_by_name(names, at, 3)
    assert total.dtype == object
    assert total.tolist() == [2**62, 0, 0]
    negative = np.asarray([-(2**61), 0, -(2**61)], dtype=np.int64)  # |values| decide
    assert sum_by_name(names, negative, 2).dtype == object
    wrap = np.asarray([2**62, 2**62, 1], dtype=np.int64)
    assert sum_by_name(np.asarray([0, 0, 1]), wrap, 2).tolist() == [2**63, 1]
    one = sum_by_name(np.asarray([1]), np.asarray([2**62], dtype=np.int64), 2)  # a single value
    assert one.dtype == object
    assert one.tolist() == [0, 2**62]
    empty = sum_by_name(np.asarray([], dtype=np.int64), np.asarray([], dtype=np.int64), 2)
    assert empty.dtype == np.int64
    assert empty.tolist() == [0, 0]


def test_device_time_properties_split_the_window() -> None:
    time = DeviceTime("GPU 0", "", 5, 100, 40, 30, 20, 70, 60)
    assert time.idle_ns == 30
    assert time.comm_hidden_ns == 40 + 30 - 60
    assert time.comm_hidden_fraction == 10 / 30
    assert time.exclusive_ns() == {"compute": 40, "communication": 20, "memory": 10, "idle": 30}
    assert sum(time.exclusive_ns().values()) == time.window_ns
    assert DeviceTime("GPU 0", "", 1, 10, 10, 0, 0, 10, 10).comm_hidden_fraction is None


def test_a_trace_without_device_work_has_no_device_or_step_time() -> None:
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "main")
    builder.add(0, 10, host, "step", EventKind.STEP)
    builder.add(2, 3, host, "op", EventKind.FRAMEWORK_OP)
    summary = summarize_trace(builder.build())
    assert (summary.devices, summary.streams, summary.steps, summary.top_device) == ((), (), (), ())
    assert summary.span_ns == 10
    empty = summarize_trace(TraceBuilder().build())
    assert (empty.events, empty.span_ns, empty.events_by_kind) == (0, 0, {})
    assert (empty.source, empty.format, empty.waits) == ("", "", ())  # no metadata


def test_the_summary_lists_the_waits_of_each_stream() -> None:
    builder = TraceBuilder()
    gpu = builder.track(1, 7, "GPU 0", "stream 7")
    builder.add(0, 10, gpu, "k1", EventKind.KERNEL)
    builder.add(30, 10, gpu, "k2", EventKind.KERNEL)  # 20 ns idle between the kernels
    trace = builder.build()
    waits = summarize_trace(trace).waits
    assert waits == stream_waits(trace)
    assert len(waits) == 1


def test_at_most_fifteen_names_by_default() -> None:
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "main")
    for number in range(16):
        builder.add(number * 10, 100 - number, host, f"op{number}", EventKind.KERNEL)
    summary = summarize_trace(builder.build())
    assert [row.name for row in summary.top_by_total] == [f"op{n}" for n in range(15)]
    assert len(summary.top_by_self) == len(summary.top_device) == 15


def test_a_counter_with_a_duration_holds_no_children() -> None:
    # Counters are samples: a duration on one must not make it the parent of the op starting
    # with it, which would leave the op's time in its real parent's self time.
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "main")
    builder.add(0, 10, host, "outer", EventKind.FRAMEWORK_OP)
    builder.add(3, 5, host, "memory", EventKind.COUNTER)
    builder.add(3, 1, host, "inner", EventKind.FRAMEWORK_OP)
    summary = summarize_trace(builder.build())
    by_self = {row.name: row.self_ns for row in summary.top_by_self}
    assert by_self == {"outer": 10 - 1, "inner": 1}
