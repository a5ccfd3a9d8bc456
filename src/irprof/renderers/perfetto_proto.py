"""Trace export as a native Perfetto trace (`.pftrace`): TracePacket protobufs, no JSON.

Design notes: docs/views.md, "Module notes", `renderers/perfetto_proto.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.trace_costs import CostedTraceExport
from irprof.analyses.trace_export import OpRef, TraceExport
from irprof.trace.model import EventKind

IR_TRACK_NAME = "irprof IR"
SEQUENCE_ID = 1
_FIRST_UUID = 1 << 20  # clear of anything the trace processor numbers itself


@dataclass
class _Lanes:
    """Tracks of one source track: lane 0 is the track, lane k an "overlap k" child; each lane
    holds a stack of open slice ends so every lane's slices nest."""

    uuids: list[int]
    stacks: list[list[int]] = field(default_factory=list)


@dataclass
class _Writer:
    """Builds the packets: tracks first (as they are needed), then events in time order."""

    pb: Any  # the perfetto_trace_pb2 module
    trace: Any = None  # Trace message
    next_uuid: int = _FIRST_UUID
    events: list[tuple[int, int, Any]] = field(default_factory=list)  # (ts, order, packet)

    def __post_init__(self) -> None:
        self.trace = self.pb.Trace()

    def uuid(self) -> int:
        self.next_uuid += 1
        return self.next_uuid

    def track(
        self,
        name: str,
        parent: int | None = None,
        counter: bool = False,
        *,
        pid: int | None = None,
        tid: int | None = None,
    ) -> int:
        """A new track; with `pid` (and `tid`) a process (thread) track carrying the trace's own
        ids, which Perfetto shows as `name <pid>` and groups by."""
        uuid = self.uuid()
        packet = self.trace.packet.add()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        descriptor = packet.track_descriptor
        descriptor.uuid = uuid
        descriptor.name = name
        if parent is not None:
            descriptor.parent_uuid = parent
        if counter:
            descriptor.counter.SetInParent()
        if pid is not None and tid is None:
            descriptor.process.pid = pid
            descriptor.process.process_name = name
        elif pid is not None and tid is not None:
            descriptor.thread.pid = pid
            descriptor.thread.tid = tid
            descriptor.thread.thread_name = name
        return uuid

    def event(self, ts: int, track: int) -> Any:
        packet = self.pb.TracePacket()
        packet.timestamp = ts
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        packet.track_event.track_uuid = track
        self.events.append((ts, len(self.events), packet))
        return packet.track_event

    def serialize(self) -> bytes:
        # A stable sort by time keeps each track's begin/end order for equal timestamps.
        for _, _, packet in sorted(self.events, key=lambda item: item[0]):
            self.trace.packet.append(packet)
        data: bytes = self.trace.SerializeToString()
        return data


def _annotate(event: Any, name: str, value: Any) -> None:
    note = event.debug_annotations.add()
    note.name = name
    if isinstance(value, bool):
        note.bool_value = value
    elif isinstance(value, int) and -(2**63) <= value < 2**63:
        note.int_value = value
    elif isinstance(value, float):
        note.double_value = value
    elif isinstance(value, str):
        note.string_value = value
    else:
        note.legacy_json_value = _json(value)


def _json(value: Any) -> str:
    """`value` as JSON text; ints past 64 bits (legal in a trace's JSON) as the standard
    library writes them, since orjson refuses them."""
    import json

    import orjson

    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return json.dumps(value, default=str)


def _place(lanes: _Lanes, writer: _Writer, label: str, start: int, end: int) -> int:
    """The lane (track uuid) where [start, end] nests; closes slices that ended before start."""
    for lane, stack in enumerate(lanes.stacks):
        while stack and stack[-1] <= start and not (stack[-1] == start == end):
            stack.pop()
        if not stack or stack[-1] >= end:
            stack.append(end)
            return lanes.uuids[lane]
    lanes.uuids.append(writer.track(f"{label} (overlap {len(lanes.uuids)})", lanes.uuids[0]))
    lanes.stacks.append([end])
    return lanes.uuids[-1]


def _slice(
    writer: _Writer, track: int, ts: int, dur: int, name: str, category: str
) -> tuple[Any, Any]:
    begin = writer.event(ts, track)
    begin.type = writer.pb.TrackEvent.TYPE_SLICE_BEGIN
    begin.name = name
    begin.categories.append(category)
    end = writer.event(ts + dur, track)
    end.type = writer.pb.TrackEvent.TYPE_SLICE_END
    return begin, end


def _op_notes(event: Any, ref: OpRef, op: ProfiledOp, kernel: str) -> None:
    for key, value in (
        ("op", ref.op_name),
        ("level", ref.level),
        ("location", ref.location),
        ("function", ref.function),
        ("runtime_name", ref.runtime_name),
        ("kernel", kernel),
    ):
        if value:
            _annotate(event, key, value)
    profile = op.profile
    if profile is None:
        return
    for key, number in (
        ("total_ns", profile.total_ns),
        ("count", profile.count),
        ("mean_ns", profile.mean_ns),
        ("fraction", profile.fraction),
    ):
        _annotate(event, key, number)
    if profile.group:
        _annotate(event, "group", profile.group)
        _annotate(event, "group_size", profile.group_size)
        _annotate(event, "share_basis", profile.share_basis)


def _thread_label(export: TraceExport, track: int) -> str:
    tracks = export.trace.tracks
    return tracks.thread[track] or f"tid {tracks.tid[track]}"


def _numbers(args: dict[str, Any]) -> Iterator[tuple[str, float]]:
    for key, value in args.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield key, float(value)


def _flop_rate_tracks(
    writer: _Writer, parent: int, rates: dict[str, list[tuple[int, float]]]
) -> None:
    """One counter track per level: the sum of the FLOP rates of the op slices running."""
    for level, changes in rates.items():
        track = writer.track(f"achieved GFLOP/s · IR level {level}", parent, counter=True)
        running = 0.0
        changes.sort(key=lambda change: change[0])
        for position, (ts, delta) in enumerate(changes):
            running += delta
            if position + 1 < len(changes) and changes[position + 1][0] == ts:
                continue  # one value per timestamp: the sum after every change at it
            event = writer.event(ts, track)
            event.type = writer.pb.TrackEvent.TYPE_COUNTER
            event.double_counter_value = max(0.0, round(running, 9))


def perfetto_trace(export: TraceExport, pb: Any) -> bytes:
    """The `.pftrace` bytes of `export`, built with the perfetto_trace_pb2 module `pb`."""
    writer = _Writer(pb)
    first = writer.trace.packet.add()
    first.trusted_packet_sequence_id = SEQUENCE_ID
    first.first_packet_on_sequence = True
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    trace = export.trace
    tracks = trace.tracks
    processes: dict[int, int] = {}
    for row in range(len(tracks)):
        pid = tracks.pid[row]
        if pid not in processes:
            processes[pid] = writer.track(
                tracks.process[row] or f"pid {pid}", pid=pid if _fits(pid) else None
            )
    lanes = [
        _Lanes(
            [
                writer.track(
                    _thread_label(export, row),
                    processes[tracks.pid[row]],
                    pid=tracks.pid[row] if _fits(tracks.pid[row], tracks.tid[row]) else None,
                    tid=tracks.tid[row],
                )
            ],
            [[]],
        )
        for row in range(len(tracks))
    ]
    begins: dict[int, Any] = {}  # trace row -> its slice (or instant), for the trace's flows
    ir_root = writer.track(IR_TRACK_NAME)
    level_lanes = {
        level: _Lanes([writer.track(f"IR level {level}", ir_root)], [[]])
        for level, _ in export.levels
    }
    ops = {(level, op.index): op for level, profiled in export.levels for op in profiled.ops}
    refs_of = export.ops_by_event_name()
    counters: dict[tuple[int, str], int] = {}
    flops = export.flops_per_event if isinstance(export, CostedTraceExport) else {}
    rates: dict[str, list[tuple[int, float]]] = {}
    flow_id = 0
    strings = trace.strings
    # Time order, longest first: a track's enclosing slices are placed before their children.
    for row in np.lexsort((-trace.dur_ns, trace.ts_ns)).tolist():
        ts, dur = int(trace.ts_ns[row]), int(trace.dur_ns[row])
        name, kind, track = strings[trace.name[row]], int(trace.kind[row]), int(trace.track[row])
        args = trace.args(row)
        if kind == EventKind.COUNTER:
            for key, value in _numbers(args):
                counter_key = (int(trace.name[row]), key)
                if counter_key not in counters:
                    label = name if key in ("value", name) else f"{name}.{key}"
                    counters[counter_key] = writer.track(label, counter=True)
                event = writer.event(ts, counters[counter_key])
                event.type = pb.TrackEvent.TYPE_COUNTER
                event.double_counter_value = value
            continue
        category = EventKind(kind).label
        if kind == EventKind.INSTANT:
            event = writer.event(ts, lanes[track].uuids[0])
            event.type = pb.TrackEvent.TYPE_INSTANT
            event.name = name
            event.categories.append(category)
            begins[row] = event
            for key, value in args.items():
                _annotate(event, key, value)
            continue
        uuid = _place(lanes[track], writer, _thread_label(export, track), ts, ts + dur)
        begin, _ = _slice(writer, uuid, ts, dur, name, category)
        begins[row] = begin
        for key, value in args.items():
            _annotate(begin, key, value)
        refs = tuple(ref for ref in refs_of.get(name, ()) if ref.ran(ts))
        if not refs:
            continue
        flow_id += 1
        begin.flow_ids.append(flow_id)
        _annotate(begin, "irprof_ops", [f"{ref.level}: {ref.name}" for ref in refs])
        for position, ref in enumerate(refs):
            level = level_lanes[ref.level]
            ir_uuid = _place(level, writer, f"IR level {ref.level}", ts, ts + dur)
            op_begin, _ = _slice(writer, ir_uuid, ts, dur, ref.name, "irprof.op")
            if position == len(refs) - 1:
                op_begin.terminating_flow_ids.append(flow_id)
            else:
                op_begin.flow_ids.append(flow_id)
            _op_notes(op_begin, ref, ops[(ref.level, ref.op_index)], name)
            work = flops.get((ref.level, ref.op_index))
            if work and dur > 0:
                _annotate(op_begin, "flops", int(work))
                # GFLOP/s = FLOP per ns.
                rates.setdefault(ref.level, []).extend(((ts, work / dur), (ts + dur, -work / dur)))
    _flop_rate_tracks(writer, ir_root, rates)
    # The trace's own flows (launch -> kernel, send -> receive), numbered after the op links.
    for src, dst in zip(trace.flows.src.tolist(), trace.flows.dst.tolist(), strict=True):
        if src in begins and dst in begins:
            flow_id += 1
            begins[src].flow_ids.append(flow_id)
            begins[dst].terminating_flow_ids.append(flow_id)
    return writer.serialize()


INT32 = 2**31


def _fits(*ids: int) -> bool:
    """Whether ids can be Perfetto's own pid / tid (int32): Chrome and Kineto ids mostly are;
    XPlane's 64-bit line ids and hashed string pids are not, and their tracks are named only."""
    return all(-INT32 <= value < INT32 for value in ids)


@dataclass(frozen=True)
class PerfettoProtoRenderer:
    """`trace.pftrace`: the run as Perfetto TracePackets (TrackDescriptor + TrackEvent)."""

    name: str = "perfetto"
    extension: str = ".pftrace"
    # What the renderer reads from a run bundle: `(bundle, level | None) -> TraceExport`.
    input: str = "irprof.analyses.trace_costs:load_costed_trace_export"

    def render(self, data: TraceExport) -> bytes:
        """Serialized `perfetto.protos.Trace`."""
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2

        return perfetto_trace(data, perfetto_trace_pb2)


RENDERER = PerfettoProtoRenderer()
