"""Chrome Trace Event JSON reader: PyTorch/Kineto, xprof trace_viewer, JAX perfetto_trace.json.gz.

Speed is the point here: a typed `msgspec` decode turns the events into small structs with `args`
kept as raw JSON bytes, then every column is built with one comprehension or numpy call, never one
Python call per event. The events' raw `args` are concatenated as they are into the Trace's
argument blob.

Time: `ts`/`dur` are microseconds (the spec; `displayTimeUnit` only changes how viewers display
them, so it is recorded in metadata, not applied). They are converted to integer ns by splitting
the float into its integer and fractional microseconds, so the only error is the decimal -> float
parse, which stays under 0.5 ns while |ts| < 2^42 us (51 days: relative times, Kineto with its
`baseTimeNanoseconds`). Larger values (epoch microseconds such as 1700000000123456.789, which a
float64 holds only to ~0.25 us) are re-read as exact decimal text in a second, ts-only decode.
Kineto's `baseTimeNanoseconds` is added, which makes Kineto times epoch ns.

Phases: X (complete); B/E paired per (pid, tid) stack, unbalanced ones reported in
`Trace.warnings`; i/I/n (INSTANT); C (COUNTER, the values stay in args); M (process and thread
names, sort indices into metadata); s/t/f flows bound to slices (see `chrome_flows`).

Kinds come from `KIND_BY_CATEGORY` (Kineto's categories); events without a known category are
classified from their args: `hlo_op` -> KERNEL (JAX/XLA thunks), `step_num` -> STEP, a
`long_name` "<node>:<name>" (xprof trace_viewer's TF ops) -> FRAMEWORK_OP, a name starting with
"$" (JAX's Python tracer) -> PYTHON, zero duration -> INSTANT, else OTHER.
"""

from __future__ import annotations

import decimal
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError
from irprof.readers.chrome_flows import FLOW_END, FLOW_START, FlowPoints, bind_flows
from irprof.readers.chrome_pairing import pair_begin_end
from irprof.trace.model import EventKind, Flows, Trace, Tracks

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

KIND_BY_CATEGORY: dict[str, EventKind] = {
    "cpu_op": EventKind.FRAMEWORK_OP,
    "operator": EventKind.FRAMEWORK_OP,  # older Kineto
    "kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.KERNEL,
    "gpu_memset": EventKind.KERNEL,
    "python_function": EventKind.PYTHON,
    "cuda_runtime": EventKind.RUNTIME,
    "cuda_driver": EventKind.RUNTIME,
    "cpu_instant_event": EventKind.INSTANT,
    "user_annotation": EventKind.OTHER,
    "gpu_user_annotation": EventKind.OTHER,
}
STEP_NAME_PREFIX = "ProfilerStep"  # Kineto user_annotation of `prof.step()`
PHASE_SLICE, PHASE_BEGIN, PHASE_END, PHASE_INSTANT, PHASE_COUNTER, PHASE_META = 1, 2, 3, 4, 5, 6
PHASE_FLOW_START, PHASE_FLOW_STEP, PHASE_FLOW_END = 7, 8, 9
PHASE_CODES = {
    "X": PHASE_SLICE,
    "B": PHASE_BEGIN,
    "E": PHASE_END,
    "i": PHASE_INSTANT,
    "I": PHASE_INSTANT,
    "n": PHASE_INSTANT,
    "C": PHASE_COUNTER,
    "M": PHASE_META,
    "s": PHASE_FLOW_START,
    "t": PHASE_FLOW_STEP,
    "f": PHASE_FLOW_END,
}
_WHITESPACE = b" \t\r\n\xef\xbb\xbf"


class ChromeEvent(msgspec.Struct, gc=False):
    """One trace event; unknown keys are skipped by the decoder, `args` stays raw JSON."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: int | str = 0
    tid: int | str = 0
    id: int | str | None = None
    bp: str = ""
    args: msgspec.Raw = msgspec.Raw()


class _ExactTime(msgspec.Struct, gc=False):
    """Only `ts`, as the number's source text, for traces too large for float precision."""

    ts: msgspec.Raw = msgspec.Raw(b"0")


# Below this many microseconds a float64 `ts` is exact to the nanosecond (ulp < 1e-3 us).
FLOAT_EXACT_LIMIT_US = float(2**42)

_decode_top = msgspec.json.Decoder(
    dict[str, msgspec.Raw] | list[msgspec.Raw] | str | float | bool | None
)
_decode_events = msgspec.json.Decoder(list[ChromeEvent])
_decode_any = msgspec.json.Decoder()
_decode_exact_times = msgspec.json.Decoder(list[_ExactTime])


def exact_ns(text: bytes) -> int:
    """Decimal microseconds text -> integer ns, rounded half to even, with no float step."""
    scaled = decimal.Decimal(text.decode("ascii")) * 1000
    return int(scaled.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def us_to_ns(micros: F64) -> I64:
    """Float microseconds -> int ns, exact to the parse error (integer and fraction apart)."""
    whole = np.floor(micros)
    return whole.astype(np.int64) * 1000 + np.rint((micros - whole) * 1000.0).astype(np.int64)


def _numeric_id(value: int | str) -> int:
    """Ints stay; strings (Kineto's "Spans", "stream 7") get a stable crc32-based id."""
    return value if isinstance(value, int) else zlib.crc32(value.encode("utf-8"))


@dataclass(frozen=True)
class _TopLevel:
    events: list[ChromeEvent]
    fields: dict[str, Any]
    raw_events: bytes | msgspec.Raw  # the event array's JSON text, not copied


def _decode(path: Path, data: bytes) -> _TopLevel:
    if data.lstrip(_WHITESPACE)[:1] == b"[":
        return _decode_array(path, data)
    try:
        top = _decode_top.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(path, f"not valid JSON: {exc}") from exc
    if not isinstance(top, dict) or "traceEvents" not in top:
        keys = ", ".join(sorted(top)[:8]) if isinstance(top, dict) else "none"
        raise TraceFormatError(
            path, f"JSON object is not a Chrome trace: no 'traceEvents' (keys: {keys or 'none'})"
        )
    # The event array is decoded straight from its span of the input: no copy of the text.
    raw_events = top.pop("traceEvents")
    fields = {key: _decode_any.decode(value) for key, value in top.items()}
    return _TopLevel(_decode_event_list(path, raw_events), fields, raw_events)


def _decode_array(path: Path, data: bytes) -> _TopLevel:
    """The bare-array form, which may legally lack its closing bracket (written as it streamed)."""
    try:
        return _TopLevel(_decode_event_list(path, data), {}, data)
    except TraceFormatError:
        stripped = data.rstrip(_WHITESPACE)
        if stripped.endswith(b"]"):
            raise
        closed = stripped.rstrip(b",") + b"]"
        return _TopLevel(_decode_event_list(path, closed), {}, closed)


def _decode_event_list(path: Path, raw_events: bytes | msgspec.Raw) -> list[ChromeEvent]:
    try:
        return _decode_events.decode(raw_events)
    except msgspec.ValidationError as exc:
        raise TraceFormatError(path, f"not a Chrome trace event list: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise TraceFormatError(path, f"not valid JSON: {exc}") from exc


def _kinds(
    events: list[ChromeEvent], phase: npt.NDArray[np.int8], cat_ids: I64, cats: list[str]
) -> npt.NDArray[np.int8]:
    kind_of_cat = np.array(
        [int(KIND_BY_CATEGORY.get(cat, EventKind.OTHER)) for cat in cats], dtype=np.int8
    )
    kinds = kind_of_cat[cat_ids] if len(cats) else np.zeros(len(events), np.int8)
    known = np.array([cat in KIND_BY_CATEGORY for cat in cats], dtype=np.bool_)
    # Only slices need a closer look; flow and metadata events never become rows.
    is_slice = (phase == PHASE_SLICE) | (phase == PHASE_BEGIN)
    unknown_rows = np.nonzero(is_slice & ~known[cat_ids])[0] if len(cats) else np.zeros(0, int)
    for row in unknown_rows.tolist():
        event = events[row]
        args = bytes(event.args)
        if b'"hlo_op"' in args:
            kinds[row] = EventKind.KERNEL
        elif b'"step_num"' in args:
            kinds[row] = EventKind.STEP
        elif b'"long_name"' in args and _is_tf_op(event.name, args):
            kinds[row] = EventKind.FRAMEWORK_OP
        elif event.name.startswith("$"):
            kinds[row] = EventKind.PYTHON
        elif event.dur == 0:
            kinds[row] = EventKind.INSTANT
    if "user_annotation" in cats:
        annotation = cats.index("user_annotation")
        for row in np.nonzero(cat_ids == annotation)[0].tolist():
            if events[row].name.startswith(STEP_NAME_PREFIX):
                kinds[row] = EventKind.STEP
    kinds[phase == PHASE_INSTANT] = EventKind.INSTANT
    kinds[phase == PHASE_COUNTER] = EventKind.COUNTER
    return kinds


def _is_tf_op(name: str, args: bytes) -> bool:
    """xprof trace_viewer names a TF op event by its type, with `long_name` "node:type"."""
    long_name = _decode_any.decode(args).get("long_name")
    return isinstance(long_name, str) and long_name.endswith(":" + name)


def _intern(values: list[Any]) -> tuple[I64, list[Any]]:
    """Ids of `values` in first-seen order, and the table."""
    table: dict[Any, int] = {}
    ids = [table.setdefault(value, len(table)) for value in values]
    return np.asarray(ids, dtype=np.int64), list(table)


def _metadata_names(
    path: Path, events: list[ChromeEvent], meta_rows: list[int]
) -> tuple[dict[int, str], dict[tuple[int, int], str], dict[str, Any]]:
    processes: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    sort_index: dict[str, Any] = {}
    for row in meta_rows:
        event = events[row]
        raw = bytes(event.args)
        args = _decode_any.decode(raw) if raw else {}
        if not isinstance(args, dict):
            continue
        pid, tid = _numeric_id(event.pid), _numeric_id(event.tid)
        if event.name == "process_name":
            processes[pid] = str(args.get("name", pid))
        elif event.name == "thread_name":
            threads[(pid, tid)] = str(args.get("name", tid))
        elif event.name.endswith("sort_index"):
            sort_index[f"{event.name}:{event.pid}:{event.tid}"] = args.get("sort_index")
    return processes, threads, sort_index


def read_chrome(path: Path, data: bytes) -> Trace:
    """Parse Chrome Trace Event JSON (object or bare-array form) into a Trace."""
    top = _decode(path, data)
    events = top.events
    phase_all = np.array([PHASE_CODES.get(event.ph, 0) for event in events], dtype=np.int8)
    meta_rows = np.nonzero(phase_all == PHASE_META)[0].tolist()
    processes, threads, sort_index = _metadata_names(path, events, meta_rows)

    pid_ids, pids = _intern([event.pid for event in events])
    tid_ids, tids = _intern([event.tid for event in events])
    track_all = pid_ids * max(len(tids), 1) + tid_ids

    base_ns = int(top.fields.get("baseTimeNanoseconds") or 0)
    ts_us = np.array([event.ts for event in events], dtype=np.float64)
    if len(ts_us) and float(np.abs(ts_us).max()) >= FLOAT_EXACT_LIMIT_US:
        exact = _decode_exact_times.decode(top.raw_events)
        ts_all = np.array([exact_ns(bytes(item.ts)) for item in exact], dtype=np.int64) + base_ns
    else:
        ts_all = us_to_ns(ts_us) + base_ns
    warnings: list[str] = []

    direct = (phase_all == PHASE_SLICE) | (phase_all == PHASE_INSTANT)
    direct |= phase_all == PHASE_COUNTER
    rows = np.nonzero(direct)[0]
    dur = np.zeros(len(events), dtype=np.int64)
    slice_rows = np.nonzero(phase_all == PHASE_SLICE)[0]
    dur[slice_rows] = us_to_ns(
        np.array([events[row].dur for row in slice_rows.tolist()], dtype=np.float64)
    )
    paired = pair_begin_end(events, phase_all, track_all, ts_all, PHASE_BEGIN, PHASE_END, warnings)
    row_source = np.concatenate([rows, paired.begin_rows])
    row_ts = np.concatenate([ts_all[rows], ts_all[paired.begin_rows]])
    row_dur = np.concatenate([dur[rows], paired.dur_ns])
    order = np.lexsort((-row_dur, row_ts))
    row_source, row_ts, row_dur = row_source[order], row_ts[order], row_dur[order]
    source_list = row_source.tolist()

    cat_ids, cats = _intern([event.cat for event in events])
    kinds_all = _kinds(events, phase_all, cat_ids, cats)
    name_ids, names = _intern([events[row].name for row in source_list])
    merged_args = paired.merged_args
    raw_args = [merged_args.get(row) or events[row].args for row in source_list]
    lengths = np.fromiter((len(raw) for raw in raw_args), dtype=np.int64, count=len(raw_args))
    offsets = np.zeros(len(raw_args) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    blob = b"".join(raw_args)
    blob = _wrap_non_object_args(blob, offsets)

    flows, unbound = _flows(events, phase_all, track_all, ts_all, row_source, row_ts, row_dur)
    if unbound:
        warnings.append(f"{unbound} flow event(s) found no slice to bind to")
    metadata: dict[str, Any] = {
        "source": str(path),
        "format": "chrome",
        "display_time_unit": top.fields.get("displayTimeUnit"),
        "base_time_ns": base_ns or None,
        "sort_index": sort_index,
    }
    metadata["trace_fields"] = {
        key: value
        for key, value in top.fields.items()
        if key not in {"displayTimeUnit", "baseTimeNanoseconds"} and _is_small(value)
    }
    # Only tracks that hold events: metadata events name threads that may never record one.
    track_keys, track_rows = np.unique(track_all[row_source], return_inverse=True)
    tracks = _tracks(track_keys, pids, tids, processes, threads)
    return Trace(
        ts_ns=row_ts,
        dur_ns=row_dur,
        track=track_rows.astype(np.int32),
        name=name_ids.astype(np.int32),
        kind=kinds_all[row_source],
        strings=tuple(names),
        tracks=tracks,
        args_offsets=offsets,
        args_blob=blob,
        flows=flows,
        metadata=metadata,
        warnings=tuple(warnings),
    )


def _tracks(
    track_keys: I64,
    pids: list[int | str],
    tids: list[int | str],
    processes: dict[int, str],
    threads: dict[tuple[int, int], str],
) -> Tracks:
    """Track table for the (pid, tid) keys used, named from the M events when present."""
    width = max(len(tids), 1)
    raw_pid = [pids[int(key) // width] for key in track_keys.tolist()]
    raw_tid = [tids[int(key) % width] for key in track_keys.tolist()]
    pid_of_track = [_numeric_id(pid) for pid in raw_pid]
    tid_of_track = [_numeric_id(tid) for tid in raw_tid]
    return Tracks(
        process=tuple(
            processes.get(pid, str(raw)) for pid, raw in zip(pid_of_track, raw_pid, strict=True)
        ),
        thread=tuple(
            threads.get((pid, tid), str(raw))
            for pid, tid, raw in zip(pid_of_track, tid_of_track, raw_tid, strict=True)
        ),
        pid=tuple(pid_of_track),
        tid=tuple(tid_of_track),
    )


def _is_small(value: Any) -> bool:
    """Top-level fields worth keeping in metadata (not megabytes of device properties)."""
    return len(msgspec.json.encode(value)) <= 4096


def _wrap_non_object_args(blob: bytes, offsets: I64) -> bytes:
    """Args that are not JSON objects (`null`, a number) become {"args": value}."""
    if not blob:
        return blob
    starts = offsets[:-1]
    present = offsets[1:] > starts
    first = np.frombuffer(blob, dtype=np.uint8)[starts[present]]
    odd = np.nonzero(present)[0][first != ord("{")]
    if len(odd) == 0:
        return blob
    parts: list[bytes] = []
    lengths = np.diff(offsets)
    cursor = 0
    for row in odd.tolist():
        start, stop = int(offsets[row]), int(offsets[row + 1])
        parts.append(blob[cursor:start])
        value = blob[start:stop]
        parts.append(b"" if value == b"null" else b'{"args":' + value + b"}")
        lengths[row] = len(parts[-1])
        cursor = stop
    parts.append(blob[cursor:])
    np.cumsum(lengths, out=offsets[1:])
    return b"".join(parts)


def _flows(
    events: list[ChromeEvent],
    phase_all: npt.NDArray[np.int8],
    track_all: I64,
    ts_all: I64,
    row_source: I64,
    row_ts: I64,
    row_dur: I64,
) -> tuple[Flows, int]:
    flow_rows = np.nonzero(phase_all >= PHASE_FLOW_START)[0]
    if len(flow_rows) == 0:
        return Flows.empty(), 0
    flow_events = [events[row] for row in flow_rows.tolist()]
    phase = (phase_all[flow_rows] - (PHASE_FLOW_START - FLOW_START)).astype(np.int8)
    key_ids, _keys = _intern([(event.cat, event.id) for event in flow_events])
    ids = [event.id for event in flow_events]
    binds_next = np.array([event.bp != "e" for event in flow_events], dtype=np.bool_)
    points = FlowPoints(
        track=track_all[flow_rows].astype(np.int64),
        ts_ns=ts_all[flow_rows],
        phase=phase,
        bind_enclosing=~((phase == FLOW_END) & binds_next),
        key=key_ids,
        flow_id=np.array(
            [_numeric_id(value) if value is not None else 0 for value in ids], dtype=np.int64
        ),
        order=flow_rows.astype(np.int64),
    )
    is_slice = np.isin(phase_all[row_source], [PHASE_SLICE, PHASE_BEGIN])
    slice_rows = np.nonzero(is_slice)[0].astype(np.int64)
    return bind_flows(
        points,
        slice_rows,
        track_all[row_source][slice_rows].astype(np.int64),
        row_ts[slice_rows],
        row_ts[slice_rows] + row_dur[slice_rows],
    )


@dataclass(frozen=True)
class ChromeReader:
    """Chrome Trace Event JSON (object or array form), gzip or not."""

    name: str = "chrome"

    def sniff(self, head: bytes) -> bool:
        """JSON: an object or an array as the first non-blank character."""
        stripped = head.lstrip(_WHITESPACE)
        return stripped[:1] in (b"{", b"[")

    def read(self, path: Path, data: bytes) -> Trace:
        """Parse the whole document."""
        return read_chrome(path, data)


READER = ChromeReader()
