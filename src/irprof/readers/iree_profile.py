"""IREE HAL profiles, as projected by `iree-profile dispatch --dispatch_events --format=jsonl`.

One JSON object per line. Each `host_dispatch_event` (CPU: timed on the host by the executing
worker) or `dispatch_event` (a device-timestamped dispatch) becomes one `DISPATCH` event named by
its dispatch key (`main_dispatch_2_matmul_16x128x6272_f32`), on one track per (device, queue),
with the queue/command-buffer context and tile counts as arguments. Summary lines are kept as
metadata; invalid events (the profiler's own `valid: false`) are counted and skipped. Times are
IREE host-clock nanoseconds (`iree_host_time_ns`, a monotonic clock, not epoch).
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from irprof.errors import TraceFormatError
from irprof.readers.trace_bytes import TraceBytes
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

EVENT_TYPES = (b"host_dispatch_event", b"dispatch_event")
SUMMARY_TYPE = "dispatch_summary"
# Arguments copied onto each event: where it ran and how it was tiled.
CONTEXT_FIELDS = (
    "submission_id",
    "command_buffer_id",
    "command_index",
    "executable_id",
    "function_ordinal",
    "event_id",
    "stream_id",
    "workgroup_count",
    "workgroup_size",
    "tile_count",
    "tile_duration_sum_ns",
)
INT64_MAX = (1 << 63) - 1

_decode_line = msgspec.json.Decoder(dict[str, Any])
# The first record's `type` comes first (iree-profile writes it there); JSON whitespace may
# surround any token, as when the lines were re-written by another JSON tool.
_FIRST_RECORD = re.compile(
    rb'[ \t\r\n]*\{[ \t\r\n]*"type"[ \t\r\n]*:[ \t\r\n]*"(?:'
    + b"|".join(re.escape(kind) for kind in (*EVENT_TYPES, SUMMARY_TYPE.encode()))
    + rb')"'
)


def _integer(record: dict[str, Any], field: str, path: Path, line: int) -> int:
    value = record.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise TraceFormatError(
            path,
            f"field '{field}' must be a non-negative integer, got {value!r}",
            where=f"line {line}",
        )
    return value


def read_iree_profile(path: str | Path, data: bytes | None = None) -> Trace:
    """Every dispatch invocation of an `iree-profile dispatch --dispatch_events` JSONL file."""
    source = Path(path)
    if data is None:
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise TraceFormatError(source, f"cannot read: {exc.strerror or exc}") from exc
    lines = array("q")  # file line of each event, for the builder's time check
    builder = TraceBuilder(source, lambda row: f"line {lines[row]}")
    invalid = 0
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = _decode_line.decode(raw)
        except msgspec.DecodeError as exc:
            raise TraceFormatError(
                source,
                f"not a JSON object ({exc}); expected iree-profile --format=jsonl lines",
                where=f"line {number}",
            ) from exc
        except UnicodeDecodeError as exc:  # msgspec checks a string's UTF-8 as it reads it
            raise TraceFormatError(
                source,
                f"not UTF-8 text ({exc.reason} in a string); expected iree-profile "
                "--format=jsonl lines",
                where=f"line {number}",
            ) from exc
        except RecursionError as exc:  # msgspec recurses per nesting level
            raise TraceFormatError(
                source, "JSON nested too deep for an iree-profile record", where=f"line {number}"
            ) from exc
        kind = record.get("type")
        if kind == SUMMARY_TYPE:
            builder.metadata["iree_dispatch_summary"] = record
            continue
        if not isinstance(kind, str) or kind.encode() not in EVENT_TYPES:
            continue  # other projections' records carry no dispatch timing
        if record.get("valid") is False:
            invalid += 1
            continue
        key = record.get("key")
        if not isinstance(key, str) or not key:
            raise TraceFormatError(
                source,
                "dispatch event without a 'key' (dispatch function name)",
                where=f"line {number}",
            )
        start = _start_ns(record, source, number)
        duration = _integer(record, "duration_ns", source, number)
        device = _integer(record, "physical_device_ordinal", source, number)
        queue = _integer(record, "queue_ordinal", source, number)
        track = builder.track(device, queue, f"iree device {device}", f"queue {queue}")
        args = {"dispatch": key, "device": device, "queue": queue}
        args.update({name: record[name] for name in CONTEXT_FIELDS if name in record})
        builder.add(start, duration, track, key, EventKind.DISPATCH, args)
        lines.append(number)
    builder.metadata["clock"] = "iree_host_time_ns (monotonic)"
    if invalid:
        builder.warnings.append(f"{invalid} dispatch events marked invalid by IREE were skipped")
    return builder.build()


def _start_ns(record: dict[str, Any], path: Path, line: int) -> int:
    for field in ("start_host_time_ns", "start_time_ns"):
        if field in record:
            return _integer(record, field, path, line)
    raise TraceFormatError(
        path, "dispatch event without a start time ('start_host_time_ns')", where=f"line {line}"
    )


@dataclass(frozen=True)
class IreeProfileReader:
    """`iree-profile dispatch --dispatch_events --format=jsonl` output."""

    name: str = "iree-profile"

    def sniff(self, head: bytes) -> bool:
        """The first record is an iree-profile dispatch record (`{"type": "..."`)."""
        return _FIRST_RECORD.match(head) is not None

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Parse the whole JSONL file."""
        return read_iree_profile(path, data.data)


READER = IreeProfileReader()
