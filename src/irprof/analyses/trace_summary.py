"""What a trace holds at a glance: counts, tracks, span, the names that take the most time, and
where each device's time goes (compute, communication, memory copies, idle), stream by stream.

Design notes: docs/views.md, "Module notes", `analyses/trace_summary.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from irprof.analyses.device_waits import StreamWaits, device_label, stream_waits
from irprof.event_dag.nesting import nesting_parents, self_time_ns
from irprof.trace.model import DEVICE_KINDS, EventKind, Trace
from irprof.trace.steps import step_windows

I64 = npt.NDArray[np.int64]

# Device kinds by the category they count in.
CATEGORY_KINDS: dict[str, tuple[EventKind, ...]] = {
    "compute": (EventKind.KERNEL, EventKind.DISPATCH),
    "communication": (EventKind.COLLECTIVE,),
    "memory": (EventKind.MEMCPY, EventKind.MEMSET),
}
# Sums of int64 durations are exact in int64 below this; above it, Python ints are used.
_SAFE_SUM = 2**62


@dataclass(frozen=True)
class NameTotals:
    """Time of every event sharing one name."""

    name: str
    kind: str  # kind label of the name's first event
    count: int
    total_ns: int
    self_ns: int  # total minus time in child events on the same track

    @property
    def mean_ns(self) -> int:
        """Average duration per event."""
        return self.total_ns // self.count if self.count else 0


@dataclass(frozen=True)
class DeviceTime:
    """Where one device stream's (or a whole device's) time went."""

    device: str  # "GPU 0", "MTIA 17": Kineto's process label, else the process name
    stream: str  # the stream (thread) name; "" for a whole device
    events: int
    window_ns: int  # first device event's start to the last one's end
    compute_ns: int
    communication_ns: int
    memory_ns: int
    busy_ns: int  # union of the three (they may overlap on a device with several streams)
    compute_or_comm_ns: int = 0  # union of compute and communication

    @property
    def idle_ns(self) -> int:
        """Time in the window with no device work."""
        return self.window_ns - self.busy_ns

    @property
    def comm_hidden_ns(self) -> int:
        """Communication time during which compute ran too (hidden under it)."""
        return self.compute_ns + self.communication_ns - self.compute_or_comm_ns

    @property
    def comm_hidden_fraction(self) -> float | None:
        """`comm_hidden_ns` over all communication time (None without communication)."""
        return self.comm_hidden_ns / self.communication_ns if self.communication_ns else None

    def exclusive_ns(self) -> dict[str, int]:
        """The window split so the parts add up to it: each instant counts once, for the first
        of compute, communication, memory that runs then, else as idle."""
        return {
            "compute": self.compute_ns,
            "communication": self.compute_or_comm_ns - self.compute_ns,
            "memory": self.busy_ns - self.compute_or_comm_ns,
            "idle": self.idle_ns,
        }


@dataclass(frozen=True)
class StepDeviceTime:
    """One device in one step: its work clipped to the step marker's window (HTA's per-step
    breakdown), the window being the step's wall time."""

    step: int  # counted from 0 in time order
    start_ns: int
    time: DeviceTime


@dataclass(frozen=True)
class TraceSummary:
    """Summary data of one trace; renderers turn it into tables."""

    source: str
    format: str
    events: int
    tracks: int
    flows: int
    span_start_ns: int
    span_end_ns: int
    events_by_kind: dict[str, int]
    top_by_total: tuple[NameTotals, ...]
    top_by_self: tuple[NameTotals, ...]
    warnings: tuple[str, ...]
    top_device: tuple[NameTotals, ...] = ()  # device work (kernels, copies, ...) by total time
    devices: tuple[DeviceTime, ...] = ()
    streams: tuple[DeviceTime, ...] = ()
    waits: tuple[StreamWaits, ...] = ()  # each stream's idle time by what it waited for
    steps: tuple[StepDeviceTime, ...] = ()  # each device in each top-level step marker

    @property
    def span_ns(self) -> int:
        """Wall time from the first start to the last end."""
        return self.span_end_ns - self.span_start_ns


def summarize_trace(trace: Trace, top: int = 15) -> TraceSummary:
    """Counts, span, the `top` names by total and by self time (counters and the profiler's
    envelope left out), the top device work and the per-device and per-stream time."""
    timed = trace.kind != EventKind.COUNTER
    parent = nesting_parents(trace.track, trace.ts_ns, np.where(timed, trace.dur_ns, 0))
    self_ns = self_time_ns(np.where(timed, trace.dur_ns, 0), parent)
    names = len(trace.strings)
    count = np.bincount(trace.name[timed], minlength=names)
    total = sum_by_name(trace.name[timed], trace.dur_ns[timed], names)
    own = sum_by_name(trace.name[timed], self_ns[timed], names)
    first_row = np.full(names, -1, dtype=np.int64)
    first_row[trace.name[::-1]] = np.arange(len(trace) - 1, -1, -1)

    def totals(name_id: int, counts: npt.NDArray[np.int64], sums: npt.NDArray[Any]) -> NameTotals:
        row = int(first_row[name_id])
        return NameTotals(
            name=trace.strings[name_id],
            kind=EventKind(int(trace.kind[row])).label,
            count=int(counts[name_id]),
            total_ns=int(sums[name_id]),
            self_ns=int(own[name_id]),
        )

    envelope = np.zeros(names, dtype=np.bool_)
    envelope[trace.name[trace.kind == EventKind.ENVELOPE]] = True
    used = np.nonzero((count > 0) & ~envelope)[0]
    by_total = _ranked(used, total)[:top]
    by_self = _ranked(used, own)[:top]
    device = np.isin(trace.kind, [int(kind) for kind in DEVICE_KINDS])
    device_count = np.bincount(trace.name[device], minlength=names)
    device_total = sum_by_name(trace.name[device], trace.dur_ns[device], names)
    by_device = _ranked(np.nonzero(device_count > 0)[0], device_total)[:top]
    kinds = np.bincount(trace.kind.astype(np.int64), minlength=len(EventKind))
    start, end = trace.span_ns()
    devices, streams = device_times(trace)
    return TraceSummary(
        source=str(trace.metadata.get("source", "")),
        format=str(trace.metadata.get("format", "")),
        events=len(trace),
        tracks=len(np.unique(trace.track)),
        flows=len(trace.flows),
        span_start_ns=start,
        span_end_ns=end,
        events_by_kind={kind.label: int(kinds[kind]) for kind in EventKind if kinds[kind]},
        top_by_total=tuple(totals(int(name_id), count, total) for name_id in by_total),
        top_by_self=tuple(totals(int(name_id), count, total) for name_id in by_self),
        warnings=trace.warnings,
        top_device=tuple(totals(int(name_id), device_count, device_total) for name_id in by_device),
        devices=devices,
        streams=streams,
        waits=stream_waits(trace),
        steps=step_device_times(trace),
    )


def _ranked(ids: I64, values: npt.NDArray[Any]) -> list[int]:
    """`ids` by descending value, ties by id (works for int64 and exact Python-int sums)."""
    return sorted(ids.tolist(), key=lambda name_id: (-int(values[name_id]), name_id))


def sum_by_name(name: npt.NDArray[np.integer], values: I64, names: int) -> npt.NDArray[Any]:
    """Per-name sums of `values`: int64 when they cannot overflow, else exact Python ints."""
    if len(values) == 0 or float(np.abs(values).astype(np.float64).sum()) < _SAFE_SUM:
        total = np.zeros(names, dtype=np.int64)
        np.add.at(total, name, values)
        return total
    exact = np.zeros(names, dtype=object)
    np.add.at(exact, name, values.astype(object))
    return exact


def covered_ns(starts: I64, ends: I64) -> int:
    """Length of the union of the intervals [start, end)."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    previous = np.concatenate(([starts[0]], reach[:-1]))
    return int(np.clip(ends - np.maximum(starts, previous), 0, None).sum())


def _device_time(
    trace: Trace, rows: I64, device: str, stream: str, window: tuple[int, int] | None = None
) -> DeviceTime:
    """The device time of `rows`; with `window` (begin, end) the events are clipped to it and
    the window is that span (else first start to last end)."""
    ts, end, kind = trace.ts_ns[rows], trace.end_ns[rows], trace.kind[rows]
    if window is not None:
        ts, end = np.maximum(ts, window[0]), np.minimum(end, window[1])
        inside = end > ts
        ts, end, kind = ts[inside], end[inside], kind[inside]
    masks = {
        category: np.isin(kind, [int(value) for value in kinds])
        for category, kinds in CATEGORY_KINDS.items()
    }
    by_category = {category: covered_ns(ts[mask], end[mask]) for category, mask in masks.items()}
    either = masks["compute"] | masks["communication"]
    return DeviceTime(
        device=device,
        stream=stream,
        events=len(ts),
        window_ns=window[1] - window[0] if window is not None else int(end.max() - ts.min()),
        compute_ns=by_category["compute"],
        communication_ns=by_category["communication"],
        memory_ns=by_category["memory"],
        busy_ns=covered_ns(ts, end),
        compute_or_comm_ns=covered_ns(ts[either], end[either]),
    )


def device_times(trace: Trace) -> tuple[tuple[DeviceTime, ...], tuple[DeviceTime, ...]]:
    """Per device and per stream time of the device work, devices in order of first track."""
    device_rows = np.nonzero(np.isin(trace.kind, [int(kind) for kind in DEVICE_KINDS]))[0]
    if len(device_rows) == 0:
        return (), ()
    tracks = trace.track[device_rows]
    streams: list[DeviceTime] = []
    rows_by_device: dict[str, list[I64]] = {}
    for track in np.unique(tracks).tolist():
        rows = device_rows[tracks == track]
        device = device_label(trace, track)
        rows_by_device.setdefault(device, []).append(rows)
        streams.append(_device_time(trace, rows, device, trace.tracks.thread[track].strip()))
    devices = tuple(
        _device_time(trace, np.concatenate(parts), device, "")
        for device, parts in rows_by_device.items()
    )
    return devices, tuple(streams)


def step_device_times(trace: Trace) -> tuple[StepDeviceTime, ...]:
    """Each device's work in each top-level step marker's window, clipped to it: compute,
    communication, memory and idle per step (an event running across a step boundary counts
    in each step for the part inside it)."""
    windows = step_windows(trace, nested=False)
    device_rows = np.nonzero(np.isin(trace.kind, [int(kind) for kind in DEVICE_KINDS]))[0]
    if not windows or len(device_rows) == 0:
        return ()
    by_device: dict[str, list[int]] = {}
    for row, track in zip(device_rows.tolist(), trace.track[device_rows].tolist(), strict=True):
        by_device.setdefault(device_label(trace, track), []).append(row)
    found = []
    for step, (begin, end) in enumerate(windows):
        for device, rows in by_device.items():
            found.append(
                StepDeviceTime(
                    step, begin, _device_time(trace, np.asarray(rows), device, "", (begin, end))
                )
            )
    return tuple(found)
