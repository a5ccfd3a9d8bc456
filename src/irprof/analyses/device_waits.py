"""Why a device stream sat idle: waiting for the host to launch, or for a launched kernel to start.

Each idle gap of a stream ends when its next device event starts. When that event's launch (the
host runtime call linked to it by a flow, else by a shared `correlation` argument, as Kineto
writes both) came after the gap began, the part up to the launch is host wait and the rest kernel
wait (launched, not yet running); a launch before the gap makes it all kernel wait; without a
known launch the gap is unexplained. The three add up to the stream's idle time. See
docs/traces.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from irprof.trace.model import DEVICE_KINDS, EventKind, Trace

I64 = npt.NDArray[np.int64]

SHORT_KERNEL_NS = 10_000  # a kernel shorter than this is dominated by its launch overhead
CORRELATION_ARG = "correlation"


@dataclass(frozen=True)
class StreamWaits:
    """The idle time of one device stream split by what it waited for, and launch figures."""

    device: str
    stream: str
    events: int
    idle_ns: int  # gaps between the stream's busy intervals, first start to last end
    host_wait_ns: int
    kernel_wait_ns: int
    unexplained_ns: int  # gaps before an event whose launch is unknown
    launched: int  # events with a known launch
    launch_delay_median_ns: int | None  # launch start -> event start
    launch_delay_max_ns: int | None
    short_events: int  # device events shorter than SHORT_KERNEL_NS
    # Queue length: events launched and not yet finished (launch start to event end), the
    # largest and the time-weighted mean over the span from the first launch to the last end.
    queue_max: int = 0
    queue_mean: float = 0.0


def device_label(trace: Trace, track: int) -> str:
    """The device a track belongs to: Kineto's process label ("GPU 0") or the process name."""
    labels = trace.metadata.get("sort_index", {})
    pid = trace.tracks.pid[track]
    label = labels.get(f"process_labels:{pid}") if isinstance(labels, dict) else None
    return str(label) if label else trace.tracks.process[track]


def launches(trace: Trace) -> dict[int, int]:
    """Device event row -> the host runtime row that launched it (flows, else correlation ids)."""
    is_device = np.isin(trace.kind, [int(kind) for kind in DEVICE_KINDS])
    is_runtime = trace.kind == int(EventKind.RUNTIME)
    src, dst = trace.flows.src.astype(np.int64), trace.flows.dst.astype(np.int64)
    linked = is_runtime[src] & is_device[dst]
    found = dict(zip(dst[linked].tolist(), src[linked].tolist(), strict=True))
    device_rows = np.nonzero(is_device)[0]
    missing = [row for row in device_rows.tolist() if row not in found]
    if not missing:
        return found
    by_correlation: dict[object, int] = {}
    runtime_rows = np.nonzero(is_runtime)[0].tolist()
    for row, args in zip(runtime_rows, trace.args_many(runtime_rows), strict=True):
        key = args.get(CORRELATION_ARG)
        if isinstance(key, int) and not isinstance(key, bool):
            by_correlation.setdefault(key, row)
    for row, args in zip(missing, trace.args_many(missing), strict=True):
        launch = by_correlation.get(args.get(CORRELATION_ARG))
        if launch is not None:
            found[row] = launch
    return found


def stream_waits(trace: Trace, short_ns: int = SHORT_KERNEL_NS) -> tuple[StreamWaits, ...]:
    """Per device stream: idle split into host wait, kernel wait and unexplained."""
    is_device = np.isin(trace.kind, [int(kind) for kind in DEVICE_KINDS])
    device_rows = np.nonzero(is_device)[0]
    if len(device_rows) == 0:
        return ()
    launch_of = launches(trace)
    out = []
    for track in np.unique(trace.track[device_rows]).tolist():
        rows = device_rows[trace.track[device_rows] == track]
        rows = rows[np.lexsort((-trace.dur_ns[rows], trace.ts_ns[rows]))]
        out.append(_waits_of(trace, rows, launch_of, short_ns, track))
    return tuple(out)


def _waits_of(
    trace: Trace, rows: I64, launch_of: dict[int, int], short_ns: int, track: int
) -> StreamWaits:
    host = kernel = unexplained = 0
    reach = int(trace.ts_ns[rows[0]])
    delays = []
    for row in rows.tolist():
        start, end = int(trace.ts_ns[row]), int(trace.end_ns[row])
        launch = launch_of.get(row)
        if launch is not None:
            delays.append(start - int(trace.ts_ns[launch]))
        if start > reach:
            gap = start - reach
            if launch is None:
                unexplained += gap
            else:
                waited = min(max(int(trace.ts_ns[launch]) - reach, 0), gap)
                host += waited
                kernel += gap - waited
        reach = max(reach, end)
    queue_max, queue_mean = _queue_length(
        [
            (int(trace.ts_ns[launch_of[row]]), int(trace.end_ns[row]))
            for row in rows.tolist()
            if row in launch_of
        ]
    )
    return StreamWaits(
        device=device_label(trace, track),
        stream=trace.tracks.thread[track].strip(),
        events=len(rows),
        idle_ns=host + kernel + unexplained,
        host_wait_ns=host,
        kernel_wait_ns=kernel,
        unexplained_ns=unexplained,
        launched=len(delays),
        launch_delay_median_ns=int(np.median(delays)) if delays else None,
        launch_delay_max_ns=max(delays) if delays else None,
        short_events=int((trace.dur_ns[rows] < short_ns).sum()),
        queue_max=queue_max,
        queue_mean=queue_mean,
    )


def _queue_length(spans: list[tuple[int, int]]) -> tuple[int, float]:
    """The largest number of spans open at once and the time-weighted mean number open, over
    the first start to the last end (a span ending when another starts is not counted twice)."""
    if not spans:
        return 0, 0.0
    changes = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    open_now = peak = 0
    area = 0
    previous = changes[0][0]
    for time, delta in changes:  # ends sort before starts at one instant (-1 < 1)
        area += open_now * (time - previous)
        previous = time
        open_now += delta
        peak = max(peak, open_now)
    span = changes[-1][0] - changes[0][0]
    return peak, area / span if span else float(peak)
