"""Device streams' idle time split by what they waited for, checked against a nanosecond-by-
nanosecond count on random traces, and the launches, labels and boundaries on hand-built ones.

Written from the mutants of `analyses/device_waits.py`: its only tests were the trace summary's,
which compare it with itself. The expected figures here are worked out from the events each
case gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.device_waits import (
    SHORT_KERNEL_NS,
    StreamWaits,
    device_label,
    launches,
    stream_waits,
)
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

HOST_PID, DEVICE_PID = 1, 2
DEVICE_KINDS = (
    EventKind.KERNEL,
    EventKind.DISPATCH,
    EventKind.MEMCPY,
    EventKind.MEMSET,
    EventKind.COLLECTIVE,
)


@dataclass(frozen=True)
class Work:
    """A device event and how its launch is linked: "flow", "correlation" or "none"."""

    stream: int
    start: int
    dur: int
    link: str
    lead: int  # launch start = start - lead
    kind: EventKind = EventKind.KERNEL


def build(works: list[Work], labels: dict[str, object] | None = None) -> Trace:
    """Device events `k<i>` on streams of pid 2, each launch `launch<i>` on the host's track."""
    builder = TraceBuilder()
    if labels is not None:
        builder.metadata["sort_index"] = labels
    host = builder.track(HOST_PID, 1, "host", "main")
    for number, work in enumerate(works):
        stream = builder.track(DEVICE_PID, 10 + work.stream, "gpu", f" stream {work.stream} ")
        args = {"correlation": number} if work.link == "correlation" else None
        device = builder.add(work.start, work.dur, stream, f"k{number}", work.kind, args)
        if work.link != "none":
            launch = builder.add(work.start - work.lead, 1, host, f"launch{number}",
                                 EventKind.RUNTIME, args)  # fmt: skip
            if work.link == "flow":
                builder.flow(launch, device, number)
    return builder.build()


def launch_start(trace: Trace, number: int) -> int:
    rows = [row for row in range(len(trace)) if trace.name_of(row) == f"launch{number}"]
    return int(trace.ts_ns[rows[0]])


def brute_force(trace: Trace, works: list[Work], stream: int) -> StreamWaits:
    """One stream's waits counted one nanosecond at a time."""
    mine = [
        (row, int(trace.name_of(row)[1:]))
        for row in range(len(trace))
        if trace.name_of(row).startswith("k")
        and works[int(trace.name_of(row)[1:])].stream == stream
    ]
    spans = [(int(trace.ts_ns[row]), int(trace.end_ns[row]), row, n) for row, n in mine]
    first, last = min(s for s, _, _, _ in spans), max(e for _, e, _, _ in spans)
    host = kernel = unexplained = 0
    for t in range(first, last):
        if any(s <= t < e for s, e, _, _ in spans):
            continue
        # the gap ends at the next start; on a tie, the longer event (then the earlier row)
        nxt = min(((s, s - e, row), n) for s, e, row, n in spans if s > t)[1]
        if works[nxt].link == "none":
            unexplained += 1
        elif t < launch_start(trace, nxt):
            host += 1
        else:
            kernel += 1
    delays = [s - launch_start(trace, n) for s, _, _, n in spans if works[n].link != "none"]
    queue = [(launch_start(trace, n), e) for _, e, _, n in spans if works[n].link != "none"]
    peak, mean = 0, 0.0
    if queue:
        low, high = min(s for s, _ in queue), max(e for _, e in queue)
        counts = [sum(s <= t < e for s, e in queue) for t in range(low, high)]
        peak = max(counts, default=0)
        mean = sum(counts) / (high - low) if high > low else float(peak)
    return StreamWaits(
        device="GPU 0",
        stream=f"stream {stream}",
        events=len(spans),
        idle_ns=host + kernel + unexplained,
        host_wait_ns=host,
        kernel_wait_ns=kernel,
        unexplained_ns=unexplained,
        launched=len(delays),
        launch_delay_median_ns=int(median(delays)) if delays else None,
        launch_delay_max_ns=max(delays) if delays else None,
        short_events=sum(e - s < 5 for s, e, _, _ in spans),
        queue_max=peak,
        queue_mean=mean,
    )


works_strategy = st.lists(
    st.builds(
        Work,
        stream=st.integers(0, 1),
        start=st.integers(30, 70),
        dur=st.integers(0, 12),
        link=st.sampled_from(["flow", "correlation", "none"]),
        lead=st.integers(0, 30),
        kind=st.sampled_from(DEVICE_KINDS),
    ),
    min_size=1,
    max_size=7,
)


@settings(max_examples=80, deadline=None)
@given(works_strategy)
def test_waits_match_a_count_of_each_idle_nanosecond(works: list[Work]) -> None:
    trace = build(works, {f"process_labels:{DEVICE_PID}": "GPU 0"})
    streams = dict.fromkeys(work.stream for work in works)  # tracks in order of appearance
    assert stream_waits(trace, short_ns=5) == tuple(
        brute_force(trace, works, stream) for stream in streams
    )


def test_a_gap_splits_at_the_launch_into_host_and_kernel_wait() -> None:
    works = [
        Work(0, 100, 50, "flow", 10),  # busy 100..150
        Work(0, 200, 10, "flow", 20),  # launched at 180: host 150..180, kernel 180..200
        Work(0, 300, 10, "correlation", 200),  # launched at 100, before its gap: all kernel
        Work(0, 400, 10, "none", 0),  # no launch: 90 unexplained
    ]
    (waits,) = stream_waits(build(works, {f"process_labels:{DEVICE_PID}": "GPU 0"}))
    assert waits == StreamWaits(
        device="GPU 0",
        stream="stream 0",
        events=4,
        idle_ns=30 + 20 + 90 + 90,
        host_wait_ns=30,
        kernel_wait_ns=20 + 90,
        unexplained_ns=90,
        launched=3,
        launch_delay_median_ns=20,  # of 10, 20, 200
        launch_delay_max_ns=200,
        short_events=4,  # all under 10 us
        # launch spans 90..150, 180..210, 100..310: two open over 100..150 and 180..210
        queue_max=2,
        queue_mean=((150 - 90) + (210 - 180) + (310 - 100)) / (310 - 90),
    )


def test_short_events_are_those_under_the_threshold() -> None:
    works = [
        Work(0, 0, SHORT_KERNEL_NS - 1, "none", 0),
        Work(0, 20_000, SHORT_KERNEL_NS, "none", 0),
    ]
    (waits,) = stream_waits(build(works))
    assert waits.short_events == 1
    assert waits.unexplained_ns == 20_000 - (SHORT_KERNEL_NS - 1)
    assert waits.launch_delay_median_ns is None and waits.launch_delay_max_ns is None
    assert (waits.launched, waits.queue_max, waits.queue_mean) == (0, 0, 0.0)


def test_an_even_count_of_delays_takes_the_mean_of_the_middle_two_truncated() -> None:
    works = [Work(0, 100, 5, "flow", 1), Work(0, 200, 5, "flow", 4)]
    (waits,) = stream_waits(build(works))
    assert waits.launch_delay_median_ns == 2  # (1 + 4) / 2 = 2.5
    assert waits.launch_delay_max_ns == 4


def test_a_launch_span_ending_as_another_starts_is_not_counted_twice() -> None:
    # launches at 0 and 10; the first kernel ends at 10, as the second launch starts
    works = [Work(0, 5, 5, "flow", 5), Work(0, 15, 5, "flow", 5)]
    (waits,) = stream_waits(build(works))
    assert waits.queue_max == 1
    assert waits.queue_mean == 1.0  # one open all the way from 0 to 20


def test_launch_spans_of_no_length_give_the_peak_as_the_mean() -> None:
    (waits,) = stream_waits(build([Work(0, 5, 0, "flow", 0)]))
    assert (waits.queue_max, waits.queue_mean) == (0, 0.0)


def test_a_trace_without_device_events_has_no_streams() -> None:
    builder = TraceBuilder()
    builder.add(0, 10, builder.track(1, 1), "launch", EventKind.RUNTIME)
    assert stream_waits(builder.build()) == ()


def test_streams_are_given_in_track_order_with_their_event_counts() -> None:
    works = [Work(1, 0, 5, "none", 0), Work(0, 0, 5, "none", 0), Work(1, 10, 5, "none", 0)]
    waits = stream_waits(build(works))
    assert [(w.stream, w.events, w.unexplained_ns) for w in waits] == [
        ("stream 1", 2, 5),
        ("stream 0", 1, 0),
    ]


def test_launches_prefer_flows_and_take_the_first_runtime_row_of_a_correlation() -> None:
    builder = TraceBuilder()
    host, gpu = builder.track(1, 1), builder.track(2, 2)
    early = builder.add(0, 1, host, "early", EventKind.RUNTIME, {"correlation": 7})
    late = builder.add(5, 1, host, "late", EventKind.RUNTIME, {"correlation": 7})
    other = builder.add(6, 1, host, "other", EventKind.RUNTIME, {"correlation": 8})
    python = builder.add(7, 1, host, "python", EventKind.PYTHON, {"correlation": 9})
    flag = builder.add(8, 1, host, "flag", EventKind.RUNTIME, {"correlation": True})
    by_flow = builder.add(20, 5, gpu, "by_flow", EventKind.KERNEL, {"correlation": 7})
    by_id = builder.add(30, 5, gpu, "by_id", EventKind.MEMCPY, {"correlation": 7})
    from_python = builder.add(40, 5, gpu, "from_python", EventKind.KERNEL, {"correlation": 9})
    by_bool = builder.add(50, 5, gpu, "by_bool", EventKind.KERNEL, {"correlation": 1})
    to_host = builder.add(60, 5, host, "to_host", EventKind.RUNTIME)
    builder.flow(other, by_flow, 1)
    builder.flow(python, from_python, 2)  # not a runtime row: no launch
    builder.flow(early, to_host, 3)  # not a device row
    del late, flag, by_id, by_bool, to_host
    trace = builder.build()
    row = {trace.name_of(r): r for r in range(len(trace))}
    assert launches(trace) == {
        row["by_flow"]: row["other"],
        row["by_id"]: row["early"],  # True is not the id 1; "late" repeats 7
    }


def test_launches_by_flow_alone() -> None:
    trace = build([Work(0, 50, 5, "flow", 10), Work(0, 60, 5, "flow", 3)])
    row = {trace.name_of(r): r for r in range(len(trace))}
    assert launches(trace) == {row["k0"]: row["launch0"], row["k1"]: row["launch1"]}


def test_the_device_is_its_process_label_else_its_process_name() -> None:
    trace = build([Work(0, 0, 5, "none", 0)], {f"process_labels:{DEVICE_PID}": "GPU 3"})
    track = int(trace.track[0])
    assert device_label(trace, track) == "GPU 3"
    assert device_label(build([Work(0, 0, 5, "none", 0)]), track) == "gpu"
    empty = build([Work(0, 0, 5, "none", 0)], {f"process_labels:{DEVICE_PID}": ""})
    assert device_label(empty, track) == "gpu"
    other = build([Work(0, 0, 5, "none", 0)], {"process_labels:9": "GPU 9"})
    assert device_label(other, track) == "gpu"
    listed = build([Work(0, 0, 5, "none", 0)])
    listed.metadata["sort_index"] = ["GPU 0"]
    assert device_label(listed, track) == "gpu"
