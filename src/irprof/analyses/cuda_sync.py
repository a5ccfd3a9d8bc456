"""Cross-stream and host dependencies that CUDA events and synchronisations create.

Design notes: docs/views.md, "Module notes", `analyses/cuda_sync.py`.

Kineto records, for every synchronising CUDA call, a device-side record (category `cuda_sync`,
with a `cuda_sync_kind` argument) that shares the call's `correlation` and names what was
waited for: `stream` (the stream that waits, or the one synchronised), `wait_on_stream` (the
stream a CUDA event was recorded on), `wait_on_cuda_event_record_corr_id` (the `correlation` of
that `cudaEventRecord` call) and `device`. Device work (kernels, copies, fills) carries
`stream`, `device` and the `correlation` of the host call that launched it. From these, with
the CUDA API names only:

- `cudaStreamWaitEvent`: the first op launched on the waiting stream after the call depends on
  the last op launched on the recording stream before the `cudaEventRecord` call;
- `cudaEventSynchronize`: the call's end depends on that same op;
- `cudaStreamSynchronize`: the call's end depends on the last op launched on the synchronised
  stream before the call;
- `cudaDeviceSynchronize`: the call's end depends on the last op launched on every stream of
  the device before the call.

"Launched before" is strict in host time: the launch call ended no later than the record (or
sync) call began; "launched after": it began no earlier than the wait call ended. A launch that
overlaps the call on another thread is not ordered either way and is left out, which can only
move the dependency to an earlier source or a later target, both still true dependencies (a
stream runs its ops in launch order). A call whose record, correlation, stream or event record
is missing is counted as unresolved with the reason, never guessed. `cudaEventQuery` does not
block and makes no dependency.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from irprof.trace.model import DEVICE_KINDS, EventKind, Trace

RECORD_CALL = "cudaEventRecord"
STREAM_WAIT = "cudaStreamWaitEvent"
EVENT_SYNC = "cudaEventSynchronize"
STREAM_SYNC = "cudaStreamSynchronize"
DEVICE_SYNC = "cudaDeviceSynchronize"
SYNC_CALLS = (STREAM_WAIT, EVENT_SYNC, STREAM_SYNC, DEVICE_SYNC)
_UNSET = 0xFFFF_FFFF  # Kineto's -1 written as an unsigned 32-bit id

StreamKey = tuple[Any, int]  # (device or None, stream)


@dataclass(frozen=True)
class SyncDependency:
    """`dst` cannot go on before device op `src` ends (trace rows)."""

    src: int  # the device op waited for
    dst: int  # a device op (after a stream wait) or the host call whose end waits
    call: str  # the CUDA call that made the dependency
    call_row: int


@dataclass(frozen=True)
class UnresolvedSync:
    """A synchronising call whose dependency the trace does not say enough to find."""

    row: int
    call: str
    reason: str


@dataclass(frozen=True)
class SyncDependencies:
    """Every dependency found, and the calls left unresolved."""

    edges: tuple[SyncDependency, ...]
    unresolved: tuple[UnresolvedSync, ...]
    calls: int  # synchronising calls seen (resolved, unresolved, or with nothing to wait for)
    records: tuple[int, ...] = ()  # rows of the device-side sync records (the calls' shadows)

    def reasons(self) -> dict[str, int]:
        """Unresolved calls per reason."""
        return dict(Counter(item.reason for item in self.unresolved))


NO_SYNC_DEPENDENCIES = SyncDependencies((), (), 0)  # a trace without synchronising calls


def _known(value: Any) -> int | None:
    """An id field's value, None when absent or Kineto's "unknown" (-1, also as unsigned)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < _UNSET else None


@dataclass(frozen=True)
class _Stream:
    """The ops of one stream whose launch is known, in stream order, for lookups by launch time:
    launch ends ascending with the latest op among them, launch starts ascending with the
    earliest op from there on."""

    ops: list[tuple[int, int, int, int]]  # (device start, row, launch start, launch end)
    by_end: list[int]
    last_by_end: list[int]
    by_start: list[int]
    first_from_start: list[int]

    @staticmethod
    def of(found: list[tuple[int, int, int, int]]) -> _Stream:
        """Index the ops of one stream."""
        ops = sorted(found)
        by_end = sorted(range(len(ops)), key=lambda i: ops[i][3])
        by_start = sorted(range(len(ops)), key=lambda i: ops[i][2])
        latest = np.maximum.accumulate(np.asarray(by_end, dtype=np.int64))
        earliest = np.minimum.accumulate(np.asarray(by_start[::-1], dtype=np.int64))[::-1]
        return _Stream(
            ops,
            [ops[i][3] for i in by_end],
            latest.tolist(),
            [ops[i][2] for i in by_start],
            earliest.tolist(),
        )

    def last_before(self, time: int) -> int | None:
        """Row of the latest op (in stream order) whose launch ended by `time`."""
        count = bisect.bisect_right(self.by_end, time)
        return self.ops[self.last_by_end[count - 1]][1] if count else None

    def first_after(self, time: int) -> int | None:
        """Row of the earliest op (in stream order) whose launch began at `time` or later."""
        count = bisect.bisect_left(self.by_start, time)
        return self.ops[self.first_from_start[count]][1] if count < len(self.ops) else None


@dataclass(frozen=True)
class _Index:
    """What the dependencies are found from: host calls, device-side records, streams."""

    call_of: dict[int, int]  # correlation -> host call row
    record_of: dict[int, dict[str, Any]]  # correlation -> args of the device-side sync record
    streams: dict[StreamKey, _Stream]
    records: tuple[int, ...]  # rows of those records


def _index(trace: Trace) -> _Index:
    host = trace.rows_of_kind(EventKind.RUNTIME).tolist()
    call_of: dict[int, int] = {}
    ambiguous: set[int] = set()
    record_of: dict[int, dict[str, Any]] = {}
    records: list[int] = []
    for row, args in zip(host, trace.args_many(host), strict=True):
        corr = _known(args.get("correlation"))
        if corr is None:
            continue
        if "cuda_sync_kind" in args:  # a device-side record of a host call (Kineto `cuda_sync`)
            record_of[corr] = args
            records.append(row)
        elif corr in call_of:
            ambiguous.add(corr)
        else:
            call_of[corr] = row
    for corr in ambiguous:  # two host calls share it (merged processes): no launch is known
        del call_of[corr]
    ts, end = trace.ts_ns.tolist(), trace.end_ns.tolist()
    device = trace.rows_of_kind(*DEVICE_KINDS).tolist()
    found: dict[StreamKey, list[tuple[int, int, int, int]]] = {}
    for row, args in zip(device, trace.args_many(device), strict=True):
        stream, corr = _known(args.get("stream")), _known(args.get("correlation"))
        launch = call_of.get(corr) if corr is not None else None
        if stream is None or launch is None:
            continue
        key = (args.get("device"), stream)
        found.setdefault(key, []).append((ts[row], row, ts[launch], end[launch]))
    streams = {key: _Stream.of(ops) for key, ops in found.items()}
    return _Index(call_of, record_of, streams, tuple(records))


class _Finder:
    """Resolves one synchronising call at a time into edges or an unresolved reason."""

    def __init__(self, trace: Trace, index: _Index) -> None:
        self.trace = trace
        self.index = index
        self.ts = trace.ts_ns.tolist()
        self.end = trace.end_ns.tolist()
        self.edges: list[SyncDependency] = []
        self.unresolved: list[UnresolvedSync] = []

    def resolve(self, row: int, call: str) -> None:
        """Add the dependencies of host call `row` (named `call`)."""
        corr = _known(self.trace.args(row).get("correlation"))
        record = self.index.record_of.get(corr) if corr is not None else None
        if call == DEVICE_SYNC:
            reason = self._device_sync(row, record)
        elif record is None:
            reason = "no device-side sync record (Kineto cuda_sync) for the call"
        elif call == STREAM_SYNC:
            reason = self._stream_sync(row, record)
        else:
            reason = self._event_wait(row, call, record)
        if reason:
            self.unresolved.append(UnresolvedSync(row, call, reason))

    def _add(self, src: int, dst: int, call: str, row: int, waits_inside: bool) -> str:
        """Add src -> dst (made by call `row`) unless the times contradict it: src must end by
        dst's start, or by its end when dst blocks inside (a host sync call)."""
        limit = self.end[dst] if waits_inside else self.ts[dst]
        if self.end[src] > limit:
            return "the op waited for ends after what waits for it"
        self.edges.append(SyncDependency(src, dst, call, row))
        return ""

    def _device_sync(self, row: int, record: dict[str, Any] | None) -> str:
        if record is not None and "device" in record:
            device = record["device"]
        else:
            devices = {key[0] for key in self.index.streams}
            if not devices:
                return ""  # no device work in the trace to wait for
            if len(devices) > 1:
                return "device unknown: no sync record and work on several devices"
            device = next(iter(devices))
        reasons = [
            self._add(src, row, DEVICE_SYNC, row, True)
            for key, stream in self.index.streams.items()
            if key[0] == device and (src := stream.last_before(self.ts[row])) is not None
        ]
        return next((reason for reason in reasons if reason), "")

    def _stream_sync(self, row: int, record: dict[str, Any]) -> str:
        stream = _known(record.get("stream"))
        if stream is None:
            return "the sync record names no stream"
        found = self.index.streams.get((record.get("device"), stream))
        src = found.last_before(self.ts[row]) if found is not None else None
        return self._add(src, row, STREAM_SYNC, row, True) if src is not None else ""

    def _event_wait(self, row: int, call: str, record: dict[str, Any]) -> str:
        recorded = _known(record.get("wait_on_cuda_event_record_corr_id"))
        on_stream = _known(record.get("wait_on_stream"))
        if recorded is None or on_stream is None:
            return "the sync record names no cudaEventRecord (event never recorded?)"
        record_row = self.index.call_of.get(recorded)
        if record_row is None or self.trace.name_of(record_row) != RECORD_CALL:
            return "its cudaEventRecord call is not in the trace"
        if self.ts[record_row] > self.ts[row]:
            return "its cudaEventRecord call starts after the wait"
        device = record.get("device")
        source = self.index.streams.get((device, on_stream))
        src = source.last_before(self.ts[record_row]) if source is not None else None
        if src is None:
            return ""  # nothing recorded in the trace to wait for
        if call == EVENT_SYNC:
            return self._add(src, row, call, row, True)
        waiting = _known(record.get("stream"))
        if waiting is None:
            return "the sync record names no waiting stream"
        target = self.index.streams.get((device, waiting))
        dst = target.first_after(self.end[row]) if target is not None else None
        return self._add(src, dst, call, row, False) if dst is not None else ""


def sync_dependencies(trace: Trace) -> SyncDependencies:
    """The dependencies of the synchronising CUDA calls of `trace`."""
    ids = {call: trace.string_id(call) for call in SYNC_CALLS}
    wanted = {found: call for call, found in ids.items() if found is not None}
    calls = np.nonzero(np.isin(trace.name, list(wanted)))[0].tolist() if wanted else []
    if not calls:
        return NO_SYNC_DEPENDENCIES
    index = _index(trace)
    finder = _Finder(trace, index)
    for row in calls:
        finder.resolve(row, wanted[int(trace.name[row])])
    return SyncDependencies(
        tuple(finder.edges), tuple(finder.unresolved), len(calls), index.records
    )
