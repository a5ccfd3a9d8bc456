"""XPlane reader: the `XSpace` protobuf TensorFlow, JAX/XLA and xprof write as `*.xplane.pb`.

Time: XLine.timestamp_ns is documented as epoch ns, but the profiler session normalises it to be
relative to the "Task Environment" plane's `profile_start_time` before serializing (measured: TF
2.21 and JAX 0.10.2 write line timestamps of a few microseconds). A line timestamp smaller than
half the start time is therefore taken as relative and the start time is added. Event start and
end are rounded from picoseconds to nanoseconds separately, so a nested event never ends after its
parent because of rounding.

Tracks: one per (plane, line). `pid` is the plane's position in the XSpace, not `XPlane.id`,
because profilers write id 0 for several planes of one file; `tid` is `XLine.id`.

Kinds, first matching rule wins (see `classify_event`):
  1. a `step_num` stat (TF `tf.profiler.experimental.Trace(step_num=)`, JAX StepTraceAnnotation),
     or a device plane's "Steps" line                          -> STEP
  2. an `hlo_op` stat (an XLA:CPU thunk, an XLA op on a device)  -> KERNEL
  3. metadata name "<node>:<type>" with display name "<type>" (a TF executor op)  -> FRAMEWORK_OP
  4. a name starting with "$" (the Python tracer's frames)       -> PYTHON
  5. an event on a "/device:" plane                              -> KERNEL
  6. zero duration                                               -> INSTANT
  7. anything else (TraceMe scopes: executor, eager runtime, "end: <thunk>") -> RUNTIME

Arguments: every stat of the event and of its metadata (metadata first, event stats override),
ref values resolved through the plane's stat metadata, bytes base64-encoded, plus `display_name`
when it differs from the name and, for TF ops, `tf_op_name`/`tf_op_type`, and `num_occurrences`
of an aggregated event. A stat naming stat metadata 0 that the plane does not define (what an
empty XStat reads as) is left out.

Speed: the file is parsed twice, as XSpace and as the smaller `xplane_view.proto` schema, whose
events carry only (metadata id, offset, duration, a merged stat); one C-level pass over the view
gives a line's columns, and only events with stats of their own are then read one by one.

Flows: TraceMe producer/consumer contexts (`_p`/`_pt` on the producer, `_c`/`_ct` on the
consumer, e.g. ThreadpoolListener Record -> StartRegion across threads) become flow links.

The `/host:metadata` plane carries one event metadata per XLA program with the serialized HloProto
in its "Hlo Proto" stat; they are kept undecoded as `Trace.hlo_programs`.
"""

from __future__ import annotations

import base64
import itertools
import math
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from irprof.errors import TraceFormatError
from irprof.readers import SNIFF_BYTES
from irprof.readers.trace_bytes import TraceBytes
from irprof.readers.xplane_proto.profile_options_pb2 import ProfileOptions
from irprof.readers.xplane_proto.xplane_pb2 import XEventMetadata, XPlane, XSpace, XStat
from irprof.readers.xplane_proto.xplane_view_pb2 import XPlaneView, XSpaceView
from irprof.trace.builder import TraceBuilder
from irprof.trace.columns import dense_unique, time_order
from irprof.trace.model import EventKind, HloProgram, Trace

TASK_ENVIRONMENT_PLANE = "Task Environment"
HOST_METADATA_PLANE = "/host:metadata"
DEVICE_PLANE_PREFIX = "/device:"
HLO_PROTO_STAT = "Hlo Proto"  # xprof's kHloProto
PROGRAM_ID_STAT = "program_id"
PROFILE_OPTIONS_STAT = "profile_options"
PRODUCER_STATS = ("_pt", "_p")
CONSUMER_STATS = ("_ct", "_c")

# Field tags of an XSpace: planes (1), errors (2), warnings (3), hostnames (4), all
# length-delimited (wire type 2); a serialized XSpace starts with one of them.
_XSPACE_FIRST_BYTES = frozenset({0x0A, 0x12, 0x1A, 0x22})
_XSPACE_PLANES_TAG = 0x0A
# Tags an XPlane's first field can have: id (1, varint), name (2), lines (3), event_metadata (4),
# stat_metadata (5), stats (6), the others length-delimited.
_XPLANE_FIRST_BYTES = frozenset({0x08, 0x12, 0x1A, 0x22, 0x2A, 0x32})
# Bytes that never occur in JSON text outside strings, where they must be escaped; almost every
# protobuf has some (lengths, tags, varints), so a head without any is text, not an XSpace.
_CONTROL_BYTES = bytes(range(0x20)).translate(None, b"\t\n\r")
_PROGRAM_SUFFIX = re.compile(r"\(\d+\)$")

_encode = msgspec.json.Encoder().encode

StatValue = float | int | str


def stat_value(stat: XStat, stat_names: dict[int, str]) -> StatValue:
    """The Python value of one stat; ref values become the referenced stat metadata's name."""
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if kind == "bytes_value":
        return base64.b64encode(stat.bytes_value).decode("ascii")
    if kind is None:
        return ""
    value: StatValue = getattr(stat, kind)
    return value


def stats_dict(stats: Iterable[XStat], stat_names: dict[int, str]) -> dict[str, StatValue]:
    """Stats as a name -> value dict. A stat naming a metadata id the plane does not define is
    named by the id, except id 0, which is what an empty XStat reads as: it is left out."""
    found: dict[str, StatValue] = {}
    for stat in stats:
        metadata_id = stat.metadata_id
        name = stat_names.get(metadata_id)
        if name is None:
            if not metadata_id:
                continue
            name = str(metadata_id)
        found[name] = stat_value(stat, stat_names)
    return found


def stat_int(value: object, limit: int = 1 << 63) -> int | None:
    """An integer stat value (or an integral finite float) with |value| below `limit`, else None:
    a hostile or damaged file may put a string, bytes, NaN or inf where an id or time belongs."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int or not -limit <= value < limit:
        return None
    return value


def classify_event(
    plane_name: str, line_name: str, name: str, display_name: str, stats: dict[str, Any], dur: int
) -> EventKind:
    """EventKind by the rules in the module docstring."""
    if "step_num" in stats or (line_name == "Steps" and plane_name.startswith(DEVICE_PLANE_PREFIX)):
        return EventKind.STEP
    if "hlo_op" in stats:
        return EventKind.KERNEL
    if display_name and name.endswith(":" + display_name) and len(name) > len(display_name) + 1:
        return EventKind.FRAMEWORK_OP
    if name.startswith("$"):
        return EventKind.PYTHON
    if plane_name.startswith(DEVICE_PLANE_PREFIX):
        return EventKind.KERNEL
    if dur == 0:
        return EventKind.INSTANT
    return EventKind.RUNTIME


@dataclass(frozen=True)
class _MetadataInfo:
    """What every event of one XEventMetadata shares: name, base args, flags."""

    name: str
    display_name: str
    args: dict[str, Any]
    args_json: bytes


def _metadata_info(metadata: XEventMetadata, stat_names: dict[int, str]) -> _MetadataInfo:
    name = metadata.name
    display = metadata.display_name
    args: dict[str, Any] = stats_dict(metadata.stats, stat_names)
    if display and display != name:
        args["display_name"] = display
        if name.endswith(":" + display):
            args["tf_op_name"] = name[: -len(display) - 1]
            args["tf_op_type"] = display
    return _MetadataInfo(name, display, args, _encode(args) if args else b"")


def _space_from_bytes(path: Path, data: bytes) -> XSpace:
    try:
        space = XSpace.FromString(data)
    except DecodeError as exc:
        raise TraceFormatError(path, f"corrupt XPlane protobuf: {exc}") from exc
    if not space.planes:
        raise TraceFormatError(path, "XSpace protobuf holds no planes")
    return space


def _task_environment(path: Path, plane: XPlane) -> dict[str, Any]:
    stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
    found: dict[str, Any] = {}
    for stat in plane.stats:
        name = stat_names.get(stat.metadata_id, str(stat.metadata_id))
        if name == PROFILE_OPTIONS_STAT and stat.WhichOneof("value") == "bytes_value":
            try:
                options = ProfileOptions.FromString(stat.bytes_value)
            except DecodeError as exc:
                raise TraceFormatError(path, f"corrupt profile_options: {exc}") from exc
            found["profile_options"] = json_format.MessageToDict(
                options, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        else:
            found[name] = stat_value(stat, stat_names)
    return found


def _hlo_programs(plane: XPlane, warnings: list[str]) -> list[HloProgram]:
    stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
    programs = []
    for metadata in plane.event_metadata.values():
        proto = b""
        program_id = -1
        for stat in metadata.stats:
            stat_name = stat_names.get(stat.metadata_id)
            if stat_name == HLO_PROTO_STAT:
                proto = stat.bytes_value
            elif stat_name == PROGRAM_ID_STAT:
                value = stat_value(stat, stat_names)
                found = stat_int(value)
                if found is None:
                    warnings.append(
                        f"HLO program {metadata.name!r}: program_id {str(value)[:40]!r} is not "
                        "an integer; read as -1"
                    )
                program_id = -1 if found is None else found
        if proto:
            name = _PROGRAM_SUFFIX.sub("", metadata.name)
            programs.append(HloProgram(program_id, name, proto))
    return sorted(programs, key=lambda program: program.program_id)


class _FlowCollector:
    """Pairs TraceMe producer (`_p`) and consumer (`_c`) contexts of the same type and id."""

    def __init__(self) -> None:
        self.producers: dict[tuple[Any, int], int] = {}
        self.consumers: list[tuple[tuple[Any, int], int]] = []
        self.ignored = 0  # contexts whose id is not an integer (a string, bytes, inf)

    def note(self, row: int, args: dict[str, Any]) -> None:
        for stat, type_stat, found in (("_p", "_pt", self.producers), ("_c", "_ct", None)):
            if stat not in args:
                continue
            # TraceMe context ids are uint64
            context_id = stat_int(args[stat], 1 << 64)
            if context_id is None:
                self.ignored += 1
            elif found is not None:
                found.setdefault((args.get(type_stat), context_id), row)
            else:
                self.consumers.append(((args.get(type_stat), context_id), row))

    def emit(self, builder: TraceBuilder) -> None:
        if self.ignored:
            builder.warnings.append(
                f"{self.ignored} producer/consumer context(s) ('_p'/'_c') with an id that is "
                "not an integer were ignored"
            )
        for key, consumer in self.consumers:
            producer = self.producers.get(key)
            if producer is not None and producer != consumer:
                builder.flow(producer, consumer, int(key[1]) & 0x7FFFFFFFFFFFFFFF)


@dataclass
class _Columns:
    """Events of every line read so far, as per-line arrays; `args` index `args_table`."""

    ts: list[npt.NDArray[np.int64]] = field(default_factory=list)
    dur: list[npt.NDArray[np.int64]] = field(default_factory=list)
    track: list[npt.NDArray[np.int32]] = field(default_factory=list)
    name: list[npt.NDArray[np.int64]] = field(default_factory=list)
    kind: list[npt.NDArray[np.int8]] = field(default_factory=list)
    args: list[npt.NDArray[np.int64]] = field(default_factory=list)
    args_table: list[bytes] = field(default_factory=lambda: [b""])
    rows: int = 0
    notes: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def emit(self, builder: TraceBuilder) -> None:
        """Append every event to `builder` ordered by (ts, -dur) and note flows at their rows."""
        if not self.ts:
            return
        ts, dur = np.concatenate(self.ts), np.concatenate(self.dur)
        order = time_order(ts, dur)
        args = np.concatenate(self.args)[order]
        table_lengths = np.fromiter(map(len, self.args_table), np.int64, len(self.args_table))
        table = np.empty(len(self.args_table), dtype=object)
        table[:] = self.args_table  # gathered in C below; entry 0 (no args) is empty
        first = builder.extend(
            ts[order],
            dur[order],
            np.concatenate(self.track)[order],
            np.concatenate(self.name)[order],
            np.concatenate(self.kind)[order],
            (table_lengths[args], b"".join(table[args[args > 0]].tolist())),
        )
        row_of = np.empty(len(order), dtype=np.int64)
        row_of[order] = np.arange(first, first + len(order))
        self.notes = [(int(row_of[position]), args) for position, args in self.notes]


def _read_plane(
    path: Path, columns: _Columns, builder: TraceBuilder, plane_index: int, plane: XPlane,
    view: XPlaneView, start_time_ns: int,
) -> None:  # fmt: skip
    """Every line of a plane, as columns: only events with stats of their own (or flow stats in
    their metadata) are looked at one by one; the rest share what their metadata says."""
    if not plane.lines:
        return
    stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
    infos = {key: _metadata_info(meta, stat_names) for key, meta in plane.event_metadata.items()}
    missing = _metadata_info(XEventMetadata(name="<unknown metadata>"), stat_names)
    flow_metadata = {key for key, info in infos.items() if _FLOW_STATS & info.args.keys()}
    plane_name = plane.name
    for line_number, (line, line_view) in enumerate(zip(plane.lines, view.lines, strict=True)):
        if not line.events:
            builder.track(plane_index, line.id, plane_name, line.display_name or line.name)
            continue
        _read_line(
            path, columns, builder, (plane_index, line_number), plane, (line, line_view),
            start_time_ns, (stat_names, infos, missing, flow_metadata),
        )  # fmt: skip


_FLOW_STATS = frozenset(PRODUCER_STATS + CONSUMER_STATS)
_LineContext = tuple[dict[int, str], dict[int, _MetadataInfo], _MetadataInfo, set[int]]
# One C-level pass over a line's view events (each access builds a wrapper object): metadata
# id, offset, duration and the merged stats' metadata id (non-zero: the event has stats).
_EVENT_FIELDS = operator.attrgetter("metadata_id", "offset_ps", "duration_ps", "stats.metadata_id")
_EVENT_STATS = operator.attrgetter("stats")


def _special_events(
    events: Any, peek: npt.NDArray[np.int64], offset_ps: npt.NDArray[np.int64], exact: bool
) -> tuple[npt.NDArray[np.bool_], dict[int, int]]:
    """Events with stats of their own or a `num_occurrences`, and those occurrences by position.
    The view's merged stat says which events have stats unless the plane defines stat metadata 0
    (`exact`: count them instead); only an event reading offset 0 can be aggregated (the oneof),
    so only those are asked."""
    if exact:
        special = np.fromiter(map(len, map(_EVENT_STATS, events)), np.int64, len(events)) > 0
    else:
        special = peek != 0
    occurrences = {}
    for position in np.nonzero(offset_ps == 0)[0].tolist():
        if occurrence := events[position].num_occurrences:
            occurrences[position] = occurrence
            special[position] = True
    return special, occurrences


def _read_line(
    path: Path,
    columns: _Columns,
    builder: TraceBuilder,
    place: tuple[int, int],
    plane: XPlane,
    lines: tuple[Any, Any],
    start_time_ns: int,
    context: _LineContext,
) -> None:
    stat_names, infos, missing, flow_metadata = context
    plane_index, line_number = place
    line, line_view = lines
    plane_name, line_name = plane.name, line.name
    track = builder.track(plane_index, line.id, plane_name, line.display_name or line_name)
    base_ns = line.timestamp_ns
    if start_time_ns and base_ns < start_time_ns // 2:
        base_ns += start_time_ns
    events = line.events
    count = len(events)
    fields = np.fromiter(
        itertools.chain.from_iterable(map(_EVENT_FIELDS, line_view.events)), np.int64, 4 * count
    ).reshape(count, 4)
    metadata_ids, offset_ps, duration_ps = fields[:, 0], fields[:, 1], fields[:, 2]
    # In Python ints: `offset + duration` in picoseconds must not wrap int64 below, and the
    # times must stay within the bound every reader keeps (a negative duration is left to the
    # builder, which reads it as 0 and counts it, as every reader does).
    last_end_ps = int(offset_ps.max()) + max(int(duration_ps.max()), 0)
    first_ps = int(offset_ps.min()) + min(int(duration_ps.min()), 0)
    reach_ns = max(abs(last_end_ps), abs(first_ps)) // 1000 + 1
    if abs(base_ns) + reach_ns >= 2**62 or not -(2**63) < first_ps <= last_end_ps < 2**63 - 1000:
        raise TraceFormatError(
            path,
            "event times beyond int64 nanoseconds",
            where=f"plane {plane_index} ({plane_name!r}) line {line_number} ({line_name!r})",
        )
    ts = base_ns + (offset_ps + 500) // 1000
    dur = base_ns + (offset_ps + duration_ps + 500) // 1000 - ts
    unique_ids, inverse = dense_unique(metadata_ids)
    kind_of: list[int] = []
    zero_kind_of: list[int] = []
    name_of: list[int] = []
    args_of: list[int] = []
    table = columns.args_table
    for metadata_id in unique_ids.tolist():
        info = infos.get(metadata_id, missing)
        for duration, out in ((1, kind_of), (0, zero_kind_of)):
            out.append(
                classify_event(
                    plane_name, line_name, info.name, info.display_name, info.args, duration
                )
            )
        name_of.append(builder.intern(info.name))  # only names some event uses
        args_of.append(len(table) if info.args_json else 0)
        if info.args_json:
            table.append(info.args_json)
    kinds = np.where(
        dur == 0, np.array(zero_kind_of, np.int8)[inverse], np.array(kind_of, np.int8)[inverse]
    ).astype(np.int8)
    args = np.array(args_of, dtype=np.int64)[inverse]
    special, occurrences = _special_events(events, fields[:, 3], offset_ps, 0 in stat_names)
    if flow_metadata:
        flow_of = np.array([key in flow_metadata for key in unique_ids.tolist()], np.bool_)
        special |= flow_of[inverse]
    positions = np.nonzero(special)[0]
    notes, first_row = columns.notes, columns.rows
    for position, metadata_id in zip(
        positions.tolist(), metadata_ids[positions].tolist(), strict=True
    ):
        info = infos.get(metadata_id, missing)
        own = stats_dict(events[position].stats, stat_names)
        if position in occurrences:
            own["num_occurrences"] = occurrences[position]
        event_args = info.args | own
        if "step_num" in own or "hlo_op" in own:  # else the metadata's kind holds
            kinds[position] = classify_event(
                plane_name, line_name, info.name, info.display_name, event_args, int(dur[position])
            )
        if event_args:
            args[position] = len(table)
            table.append(_encode(event_args))
        if "_p" in event_args or "_c" in event_args:
            notes.append((first_row + position, event_args))
    columns.ts.append(ts)
    columns.dur.append(dur)
    columns.track.append(np.full(count, track, dtype=np.int32))
    columns.name.append(np.array(name_of, dtype=np.int64)[inverse])
    columns.kind.append(kinds)
    columns.args.append(args)
    columns.rows += count


def _profile_time(environment: dict[str, Any], stat: str, warnings: list[str]) -> int:
    """A Task Environment time stat in ns (0: unknown); a value that is no time is ignored."""
    value = environment.get(stat, 0) or 0
    found = stat_int(value, 1 << 62)
    if found is None or found < 0:
        warnings.append(
            f"Task Environment stat {stat!r} = {str(value)[:40]!r} is not a time; ignored"
        )
        return 0
    return found


def read_xplane(path: Path, data: bytes) -> Trace:
    """Parse serialized XSpace bytes from `path` into a Trace (epoch ns when a base is known)."""
    space = _space_from_bytes(path, data)
    view = XSpaceView.FromString(data)
    builder = TraceBuilder(path)
    environment: dict[str, Any] = {}
    for plane in space.planes:
        if plane.name == TASK_ENVIRONMENT_PLANE:
            environment.update(_task_environment(path, plane))
    start_time_ns = _profile_time(environment, "profile_start_time", builder.warnings)
    columns = _Columns()
    plane_stats: dict[str, dict[str, StatValue]] = {}
    for plane_index, (plane, plane_view) in enumerate(zip(space.planes, view.planes, strict=True)):
        if plane.name == TASK_ENVIRONMENT_PLANE:
            continue
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        if plane.stats:
            plane_stats[plane.name] = stats_dict(plane.stats, stat_names)
        if plane.name == HOST_METADATA_PLANE:
            builder.hlo_programs.extend(_hlo_programs(plane, builder.warnings))
        _read_plane(path, columns, builder, plane_index, plane, plane_view, start_time_ns)
    columns.emit(builder)
    flows = _FlowCollector()
    for row, event_args in columns.notes:
        flows.note(row, event_args)
    flows.emit(builder)
    builder.metadata.update(
        {
            "source": str(path),
            "format": "xplane",
            "profile_start_time_ns": start_time_ns or None,
            "profile_stop_time_ns": _profile_time(
                environment, "profile_stop_time", builder.warnings
            )
            or None,
            "profile_options": environment.get("profile_options", {}),
            "task_environment": {
                key: value for key, value in environment.items() if key != "profile_options"
            },
            "hostnames": list(space.hostnames),
            "plane_stats": plane_stats,
        }
    )
    builder.warnings.extend(f"xspace error: {text}" for text in space.errors)
    builder.warnings.extend(f"xspace warning: {text}" for text in space.warnings)
    return builder.build(sort=False)


def _varint(data: bytes, position: int) -> tuple[int, int] | None:
    """(value, next position) of the varint at `position`, or None when it is cut or too long."""
    value, shift = 0, 0
    while position < len(data) and shift < 64:
        byte = data[position]
        value |= (byte & 0x7F) << shift
        position += 1
        if byte < 0x80:
            return value, position
        shift += 7
    return None


def looks_like_xspace(head: bytes) -> bool:
    """Whether `head` starts like a serialized XSpace.

    The first byte must be an XSpace field tag followed by a length that stays inside the data
    (when `head` is the whole file: shorter than the sniff window); a plane must then start
    with an XPlane field tag. A newline is XSpace's planes tag, so Kineto JSON, which starts
    with "\\n{", would pass a one-byte test; text without control bytes is never accepted.
    """
    if len(head) < 2 or head[0] not in _XSPACE_FIRST_BYTES:
        return False
    if len(head.translate(None, _CONTROL_BYTES)) == len(head):
        return False
    found = _varint(head, 1)
    if found is None:
        return False
    length, body = found
    if len(head) < SNIFF_BYTES and body + length > len(head):
        return False
    if head[0] != _XSPACE_PLANES_TAG or length == 0 or body >= len(head):
        return True
    return head[body] in _XPLANE_FIRST_BYTES


@dataclass(frozen=True)
class XPlaneReader:
    """`*.xplane.pb` (XSpace protobuf) from TensorFlow, JAX/XLA, xprof."""

    name: str = "xplane"

    def sniff(self, head: bytes) -> bool:
        """A protobuf whose first field is a well-formed XSpace field (see `looks_like_xspace`)."""
        return looks_like_xspace(head)

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Parse the whole XSpace."""
        return read_xplane(path, data.data)


READER = XPlaneReader()
