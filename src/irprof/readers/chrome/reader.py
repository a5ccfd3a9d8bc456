"""Chrome Trace Event JSON reader: PyTorch/Kineto, xprof trace_viewer, JAX perfetto_trace.json.gz.

Speed and memory are the point here. The event array is located without parsing the whole file
and decoded by `msgspec` into small typed structs one chunk of ~256 KB at a time (see
`chrome_decode`): every field of a chunk's events, `args` as raw JSON, becomes a column with a
C-level map or a numpy call (no Python code per event), and the structs die with their chunk, so
they are walked while still in cache and never all alive at once. The raw `args` are copied once
into a file-order buffer and gathered into the Trace's time-ordered blob run by run.

Time: `ts`/`dur` are microseconds (the spec; `displayTimeUnit` only changes how viewers display
them, so it is recorded in metadata, not applied). They become integer ns exactly, rounded half
to even: JSON integers (Kineto's epoch microseconds) are decoded as ints and scaled; fractions
below 2**40 us are decoded as floats only where the float provably rounds to the text's ns
(`chrome_exact.float_ns`); anything else, from the first chunk that needs it on, is decoded as
its decimal text and converted by numpy over the joined digits (no float step, no Python code
per value), so epoch microseconds such as 1700000000123456.789 keep their nanoseconds.
Kineto's `baseTimeNanoseconds` is added, which makes Kineto times epoch ns.

Phases: X (complete); B/E paired per (pid, tid) stack, unbalanced ones reported in
`Trace.warnings`; async b/e and S/F paired the same way on a track per (pid, cat, id) tree
(`chrome.async_events`); i/I/n (INSTANT); C (COUNTER, the values stay in args); M (process and
thread names, sort indices into metadata); s/t/f flows bound to slices (see `chrome_flows`).
Events of other phases are counted in `Trace.warnings`.

Kinds come from `KIND_BY_CATEGORY` (Kineto's categories); events without a known category are
classified from their args: `hlo_op` -> KERNEL (JAX/XLA thunks), `step_num` -> STEP, a
`long_name` "<node>:<name>" (xprof trace_viewer's TF ops) -> FRAMEWORK_OP, a name starting with
"$" (JAX's Python tracer) -> PYTHON, zero duration -> INSTANT, else OTHER.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError
from irprof.readers.chrome.async_events import async_thread, unread_phases_warning
from irprof.readers.chrome.checks import base_time_ns, check_times, repair_utf8
from irprof.readers.chrome.columns import (
    ArgsText,
    InternedNames,
    Interner,
    MetadataRows,
    args_blob,
    classify,
    compact_table,
    intern,
    last_metadata_rows,
    metadata_names,
    numeric_id,
    numeric_order,
    tracks_table,
)
from irprof.readers.chrome.decode import (
    MAX_JSON_DEPTH,
    WHITESPACE,
    AnyEventFields,
    EventText,
    SpanMismatch,
    locate_events,
)
from irprof.readers.chrome.exact import NanosecondColumn
from irprof.readers.chrome.flows import FLOW_END, FLOW_START, FlowPoints, bind_flows
from irprof.readers.chrome.pairing import merge_args, pair_begin_end
from irprof.readers.trace_bytes import TraceBytes, handed_over
from irprof.trace.columns import check_time_columns, dense_unique, time_order
from irprof.trace.model import EventKind, Flows, Trace

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]

PHASE_SLICE, PHASE_BEGIN, PHASE_END, PHASE_INSTANT, PHASE_COUNTER, PHASE_META = 1, 2, 3, 4, 5, 6
PHASE_FLOW_START, PHASE_FLOW_STEP, PHASE_FLOW_END = 7, 8, 9
PHASE_ASYNC_BEGIN, PHASE_ASYNC_END = 10, 11  # rewritten to B/E on their tree's track
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
    "b": PHASE_ASYNC_BEGIN,
    "e": PHASE_ASYNC_END,
    "S": PHASE_ASYNC_BEGIN,
    "F": PHASE_ASYNC_END,
}
MAX_METADATA_FIELD_BYTES = 4096
UTF8_BOM = b"\xef\xbb\xbf"


class _PhaseCodes(dict[str, int]):
    """PHASE_CODES with 0 for unknown phases, usable as a C-level `map` function."""

    def __missing__(self, key: str) -> int:
        return 0


@dataclass(frozen=True)
class _Shape:
    """The fields pass's columns, one entry per event in file order."""

    phase: I8
    track: I64
    pids: list[int | str]
    tids: list[int | str]
    meta: MetadataRows  # the M events, one row per distinct (name, pid, tid): the last wins
    ts_ns: I64
    dur_ns: I64
    cat_ids: I64
    cats: list[str]
    names: InternedNames
    args: ArgsText
    flows: FlowPoints | None


@dataclass(frozen=True)
class _FlowFields:
    rows: I64
    key_ids: I64
    binds_next: npt.NDArray[np.bool_]
    flow_id: I64


class _Column:
    """A growing typed column: chunks are appended in place, so no per-chunk array survives."""

    def __init__(self, dtype: type[Any]) -> None:
        self.dtype = np.dtype(dtype)
        self.values = array({1: "b", 8: "q"}[self.dtype.itemsize])

    def append(self, chunk: npt.NDArray[Any]) -> None:
        """Add the values of one chunk."""
        self.values.frombytes(np.ascontiguousarray(chunk, dtype=self.dtype).data.cast("B"))

    def array(self) -> Any:
        """Every value added, as a numpy array of the column's type (no copy)."""
        return np.frombuffer(self.values, dtype=self.dtype)


class _Parts:
    """Bytes collected part by part; `getvalue()` joins them (an `io.BytesIO` without the
    copy into one growing buffer)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, part: bytes) -> None:
        """Add one part."""
        self.parts.append(part)

    def getvalue(self) -> bytes:
        """Every part, joined."""
        return b"".join(self.parts)


class _KeyInterner(Interner):
    """An `Interner` that also lists the values added since `take_new` was last called."""

    def __init__(self) -> None:
        super().__init__()
        self.new: list[Any] = []

    def __missing__(self, value: Any) -> int:
        self.new.append(value)
        return super().__missing__(value)

    def take_new(self) -> list[Any]:
        """The values added since the last call, in first-seen order."""
        new, self.new = self.new, []
        return new


class _KeyField:
    """One field of the interned event keys, per event: the key table's column at each key id."""

    def __init__(self, table: array[int], key_ids: _Column, dtype: type[Any]) -> None:
        self.table, self.key_ids, self.dtype = table, key_ids, dtype

    def array(self) -> Any:
        """The field's value (an id, or a phase code) of every event added."""
        table = np.frombuffer(self.table, dtype=np.int64)
        return table[self.key_ids.array()].astype(self.dtype)


class FieldColumns:
    """Accumulates the columns of the fields pass, one decoded chunk of events at a time.

    An event's (ph, cat, pid, tid, name) is interned as one key in one C-level pass (a trace has
    a few thousand distinct keys for millions of events); the per-field ids and phase codes are
    looked up in the small key table. `interners` (pid, tid, cat, name) are shared by a
    streaming converter's segments, so that ids stay the same over the whole file; by default
    each instance has its own. Ids are in first-seen order either way.
    """

    def __init__(
        self,
        path: Path,
        interners: tuple[Interner, Interner, Interner, Interner] | None = None,
        first_row: int = 0,
    ) -> None:
        self.rows = 0
        self.ts_ns = NanosecondColumn(path, "ts", first_row)
        self.dur_ns = NanosecondColumn(path, "dur", first_row)
        self.pid, self.tid, self.cat, self.name = interners or (
            Interner(),
            Interner(),
            Interner(),
            Interner(),
        )
        self._keys = _KeyInterner()
        self._key_ids = _Column(np.int64)
        # Per key: phase code, pid, tid, cat and name ids.
        self._key_table = tuple(array("q") for _ in range(5))
        self.phase, self.pid_ids, self.tid_ids, self.cat_ids, self.name_ids = (
            _KeyField(table, self._key_ids, dtype)
            for table, dtype in zip(self._key_table, (np.int8, *[np.int64] * 4), strict=True)
        )
        self.args_text = _Parts()  # every event's raw args, back to back in file order
        self.args_length = _Column(np.int64)
        self.unread: dict[str, int] = {}  # events per phase not read
        self.flow_rows: list[I64] = []
        self.flow_ids: list[I64 | list[Any]] = []
        self.binds_next: list[npt.NDArray[np.bool_]] = []

    def _add_keys(self, keys: list[tuple[str, str, int | str, int | str, str]]) -> None:
        phases, pids, tids, cats, names = self._key_table
        for ph, cat, pid, tid, name in keys:
            phases.append(_CODES[ph])
            pids.append(self.pid[pid])
            tids.append(self.tid[tid])
            cats.append(self.cat[cat])
            names.append(self.name[name])

    def add(
        self,
        events: Sequence[AnyEventFields],
        ts_ns: I64 | None = None,
        dur_ns: I64 | None = None,
    ) -> None:
        """Take the columns of one chunk (its structs and their input text die afterwards);
        `ts_ns`/`dur_ns`: its times when already converted (`EventText.timed_chunks`), else
        the events hold their text."""
        count = len(events)
        marks = self._marks()
        key_ids = self._keys.ids(map(_key, events), count)
        self._add_keys(self._keys.take_new())
        phase = np.frombuffer(self._key_table[0], dtype=np.int64)[key_ids]
        if (phase >= PHASE_ASYNC_BEGIN).any():
            # Interned again with each async event on its tree's thread, in event order, so
            # that ids (and the track order) do not depend on where chunks end.
            self._roll_back(marks)
            key_ids = self._keys.ids(map(_moved_key, events), count)
            self._add_keys(self._keys.take_new())
            phase = np.frombuffer(self._key_table[0], dtype=np.int64)[key_ids]
        if (phase == 0).any():
            for row in np.nonzero(phase == 0)[0].tolist():
                ph = events[row].ph
                self.unread[ph] = self.unread.get(ph, 0) + 1
        self._key_ids.append(key_ids)
        if ts_ns is None or dur_ns is None:
            self.ts_ns.add(list(map(_ts, events)))
            self.dur_ns.add(list(map(_dur, events)))
        else:
            self.ts_ns.add_ns(ts_ns)
            self.dur_ns.add_ns(dur_ns)
        # Copied out of the chunk's text, which is freed with the chunk; no object per event.
        raw_args = list(map(_args, events))
        self.args_length.append(np.fromiter(map(len, raw_args), np.int64, count))
        self.args_text.write(b"".join(raw_args))  # one part per chunk, never copied again
        flow_rows = np.nonzero((phase >= PHASE_FLOW_START) & (phase <= PHASE_FLOW_END))[0]
        if len(flow_rows):
            flow_list = flow_rows.tolist()  # gathered in C (itemgetter gives a tuple for 2+)
            flow_events = (
                itemgetter(*flow_list)(events) if len(flow_list) > 1 else [events[flow_list[0]]]
            )
            self.flow_rows.append(flow_rows + self.rows)
            # Kineto's ids are ints: kept in numpy, no Python int survives the chunk (a few
            # survivors per arena would keep the whole pass's memory from being returned).
            try:
                ids: I64 | list[Any] = np.fromiter(map(_id, flow_events), np.int64)
            except (TypeError, ValueError, OverflowError):
                ids = list(map(_id, flow_events))
            self.flow_ids.append(ids)
            binds = map("e".__ne__, map(_bp, flow_events))
            self.binds_next.append(np.fromiter(binds, np.bool_, len(flow_events)))
        self.rows += count

    def _marks(self) -> tuple[int, ...]:
        """Sizes of the interners and of the key table, to roll a chunk back to."""
        return (len(self.pid), len(self.tid), len(self.cat), len(self.name), len(self._keys))

    def _roll_back(self, marks: tuple[int, ...]) -> None:
        """Forget what the last chunk interned (ids are positions: the newest go first)."""
        interners = (self.pid, self.tid, self.cat, self.name, self._keys)
        for interner, mark in zip(interners, marks, strict=True):
            for value in list(interner)[mark:]:
                del interner[value]
        for column in self._key_table:
            del column[marks[-1] :]

    def flow_fields(self, cat_ids: I64) -> _FlowFields | None:
        """Flow events' rows, (category, id) keys, `bp` and numeric ids."""
        if not self.flow_rows:
            return None
        rows = np.concatenate(self.flow_rows)
        if all(isinstance(ids, np.ndarray) for ids in self.flow_ids):
            numeric, inverse = np.unique(np.concatenate(self.flow_ids), return_inverse=True)
            id_ids, table_size = inverse.astype(np.int64).reshape(-1), len(numeric)
        else:
            values = [
                value
                for ids in self.flow_ids
                for value in (ids.tolist() if isinstance(ids, np.ndarray) else ids)
            ]
            id_ids, id_table = intern(values)
            numeric = np.array(
                [0 if value is None else numeric_id(value) for value in id_table], np.int64
            )
            table_size = len(id_table)
        # A flow is identified by (category, id): combine two interned columns, no tuples.
        return _FlowFields(
            rows=rows,
            key_ids=cat_ids[rows] * max(table_size, 1) + id_ids,
            binds_next=np.concatenate(self.binds_next),
            flow_id=numeric[id_ids],
        )


_CODES = _PhaseCodes(PHASE_CODES)
_key = attrgetter("ph", "cat", "pid", "tid", "name")


def _moved_key(event: AnyEventFields) -> tuple[str, str, int | str, int | str, str]:
    """`_key`, with an async event as a B/E event on its tree's thread (`async_events`)."""
    code = _CODES[event.ph]
    if code < PHASE_ASYNC_BEGIN:
        return (event.ph, event.cat, event.pid, event.tid, event.name)
    thread = async_thread(event.cat, event.id, event.id2)
    return ("B" if code == PHASE_ASYNC_BEGIN else "E", event.cat, event.pid, thread, event.name)


_id, _bp = attrgetter("id"), attrgetter("bp")
_ts, _dur, _args = attrgetter("ts"), attrgetter("dur"), attrgetter("args")


def _shape_columns(text: EventText, base_ns: int, warnings: list[str]) -> _Shape:
    """Decode the fields pass chunk by chunk into numpy columns."""
    columns = FieldColumns(text.path)
    for events, ts_ns, dur_ns in text.timed_chunks():
        columns.add(events, ts_ns, dur_ns)
        del events  # one chunk alive at a time (see `EventText.timed_chunks`)
    if unread := unread_phases_warning(columns.unread):
        warnings.append(unread)
    phase = columns.phase.array()
    pid_ids, pids = numeric_order(columns.pid_ids.array(), columns.pid.table)
    tid_ids, tids = numeric_order(columns.tid_ids.array(), columns.tid.table)
    cat_ids = columns.cat_ids.array()
    track = pid_ids * max(len(tids), 1) + tid_ids
    names = InternedNames(columns.name_ids.array(), columns.name.table)
    meta = last_metadata_rows(np.nonzero(phase == PHASE_META)[0], track, names.ids)
    ts_ns, dur_ns = columns.ts_ns.array(), columns.dur_ns.array()
    check_times(text.path, ts_ns, dur_ns, base_ns)
    ts_ns = ts_ns + base_ns
    dur_ns = check_time_columns(
        text.path, ts_ns, dur_ns, warnings, lambda row: f"traceEvents[{row}]"
    )
    return _Shape(
        phase=phase,
        track=track,
        pids=pids,
        tids=tids,
        meta=meta,
        ts_ns=ts_ns,
        dur_ns=dur_ns,
        cat_ids=cat_ids,
        cats=columns.cat.table,
        names=names,
        args=ArgsText(columns.args_text.parts, columns.args_length.array()),
        flows=_flow_points(columns.flow_fields(cat_ids), phase, track, ts_ns),
    )


def _flow_points(
    fields: _FlowFields | None, phase_all: I8, track: I64, ts_ns: I64
) -> FlowPoints | None:
    if fields is None:
        return None
    rows = fields.rows
    phase = (phase_all[rows] - (PHASE_FLOW_START - FLOW_START)).astype(np.int8)
    return FlowPoints(
        track=track[rows],
        ts_ns=ts_ns[rows],
        phase=phase,
        bind_enclosing=~((phase == FLOW_END) & fields.binds_next),
        key=fields.key_ids,
        flow_id=fields.flow_id,
        order=rows.astype(np.int64),
    )


def read_chrome(path: Path, data: bytes | TraceBytes) -> Trace:
    """Parse Chrome Trace Event JSON (object or bare-array form) into a Trace.

    Handed over as `TraceBytes`, the text is released once its columns are built, before the
    args blob is gathered: the two together were the read's peak memory.
    """
    given = handed_over(data)
    del data
    text, replaced = repair_utf8(without_bom(given.data))
    buffer = given if text is given.data else TraceBytes(text)  # a repaired copy is ours
    del text
    if buffer is not given:
        given.release()
    warnings = [f"{replaced} invalid UTF-8 sequence(s) replaced by U+FFFD"] if replaced else []
    try:
        try:
            return _read_events(path, locate_events(path, buffer.data), warnings, buffer)
        except SpanMismatch:
            located = locate_events(path, buffer.data, exact=True)
            return _read_events(path, located, warnings, buffer)
    except RecursionError:
        raise TraceFormatError(
            path, f"JSON nested deeper than {MAX_JSON_DEPTH}-odd levels; flatten it"
        ) from None


def without_bom(data: bytes) -> bytes:
    """`data` without a leading UTF-8 byte order mark (some Windows tools write one; JSON
    parsers refuse it)."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


def _read_events(path: Path, text: EventText, notes: list[str], buffer: TraceBytes) -> Trace:
    """The Trace of located events; `buffer`, the text they are located in, is released once
    their columns are built (`text` is the last other reference to it)."""
    base_ns = base_time_ns(path, text.fields.get("baseTimeNanoseconds"))
    warnings = list(notes)
    shape = _shape_columns(text, base_ns, warnings)
    fields = text.fields
    del text
    buffer.release()

    phase = shape.phase
    direct = (phase == PHASE_SLICE) | (phase == PHASE_INSTANT) | (phase == PHASE_COUNTER)
    direct_rows = np.nonzero(direct)[0]
    paired = pair_begin_end(phase, shape.track, shape.ts_ns, PHASE_BEGIN, PHASE_END, warnings)
    row_source = np.concatenate([direct_rows, paired.begin_rows])
    row_ts = shape.ts_ns[row_source]
    row_dur = np.concatenate([shape.dur_ns[direct_rows], paired.dur_ns])
    order = time_order(row_ts, row_dur)
    row_source, row_ts, row_dur = row_source[order], row_ts[order], row_dur[order]

    names = shape.names
    args = shape.args
    processes, threads, sort_index = metadata_names(shape.meta, shape.pids, shape.tids, names, args)
    kinds = classify(row_source, shape.cat_ids, shape.cats, names, args, row_dur)
    kinds[phase[row_source] == PHASE_INSTANT] = EventKind.INSTANT
    kinds[phase[row_source] == PHASE_COUNTER] = EventKind.COUNTER
    name_ids, strings = compact_table(names.ids[row_source], names.table)
    merged = {
        begin: merge_args(bytes(args[begin]), bytes(args[end]))
        for begin, end in zip(paired.begin_rows.tolist(), paired.end_rows.tolist(), strict=True)
        if len(args[end]) and bytes(args[end]) != b"{}"
    }
    blob, offsets = args_blob(args, row_source, merged)
    del args

    flows = Flows.empty()
    if shape.flows is not None:
        is_slice = np.isin(phase[row_source], [PHASE_SLICE, PHASE_BEGIN])
        slice_rows = np.nonzero(is_slice)[0].astype(np.int64)
        flows, unbound = bind_flows(
            shape.flows,
            slice_rows,
            shape.track[row_source][slice_rows],
            row_ts[slice_rows],
            row_ts[slice_rows] + row_dur[slice_rows],
        )
        if unbound:
            warnings.append(f"{unbound} flow event(s) found no slice to bind to")

    # Only tracks that hold events: metadata events name threads that may never record one.
    track_keys, track_rows = dense_unique(shape.track[row_source])
    return Trace(
        ts_ns=row_ts,
        dur_ns=row_dur,
        track=track_rows.astype(np.int32),
        name=name_ids.astype(np.int32),
        kind=kinds,
        strings=tuple(strings),
        tracks=tracks_table(track_keys, shape.pids, shape.tids, processes, threads),
        args_offsets=offsets,
        args_blob=blob,
        flows=flows,
        metadata=trace_metadata(path, fields, base_ns, sort_index),
        warnings=tuple(warnings),
    )


def trace_metadata(
    path: Path, fields: dict[str, Any], base_ns: int, sort_index: dict[str, Any]
) -> dict[str, Any]:
    """`Trace.metadata` of a Chrome trace: its small top-level fields, base time, sort indices."""
    small = {
        key: value
        for key, value in fields.items()
        if key not in {"displayTimeUnit", "baseTimeNanoseconds"}
        and len(msgspec.json.encode(value)) <= MAX_METADATA_FIELD_BYTES
    }
    return {
        "source": str(path),
        "format": "chrome",
        "display_time_unit": fields.get("displayTimeUnit"),
        "base_time_ns": base_ns or None,
        "sort_index": sort_index,
        "trace_fields": small,
    }


@dataclass(frozen=True)
class ChromeReader:
    """Chrome Trace Event JSON (object or array form), gzip or not."""

    name: str = "chrome"

    def sniff(self, head: bytes) -> bool:
        """JSON: an object or an array as the first non-blank character."""
        return head.lstrip(WHITESPACE)[:1] in (b"{", b"[")

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Parse the whole document."""
        return read_chrome(path, data)


READER = ChromeReader()
