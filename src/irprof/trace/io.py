"""Saving and loading a `Trace`: versioned unified JSON (`events.json`) and Parquet.

Both forms read back to a Trace equal field by field to the one saved, arguments byte for byte:
the JSON form splices each event's argument JSON in verbatim and reads it back as raw spans; the
Parquet form stores arguments as a large-string column built from (and read back into) the blob
and offsets buffers directly, with no per-event Python objects. Writes are atomic.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import numpy as np

from irprof.errors import TraceFormatError
from irprof.fileio import atomic_write, read_bytes_maybe_gzip, write_bytes_atomic
from irprof.trace.columns import check_time_columns
from irprof.trace.model import EventKind, Flows, HloProgram, Trace, Tracks
from irprof.trace.validate import decode_base64, index_column, int_column, same_lengths

if TYPE_CHECKING:  # pyarrow loads in ~0.2 s: only the Parquet functions import it
    import pyarrow as pa

EVENTS_FORMAT = "irprof.events"
EVENTS_VERSION = 1
PARQUET_METADATA_KEY = b"irprof"
KIND_LABELS = [kind.label for kind in sorted(EventKind)]


def _header(trace: Trace) -> dict[str, Any]:
    """Everything but the per-event columns, as plain JSON data."""
    return trace_header(
        trace.strings,
        trace.tracks,
        trace.flows,
        trace.metadata,
        trace.warnings,
        trace.hlo_programs,
    )


def trace_header(
    strings: Sequence[str],
    tracks: Tracks,
    flows: Flows,
    metadata: dict[str, Any],
    warnings: Sequence[str],
    hlo_programs: Sequence[HloProgram] = (),
) -> dict[str, Any]:
    """The header of a saved trace from its parts (a streaming writer knows them only at the
    end): string table, tracks, flows, metadata and warnings as plain JSON data."""
    return {
        "format": EVENTS_FORMAT,
        "version": EVENTS_VERSION,
        "kind_labels": KIND_LABELS,
        "strings": list(strings),
        "tracks": {
            "process": list(tracks.process),
            "thread": list(tracks.thread),
            "pid": list(tracks.pid),
            "tid": list(tracks.tid),
        },
        "flows": {
            "src": flows.src.tolist(),
            "dst": flows.dst.tolist(),
            "flow_id": flows.flow_id.tolist(),
        },
        "metadata": metadata,
        "hlo_programs": [
            {
                "program_id": program.program_id,
                "name": program.name,
                "proto_base64": base64.b64encode(program.proto).decode("ascii"),
            }
            for program in hlo_programs
        ],
        "warnings": list(warnings),
    }


class _Tracks(msgspec.Struct):
    process: list[str]
    thread: list[str]
    pid: list[int]
    tid: list[int]


class _Flows(msgspec.Struct):
    src: list[int]
    dst: list[int]
    flow_id: list[int]


class _Program(msgspec.Struct):
    program_id: Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
    name: str
    proto_base64: str


class _Columns(msgspec.Struct):
    ts_ns: list[int]
    dur_ns: list[int]
    track: list[int]
    name: list[int]
    kind: list[int]


class _Header(msgspec.Struct):
    format: str
    version: int
    kind_labels: list[str]
    strings: list[str]
    tracks: _Tracks
    flows: _Flows
    metadata: dict[str, Any]
    hlo_programs: list[_Program]
    warnings: list[str]


class _EventsFile(_Header):
    columns: _Columns
    args: list[msgspec.Raw]


def _kind_remap(path: Path, labels: list[str]) -> np.ndarray[Any, np.dtype[np.int8]]:
    """Stored kind code -> this version's EventKind value (codes are stored with their labels)."""
    try:
        return np.array([int(EventKind.from_label(label)) for label in labels], dtype=np.int8)
    except KeyError as exc:
        raise TraceFormatError(path, f"unknown event kind {exc.args[0]!r}") from exc


def _checked_tracks(path: Path, tracks: _Tracks) -> Tracks:
    same_lengths(path, "header 'tracks'", msgspec.structs.asdict(tracks))
    pid = int_column(path, "tracks.pid", tracks.pid)
    tid = int_column(path, "tracks.tid", tracks.tid)
    return Tracks(
        tuple(tracks.process), tuple(tracks.thread), tuple(pid.tolist()), tuple(tid.tolist())
    )


def _checked_flows(path: Path, flows: _Flows, events: int) -> Flows:
    same_lengths(path, "header 'flows'", msgspec.structs.asdict(flows))
    return Flows(
        index_column(path, "flows.src", flows.src, events, "the events").astype(np.int32),
        index_column(path, "flows.dst", flows.dst, events, "the events").astype(np.int32),
        int_column(path, "flows.flow_id", flows.flow_id),
    )


def _trace_from_header(
    path: Path, header: _Header, columns: dict[str, Any], args_offsets: Any, args_blob: bytes
) -> Trace:
    """The Trace of a saved file, every column checked (see `trace.validate`)."""
    if header.format != EVENTS_FORMAT or header.version != EVENTS_VERSION:
        raise TraceFormatError(
            path,
            f"expected {EVENTS_FORMAT} version {EVENTS_VERSION}, "
            f"found {header.format} version {header.version}",
        )
    events = same_lengths(path, "event columns", columns)
    if events and not header.kind_labels:
        raise TraceFormatError(path, "no kind labels for its events", where="field 'kind_labels'")
    kind_codes = index_column(
        path, "columns.kind", columns["kind"], len(header.kind_labels), "kind_labels"
    )
    tracks = _checked_tracks(path, header.tracks)
    warnings = list(header.warnings)
    ts_ns = int_column(path, "columns.ts_ns", columns["ts_ns"])
    dur_ns = check_time_columns(
        path, ts_ns, int_column(path, "columns.dur_ns", columns["dur_ns"]), warnings
    )
    return Trace(
        ts_ns=ts_ns,
        dur_ns=dur_ns,
        track=index_column(
            path, "columns.track", columns["track"], len(tracks), "the tracks"
        ).astype(np.int32),
        name=index_column(
            path, "columns.name", columns["name"], len(header.strings), "strings"
        ).astype(np.int32),
        kind=_kind_remap(path, header.kind_labels)[kind_codes],
        strings=tuple(header.strings),
        tracks=tracks,
        args_offsets=np.asarray(args_offsets, dtype=np.int64),
        args_blob=args_blob,
        flows=_checked_flows(path, header.flows, events),
        metadata=header.metadata,
        hlo_programs=tuple(
            HloProgram(
                program.program_id,
                program.name,
                decode_base64(path, program.proto_base64, f"hlo_programs[{index}].proto_base64"),
            )
            for index, program in enumerate(header.hlo_programs)
        ),
        warnings=tuple(warnings),
    )


def events_json_bytes(trace: Trace) -> bytes:
    """The `irprof.events` JSON document of `trace`."""
    header = msgspec.json.encode(_header(trace))
    columns = msgspec.json.encode(
        {
            "ts_ns": trace.ts_ns.tolist(),
            "dur_ns": trace.dur_ns.tolist(),
            "track": trace.track.tolist(),
            "name": trace.name.tolist(),
            "kind": trace.kind.tolist(),
        }
    )
    offsets, blob = trace.args_offsets.tolist(), trace.args_blob
    args = b",".join(
        blob[start:stop] if stop > start else b"null" for start, stop in itertools.pairwise(offsets)
    )
    return header[:-1] + b',"columns":' + columns + b',"args":[' + args + b"]}"


def save_events_json(trace: Trace, path: str | Path) -> None:
    """Write `trace` as versioned unified JSON (`irprof.events` v1), atomically."""
    write_bytes_atomic(path, events_json_bytes(trace))


def load_events_json(path: str | Path) -> Trace:
    """Read an `irprof.events` JSON file (gzip or not) back into a Trace."""
    source = Path(path)
    try:
        document = msgspec.json.decode(read_bytes_maybe_gzip(source), type=_EventsFile)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise TraceFormatError(source, f"not an irprof events.json: {exc}") from exc
    raws = [bytes(raw) for raw in document.args]
    lengths = np.fromiter(
        (0 if raw == b"null" else len(raw) for raw in raws), dtype=np.int64, count=len(raws)
    )
    offsets = np.zeros(len(raws) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    blob = b"".join(raw for raw in raws if raw != b"null")
    columns = msgspec.structs.asdict(document.columns)
    same_lengths(source, "event columns and args", {**columns, "args": raws})
    return _trace_from_header(source, document, columns, offsets, blob)


def args_array(offsets: Any, blob: bytes) -> pa.Array:
    """Per-event argument JSON as a large-string array over the blob (null where none)."""
    import pyarrow as pa

    has_args = offsets[1:] > offsets[:-1]
    validity = pa.array(has_args).buffers()[1] if not has_args.all() else None
    return pa.Array.from_buffers(
        pa.large_string(),
        len(offsets) - 1,
        [validity, pa.py_buffer(np.ascontiguousarray(offsets).tobytes()), pa.py_buffer(blob)],
    )


def events_table(
    ts_ns: Any, dur_ns: Any, track: Any, name: Any, strings: Sequence[str], kind: Any, args: Any
) -> pa.Table:
    """The Arrow table of event columns: `name` codes into `strings` and `kind` codes
    dictionary-encoded, `args` a large-string array (see `args_array`)."""
    import pyarrow as pa

    names = pa.DictionaryArray.from_arrays(
        pa.array(name, type=pa.int32()), pa.array(list(strings), type=pa.string())
    )
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(kind, type=pa.int8()), pa.array(KIND_LABELS, type=pa.string())
    )
    return pa.table(
        {
            "ts_ns": pa.array(ts_ns, type=pa.int64()),
            "dur_ns": pa.array(dur_ns, type=pa.int64()),
            "track": pa.array(track, type=pa.int32()),
            "name": names,
            "kind": kinds,
            "args": args,
        }
    )


def trace_to_arrow(trace: Trace) -> pa.Table:
    """The events as an Arrow table (name and kind dictionary-encoded, args as JSON strings)."""
    table = events_table(
        trace.ts_ns,
        trace.dur_ns,
        trace.track,
        trace.name,
        trace.strings,
        trace.kind,
        args_array(trace.args_offsets, trace.args_blob),
    )
    header = msgspec.json.encode(_header(trace))
    return table.replace_schema_metadata({PARQUET_METADATA_KEY: header})


def save_parquet(trace: Trace, path: str | Path) -> None:
    """Write `trace` as Parquet (header in the schema metadata), atomically."""
    import pyarrow.parquet as pq

    table = trace_to_arrow(trace)
    with atomic_write(path) as handle:
        pq.write_table(table, handle, compression="zstd")


def _dictionary_codes(
    path: Path, field: str, column: pa.ChunkedArray, table_values: list[str]
) -> Any:
    """Codes into `table_values` of a dictionary column, whatever dictionary Parquet chose."""
    lookup = {value: index for index, value in enumerate(table_values)}
    codes = []
    for chunk in column.chunks:
        values = chunk.dictionary.to_pylist()
        missing = next((value for value in values if value not in lookup), None)
        if missing is not None or None in values:
            raise TraceFormatError(
                path,
                f"value {str(missing)[:60]!r} is not in the header's {field} table",
                where=f"column '{field}'",
            )
        remap = np.array([lookup[value] for value in values], dtype=np.int64)
        indices = chunk.indices.to_numpy(zero_copy_only=False)
        codes.append(remap[indices] if len(remap) else indices.astype(np.int64))
    return np.concatenate(codes) if codes else np.zeros(0, np.int64)


def _check_schema(path: Path, schema: pa.Schema, columns: list[str]) -> None:
    """Refuse a Parquet file whose event columns are missing or of another type."""
    import pyarrow as pa

    expected = {
        "ts_ns": pa.types.is_integer,
        "dur_ns": pa.types.is_integer,
        "track": pa.types.is_integer,
        "name": lambda kind: pa.types.is_dictionary(kind) and pa.types.is_string(kind.value_type),
        "kind": lambda kind: pa.types.is_dictionary(kind) and pa.types.is_string(kind.value_type),
        "args": lambda kind: pa.types.is_large_string(kind) or pa.types.is_string(kind),
    }
    for name in columns:
        if name not in schema.names:
            raise TraceFormatError(
                path, f"Parquet trace has no '{name}' column (columns: {', '.join(schema.names)})"
            )
        kind = schema.field(name).type
        if not expected[name](kind):
            raise TraceFormatError(
                path, f"column '{name}' has type {kind}, not the one irprof writes"
            )


def _parquet_file(source: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # A header holds every flow and string of the trace: allow footers past Thrift's 100 MB.
        return pq.ParquetFile(
            source, thrift_string_size_limit=(1 << 31) - 1, thrift_container_size_limit=1 << 28
        )
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceFormatError(source, f"not a readable Parquet file: {exc}") from exc


def parquet_header(path: str | Path) -> dict[str, Any]:
    """The irprof header of a Parquet trace (strings, tracks, flows, metadata, warnings), read
    from the file's footer without reading any event."""
    source = Path(path)
    header: dict[str, Any] = msgspec.to_builtins(_read_header(source, _parquet_file(source)))
    return header


def _read_header(source: Path, parquet: Any) -> _Header:
    # The footer's key-value metadata: `save_parquet` puts the header there through the schema,
    # the streaming writer (`parquet_stream`) directly, once the whole trace has been seen.
    metadata = parquet.metadata.metadata or {}
    if PARQUET_METADATA_KEY not in metadata:
        raise TraceFormatError(source, "Parquet file has no irprof header in its metadata")
    try:
        return msgspec.json.decode(metadata[PARQUET_METADATA_KEY], type=_Header)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise TraceFormatError(source, f"corrupt irprof header: {exc}") from exc


def load_parquet(path: str | Path, *, args: bool = True) -> Trace:
    """Read a Parquet file written by `save_parquet` (or streamed by `trace convert`) back into
    a Trace; `args=False` leaves every event's arguments out (a fraction of the memory)."""
    import pyarrow as pa

    source = Path(path)
    parquet = _parquet_file(source)
    header = _read_header(source, parquet)
    columns = ["ts_ns", "dur_ns", "track", "name", "kind"] + (["args"] if args else [])
    _check_schema(source, parquet.schema_arrow, columns)
    try:
        table = parquet.read(columns=columns)
    except (pa.ArrowInvalid, OSError, KeyError) as exc:
        raise TraceFormatError(source, f"not a readable Parquet trace: {exc}") from exc
    if not args:
        empty = np.zeros(table.num_rows + 1, dtype=np.int64)
        return _trace_from_header(source, header, _event_columns(source, table, header), empty, b"")
    return _trace_from_args(source, header, table)


def _event_columns(source: Path, table: pa.Table, header: _Header) -> dict[str, Any]:
    return {
        "ts_ns": table.column("ts_ns").to_numpy(),
        "dur_ns": table.column("dur_ns").to_numpy(),
        "track": table.column("track").to_numpy(),
        "name": _dictionary_codes(source, "name", table.column("name"), header.strings),
        "kind": _dictionary_codes(source, "kind", table.column("kind"), header.kind_labels),
    }


def _trace_from_args(source: Path, header: _Header, table: pa.Table) -> Trace:
    import pyarrow as pa

    args = table.column("args").cast(pa.large_string()).combine_chunks()
    value_offsets = np.frombuffer(args.buffers()[1], dtype=np.int64)[
        args.offset : args.offset + len(args) + 1
    ]
    blob = args.buffers()[2].to_pybytes() if args.buffers()[2] is not None else b""
    blob = blob[int(value_offsets[0]) : int(value_offsets[-1])] if len(value_offsets) else b""
    offsets = value_offsets - (value_offsets[0] if len(value_offsets) else 0)
    if len(offsets) == 0:
        offsets = np.zeros(1, dtype=np.int64)
    return _trace_from_header(source, header, _event_columns(source, table, header), offsets, blob)


def traces_equal(left: Trace, right: Trace) -> bool:
    """Field-by-field equality of two traces (arrays by value, args byte for byte)."""
    arrays = ("ts_ns", "dur_ns", "track", "name", "kind", "args_offsets")
    same_arrays = all(np.array_equal(getattr(left, key), getattr(right, key)) for key in arrays)
    same_flows = all(
        np.array_equal(getattr(left.flows, key), getattr(right.flows, key))
        for key in ("src", "dst", "flow_id")
    )
    return (
        same_arrays
        and same_flows
        and left.args_blob == right.args_blob
        and left.strings == right.strings
        and left.tracks == right.tracks
        and left.metadata == right.metadata
        and left.hlo_programs == right.hlo_programs
        and left.warnings == right.warnings
    )
