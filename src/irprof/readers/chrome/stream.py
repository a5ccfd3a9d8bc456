"""Chrome trace JSON -> irprof Parquet in bounded memory: `stream_chrome_to_parquet`.

The in-memory reader (`chrome.read_chrome`) holds the file, every event's columns and the
arguments at once: ~3x the file. This converter reads the file as a stream (`chrome_stream_text`)
and gives the same result, row for row and byte for byte (`load_parquet` of its output equals
`read_trace` of the input), holding at most one segment of events:

1. First pass. Events are decoded chunk by chunk into the reader's own columns (`FieldColumns`,
   with interners shared by every segment, so ids are the file's). Every ~`SEGMENT_BYTES` of
   JSON, the segment's slices, instants and counters get their kinds, sort into the reader's
   row order and are spilled with their arguments as a run (Arrow IPC, in a temporary folder
   beside the output). What later rows depend on stays in memory, small: the last `M` event per
   (name, pid, tid) (track names, sort indices), the `B`/`E` events (paired at the end, per
   track, as the reader does), the flow points (bound later), the names and tracks used.
2. The top-level fields are known at the end of the file (Kineto writes `baseTimeNanoseconds`
   after the events): the base time is added, names and tracks get their final ids.
3. The runs are merged into the final row order and written row group by row group
   (`chrome_stream_merge`, `trace.parquet_stream`); flow points are bound to slice rows as the
   rows go by; the header (strings, tracks, flows, metadata, warnings) closes the file.

Memory grows only with what must be kept: ~40 bytes per flow event, B/E events, distinct names,
tracks and metadata keys. Times are exact decimal nanoseconds, as in the reader (`chrome_exact`).
"""

from __future__ import annotations

import ctypes
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError
from irprof.fileio import atomic_write
from irprof.readers.chrome.async_events import unread_phases_warning
from irprof.readers.chrome.checks import base_time_ns, check_times
from irprof.readers.chrome.columns import (
    ArgsText,
    InternedNames,
    Interner,
    MetadataRows,
    args_blob,
    classify,
    last_metadata_rows,
    metadata_names,
    numeric_order,
    tracks_table,
)
from irprof.readers.chrome.flows import FlowPoints
from irprof.readers.chrome.pairing import merge_args, pair_begin_end
from irprof.readers.chrome.reader import (
    PHASE_BEGIN,
    PHASE_COUNTER,
    PHASE_END,
    PHASE_INSTANT,
    PHASE_META,
    PHASE_SLICE,
    FieldColumns,
    trace_metadata,
)
from irprof.readers.chrome.stream_end import StreamEnd
from irprof.readers.chrome.stream_flows import FlowStore, flow_points
from irprof.readers.chrome.stream_merge import write_run
from irprof.readers.chrome.stream_text import EventStream
from irprof.trace.columns import negative_durations_warning, time_order
from irprof.trace.io import args_array
from irprof.trace.model import EventKind

I64 = npt.NDArray[np.int64]
SEGMENT_BYTES = 128 << 20  # JSON text per segment (one run): ~0.3 GB of peak memory


@dataclass(frozen=True)
class StreamedTrace:
    """What a streamed conversion wrote: counts, warnings and the trace's metadata."""

    output: Path
    events: int
    tracks: int
    flows: int
    warnings: tuple[str, ...]
    metadata: dict[str, Any]


@dataclass
class _Kept:
    """What the first pass keeps beside the runs, appended segment by segment."""

    meta: dict[tuple[int, int, int], tuple[int, bytes]] = field(default_factory=dict)
    begin_end: list[tuple[Any, ...]] = field(default_factory=list)  # phase, pid, tid, ts, ...
    begin_end_args: list[bytes] = field(default_factory=list)
    flows: FlowStore = field(default_factory=FlowStore)
    names: set[int] = field(default_factory=set)
    tracks: set[tuple[int, int]] = field(default_factory=set)
    negative_durations: int = 0
    unread: dict[str, int] = field(default_factory=dict)  # events per phase not read
    # (ts_ns, dur_ns, row) of the events with the extreme starts and ends, checked with the base
    extremes: list[tuple[int, int, int]] = field(default_factory=list)


class _FirstPass:
    """Decode, classify and spill the file's events segment by segment."""

    def __init__(self, path: Path, folder: Path, segment_bytes: int) -> None:
        self.path = path
        self.folder = folder
        self.segment_bytes = segment_bytes
        self.interners = (Interner(), Interner(), Interner(), Interner())
        self.kept = _Kept()
        self.runs: list[Path] = []
        self.events = 0

    def run(self, stream: EventStream) -> None:
        """Read the whole stream."""
        columns, size = FieldColumns(self.path, self.interners, self.events), 0
        for chunk in stream:
            columns.add(chunk.events)
            size += len(chunk.text)
            if size >= self.segment_bytes:
                self._segment(columns)
                columns, size = FieldColumns(self.path, self.interners, self.events), 0
        if columns.rows:
            self._segment(columns)

    def _segment(self, columns: FieldColumns) -> None:
        first = self.events
        phase = columns.phase.array()
        ts_ns, dur_ns = columns.ts_ns.array(), columns.dur_ns.array()
        check_times(self.path, ts_ns, dur_ns, 0, first)
        self._note_extremes(ts_ns, dur_ns, first)
        negative = dur_ns < 0
        self.kept.negative_durations += int(np.count_nonzero(negative))
        dur_ns = np.where(negative, 0, dur_ns)
        pid_ids, tid_ids = columns.pid_ids.array(), columns.tid_ids.array()
        cat_ids, name_ids = columns.cat_ids.array(), columns.name_ids.array()
        args = ArgsText(columns.args_text.getvalue(), columns.args_length.array())
        self._keep_metadata(phase, pid_ids, tid_ids, name_ids, args, first)
        for ph, count in columns.unread.items():
            self.kept.unread[ph] = self.kept.unread.get(ph, 0) + count
        paired = np.nonzero((phase == PHASE_BEGIN) | (phase == PHASE_END))[0]
        if len(paired):
            self.kept.begin_end.append(
                (phase[paired], pid_ids[paired], tid_ids[paired], ts_ns[paired],
                 name_ids[paired], cat_ids[paired])
            )  # fmt: skip
            self.kept.begin_end_args.extend(bytes(args[row]) for row in paired.tolist())
        if columns.flow_rows:
            rows = np.concatenate(columns.flow_rows)
            point_fields = (rows + first, phase[rows], pid_ids[rows], tid_ids[rows],
                            ts_ns[rows], cat_ids[rows])  # fmt: skip
            self.kept.flows.add(point_fields, columns.flow_ids, columns.binds_next)
        direct = np.nonzero(
            (phase == PHASE_SLICE) | (phase == PHASE_INSTANT) | (phase == PHASE_COUNTER)
        )[0]
        names = InternedNames(name_ids, self.interners[3].table)
        kinds = classify(direct, cat_ids, self.interners[2].table, names, args, dur_ns[direct])
        kinds[phase[direct] == PHASE_INSTANT] = EventKind.INSTANT
        kinds[phase[direct] == PHASE_COUNTER] = EventKind.COUNTER
        order = time_order(ts_ns[direct], dur_ns[direct])
        self._spill(direct[order], kinds[order], phase, ts_ns, dur_ns, columns, args, first)
        self.events += columns.rows

    def _note_extremes(self, ts_ns: I64, dur_ns: I64, first: int) -> None:
        if len(ts_ns) == 0:
            return
        end_ns = ts_ns + dur_ns
        rows = {
            int(ts_ns.argmin()),
            int(ts_ns.argmax()),
            int(end_ns.argmin()),
            int(end_ns.argmax()),
        }
        for row in sorted(rows):
            self.kept.extremes.append((int(ts_ns[row]), int(dur_ns[row]), row + first))

    def _keep_metadata(
        self, phase: Any, pid_ids: I64, tid_ids: I64, name_ids: I64, args: ArgsText, first: int
    ) -> None:
        rows = np.nonzero(phase == PHASE_META)[0]
        if not len(rows):
            return
        width = int(tid_ids.max()) + 1
        track = pid_ids * width + tid_ids
        kept = last_metadata_rows(rows, track, name_ids)
        for row in kept.rows.tolist():
            key = (int(name_ids[row]), int(pid_ids[row]), int(tid_ids[row]))
            self.kept.meta[key] = (row + first, bytes(args[row]))

    def _spill(
        self,
        rows: I64,
        kinds: Any,
        phase: Any,
        ts_ns: I64,
        dur_ns: I64,
        columns: FieldColumns,
        args: ArgsText,
        first: int,
    ) -> None:
        """Write the segment's rows, sorted, as a run; note the names and tracks they use."""
        if not len(rows):
            return
        pid, tid = columns.pid_ids.array()[rows], columns.tid_ids.array()[rows]
        name = columns.name_ids.array()[rows]
        self.kept.names.update(np.unique(name).tolist())
        pairs = np.unique(pid * (1 << 32) + tid).tolist()
        self.kept.tracks.update((pair >> 32, pair & 0xFFFFFFFF) for pair in pairs)
        blob, offsets = args_blob(args, rows, {})
        self._write_run(
            ts_ns[rows], dur_ns[rows], pid, tid, name, kinds, rows + first,
            phase[rows] == PHASE_SLICE, args_array(offsets, blob),
        )  # fmt: skip

    def _write_run(self, *columns: Any) -> None:
        import pyarrow as pa

        from irprof.readers.chrome.stream_merge import run_schema

        schema = run_schema()
        arrays = [
            column if isinstance(column, pa.Array) else pa.array(column, type=kind.type)
            for column, kind in zip(columns, schema, strict=True)
        ]
        path = self.folder / f"run-{len(self.runs)}.arrow"
        write_run(path, iter([pa.Table.from_arrays(arrays, schema=schema)]))
        self.runs.append(path)

    def paired_run(self, track_key: Any, warnings: list[str]) -> None:
        """Pair the B/E events of the whole file (as the reader does) into one more run."""
        kept = self.kept
        if not kept.begin_end:
            return
        phase, pid, tid, ts_ns, name, cat = (
            np.concatenate(parts) for parts in zip(*kept.begin_end, strict=True)
        )
        paired = pair_begin_end(phase, track_key(pid, tid), ts_ns, PHASE_BEGIN, PHASE_END, warnings)
        if not len(paired.begin_rows):
            return
        args = ArgsText(
            b"".join(kept.begin_end_args),
            np.fromiter(map(len, kept.begin_end_args), np.int64, len(kept.begin_end_args)),
        )
        merged = {
            begin: merge_args(bytes(args[begin]), bytes(args[end]))
            for begin, end in zip(paired.begin_rows.tolist(), paired.end_rows.tolist(), strict=True)
            if len(args[end]) and bytes(args[end]) != b"{}"
        }
        begins = paired.begin_rows
        names = InternedNames(name, self.interners[3].table)
        kinds = classify(begins, cat, self.interners[2].table, names, args, paired.dur_ns)
        order = time_order(ts_ns[begins], paired.dur_ns)
        begins, kinds, dur = begins[order], kinds[order], paired.dur_ns[order]
        self.kept.names.update(np.unique(name[begins]).tolist())
        self.kept.tracks.update(zip(pid[begins].tolist(), tid[begins].tolist(), strict=True))
        blob, offsets = args_blob(args, begins, merged)
        # After every direct row in ties: the reader appends paired slices after them.
        seq = self.events + order
        self._write_run(
            ts_ns[begins], dur, pid[begins], tid[begins], name[begins], kinds, seq,
            np.ones(len(begins), np.bool_), args_array(offsets, blob),
        )  # fmt: skip
        del kept.begin_end[:], kept.begin_end_args[:]


def release_freed_memory() -> None:
    """Hand memory freed by the first pass back to the OS (glibc keeps freed blocks between
    live ones, ~100 MB after a pass over a large file, which the merge would add its own to).
    A no-op where the C library has no `malloc_trim`."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return
    trim(0)


def stream_chrome_to_parquet(
    path: Path,
    output: Path,
    *,
    segment_bytes: int = SEGMENT_BYTES,
    chunk_bytes: int | None = None,
    block_bytes: int | None = None,
    max_segment_bytes: int | None = None,
) -> StreamedTrace:
    """Convert a Chrome/Kineto trace (gzip or not) to irprof Parquet in bounded memory."""
    sizes = {
        "chunk_bytes": chunk_bytes,
        "block_bytes": block_bytes,
        "max_segment_bytes": max_segment_bytes,
    }
    stream = EventStream(path, **{key: value for key, value in sizes.items() if value})
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".irprof-runs-", dir=output.parent) as folder:
        first = _FirstPass(path, Path(folder), segment_bytes)
        first.run(stream)
        release_freed_memory()
        end = _finish_first_pass(path, first, stream)
        if not first.runs:
            why = f" ({'; '.join(end.warnings)})" if end.warnings else ""
            raise TraceFormatError(path, f"chrome trace contains no events{why}")
        with atomic_write(output) as handle:
            end.write(handle, first.runs, Path(folder))
    return StreamedTrace(
        output=output,
        events=end.rows,
        tracks=len(end.tracks),
        flows=end.flow_count,
        warnings=tuple(end.warnings),
        metadata=end.metadata,
    )


def _finish_first_pass(path: Path, first: _FirstPass, stream: EventStream) -> StreamEnd:
    """Base time, final pid/tid order, names, track names, B/E slices and flow points."""
    kept = first.kept
    base_ns = base_time_ns(path, stream.fields.get("baseTimeNanoseconds"))
    for ts_ns, dur_ns, row in kept.extremes if base_ns else ():
        check_times(path, np.array([ts_ns]), np.array([dur_ns]), base_ns, row)
    pid_rank, pids = numeric_order(np.arange(len(first.interners[0])), first.interners[0].table)
    tid_rank, tids = numeric_order(np.arange(len(first.interners[1])), first.interners[1].table)
    width = max(len(tids), 1)

    def track_key(pid: I64, tid: I64) -> I64:
        return np.asarray(pid_rank[pid] * width + tid_rank[tid], dtype=np.int64)

    warnings = list(stream.notes)
    if unread := unread_phases_warning(kept.unread):
        warnings.append(unread)
    if kept.negative_durations:
        warnings.append(negative_durations_warning(kept.negative_durations))
    first.paired_run(track_key, warnings)
    meta_rows = sorted(kept.meta.items(), key=lambda item: item[1][0])
    meta_pid = np.array([key[1] for key, _ in meta_rows], dtype=np.int64)
    meta_tid = np.array([key[2] for key, _ in meta_rows], dtype=np.int64)
    name_table = first.interners[3].table
    processes, threads, sort_index = metadata_names(
        MetadataRows(np.arange(len(meta_rows)), track_key(meta_pid, meta_tid)),
        pids,
        tids,
        [name_table[key[0]] for key, _ in meta_rows],
        [value[1] for _, value in meta_rows],
    )
    used = sorted(kept.tracks)
    used_keys = track_key(
        np.array([pair[0] for pair in used], np.int64),
        np.array([pair[1] for pair in used], np.int64),
    )
    track_keys = np.unique(used_keys)
    name_used = np.zeros(len(name_table), dtype=np.bool_)
    name_used[list(kept.names)] = True
    return StreamEnd(
        base_ns=base_ns,
        pid_rank=pid_rank,
        tid_rank=tid_rank,
        width=width,
        track_keys=track_keys,
        tracks=tracks_table(track_keys, pids, tids, processes, threads),
        name_remap=np.cumsum(name_used) - 1,
        strings=[name for name, keep in zip(name_table, name_used.tolist(), strict=True) if keep],
        points=_settled_flow_points(kept, track_key),
        warnings=warnings,
        metadata=trace_metadata(path, stream.fields, base_ns, sort_index),
    )


def _settled_flow_points(kept: _Kept, track_key: Any) -> FlowPoints | None:
    store, kept.flows = kept.flows, FlowStore()
    return flow_points(store, track_key)
