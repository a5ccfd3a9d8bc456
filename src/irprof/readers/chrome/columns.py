"""Column helpers of the Chrome reader: interning, kinds, track names, argument blob repair."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from irprof.readers.chrome.decode import decode_any
from irprof.trace.model import EventKind, Tracks

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]

KIND_BY_CATEGORY: dict[str, EventKind] = {
    "cpu_op": EventKind.FRAMEWORK_OP,
    "operator": EventKind.FRAMEWORK_OP,  # older Kineto
    "kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.MEMCPY,
    "gpu_memset": EventKind.MEMSET,
    "mtia_ccp_events": EventKind.KERNEL,  # MTIA's device work
    "python_function": EventKind.PYTHON,
    "cuda_runtime": EventKind.RUNTIME,
    "cuda_driver": EventKind.RUNTIME,
    "cuda_sync": EventKind.RUNTIME,
    "hip_runtime": EventKind.RUNTIME,
    "hip_driver": EventKind.RUNTIME,
    "mtia_runtime": EventKind.RUNTIME,
    "cpu_instant_event": EventKind.INSTANT,
    "user_annotation": EventKind.ANNOTATION,
    "gpu_user_annotation": EventKind.ANNOTATION,
    "cuda_profiler_range": EventKind.ANNOTATION,
    "Trace": EventKind.ENVELOPE,  # "PyTorch Profiler (0)": the recording window itself
}
# Device kernels whose names say they move data between ranks (NCCL, AMD's RCCL, oneCCL).
COLLECTIVE_KERNEL_PREFIXES = ("nccl", "rccl", "ccl_", "c10d")
STEP_NAME_PREFIX = "ProfilerStep"  # Kineto user_annotation of `prof.step()`


class Interner(dict[Any, int]):
    """Ids in first-seen order over many batches of values (lookups of known values run in C)."""

    def __missing__(self, value: Any) -> int:
        self[value] = found = len(self)
        return found

    def ids(self, values: Iterable[Any], count: int = -1) -> I64:
        """Ids of `values`, adding the new ones to the table."""
        return np.fromiter(map(self.__getitem__, values), dtype=np.int64, count=count)

    @property
    def table(self) -> list[Any]:
        """Every value seen, at its id."""
        return list(self)


def intern(values: list[Any]) -> tuple[I64, list[Any]]:
    """Ids of `values` in first-seen order, and the table."""
    interner = Interner()
    return interner.ids(values), interner.table


def numeric_order(ids: I64, table: list[Any]) -> tuple[I64, list[Any]]:
    """Renumber so that ids follow numeric order when every value is an int (pids, tids)."""
    if not table or not all(type(value) is int for value in table):
        return ids, table
    order = sorted(range(len(table)), key=table.__getitem__)
    rank = np.empty(len(table), dtype=np.int64)
    rank[order] = np.arange(len(table), dtype=np.int64)
    return rank[ids], [table[position] for position in order]


class InternedNames(Sequence[str]):
    """Event names as ids into a table: indexable like the list, without a str per event."""

    def __init__(self, ids: I64, table: list[str]) -> None:
        self.ids = ids
        self.table = table

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, row: int) -> str: ...

    @overload
    def __getitem__(self, row: slice) -> Sequence[str]: ...

    def __getitem__(self, row: int | slice) -> str | Sequence[str]:
        if isinstance(row, slice):
            return [self.table[index] for index in self.ids[row].tolist()]
        return self.table[int(self.ids[row])]


class ArgsText(Sequence[bytes]):
    """Every event's raw `args` JSON in file order: the text, in one buffer or in the parts it
    was collected in (one per decoded chunk: never copied into one), and offsets into it."""

    def __init__(self, text: bytes | Sequence[bytes], lengths: I64) -> None:
        self.parts = [text] if isinstance(text, bytes) else [part for part in text if part]
        self.offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        # Where each part starts in the text (a row's args never span two parts).
        self.part_starts = np.zeros(len(self.parts) + 1, dtype=np.int64)
        np.cumsum([len(part) for part in self.parts], out=self.part_starts[1:])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def part_of(self, positions: I64) -> I64:
        """The part holding each text position (the last part for the end of the text)."""
        found = np.searchsorted(self.part_starts, positions, side="right") - 1
        return np.minimum(found, max(len(self.parts) - 1, 0))

    @overload
    def __getitem__(self, row: int) -> bytes: ...

    @overload
    def __getitem__(self, row: slice) -> Sequence[bytes]: ...

    def __getitem__(self, row: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(row, slice):
            return [self[index] for index in range(len(self))[row]]
        start, stop = int(self.offsets[row]), int(self.offsets[row + 1])
        if start == stop:
            return b""
        part = int(self.part_of(np.array([start], dtype=np.int64))[0])
        first = int(self.part_starts[part])
        return self.parts[part][start - first : stop - first]


def compact_table(ids: I64, table: list[Any]) -> tuple[I64, list[Any]]:
    """Drop table entries no id uses (names of metadata and flow events), keeping order."""
    used = np.zeros(len(table), dtype=bool)
    used[ids] = True
    remap = np.cumsum(used) - 1
    kept = np.nonzero(used)[0].tolist()
    return remap[ids], [table[position] for position in kept]


INT64_LIMIT = 1 << 63


def numeric_id(value: int | str) -> int:
    """Ints stay; strings (Kineto's "Spans", "stream 7") get a stable crc32-based id, and so do
    ints that int64 cannot hold (by their decimal text: an id only has to tell tracks apart)."""
    if isinstance(value, int):
        if -INT64_LIMIT <= value < INT64_LIMIT:
            return value
        value = str(value)
    return zlib.crc32(value.encode("utf-8"))


def _is_tf_op(name: str, args: bytes) -> bool:
    """xprof trace_viewer names a TF op event by its type, with `long_name` "node:type"."""
    decoded = decode_any.decode(args)
    long_name = decoded.get("long_name") if isinstance(decoded, dict) else None
    return isinstance(long_name, str) and long_name.endswith(":" + name)


def classify(
    rows: I64,
    cat_ids: I64,
    cats: list[str],
    names: InternedNames,
    args: Sequence[bytes],
    dur_ns: I64,
) -> I8:
    """EventKind of each row: by Kineto category, else from the args and name (see chrome.py)."""
    kind_of_cat = np.array(
        [int(KIND_BY_CATEGORY.get(cat, EventKind.OTHER)) for cat in cats] or [0], dtype=np.int8
    )
    known = np.array([cat in KIND_BY_CATEGORY for cat in cats] or [False], dtype=np.bool_)
    row_cats = cat_ids[rows]
    kinds = kind_of_cat[row_cats]
    for position in np.nonzero(~known[row_cats])[0].tolist():
        row = int(rows[position])
        raw = bytes(args[row])
        if b'"hlo_op"' in raw:
            kinds[position] = EventKind.KERNEL
        elif b'"step_num"' in raw:
            kinds[position] = EventKind.STEP
        elif b'"long_name"' in raw and _is_tf_op(names[row], raw):
            kinds[position] = EventKind.FRAMEWORK_OP
        elif names[row].startswith("$"):
            kinds[position] = EventKind.PYTHON
        elif dur_ns[position] == 0:
            kinds[position] = EventKind.INSTANT
    kernels = np.nonzero(kinds == EventKind.KERNEL)[0]
    if len(kernels):
        # One check per distinct name, not per event: kernels repeat their names. (Ids index
        # the name table: a count per id finds them; `np.unique` would also import numpy.ma,
        # ~15 ms, on its first call in a process.)
        kernel_name_ids = names.ids[rows[kernels]]
        collective = [
            name_id
            for name_id in np.flatnonzero(np.bincount(kernel_name_ids)).tolist()
            if names.table[name_id].lower().startswith(COLLECTIVE_KERNEL_PREFIXES)
        ]
        if collective:
            chosen = np.isin(kernel_name_ids, collective)
            kinds[kernels[chosen]] = EventKind.COLLECTIVE
    if "user_annotation" in cats:
        annotations = np.nonzero(row_cats == cats.index("user_annotation"))[0]
        for position in annotations.tolist():
            if names[int(rows[position])].startswith(STEP_NAME_PREFIX):
                kinds[position] = EventKind.STEP
    return kinds


@dataclass(frozen=True)
class MetadataRows:
    """The `M` events that count: the last one of each (name, pid, tid), with its track key."""

    rows: I64
    track: I64


def last_metadata_rows(rows: I64, track: I64, name_ids: I64) -> MetadataRows:
    """The last `M` event per (name, track): later metadata overrides earlier, as in viewers.

    Real Kineto traces repeat metadata for every thread and device (two thirds of a large
    trace's events can be `M`), so the duplicates are dropped with numpy before any decoding.
    """
    if len(rows) == 0:
        return MetadataRows(rows.astype(np.int64), rows.astype(np.int64))
    keys = name_ids[rows] * (int(track.max()) + 1) + track[rows]
    _, last_from_end = np.unique(keys[::-1], return_index=True)
    kept = np.sort(rows[len(rows) - 1 - last_from_end])
    return MetadataRows(kept.astype(np.int64), track[kept].astype(np.int64))


def metadata_names(
    meta: MetadataRows,
    pids: list[int | str],
    tids: list[int | str],
    names: Sequence[str],
    args: Sequence[bytes],
) -> tuple[dict[int, str], dict[tuple[int, int], str], dict[str, Any]]:
    """Process and thread names and sort indices from the M events (`process_labels` such as
    Kineto's "GPU 0" go into the sort-index table under "process_labels:<pid>")."""
    processes: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    sort_index: dict[str, Any] = {}
    width = max(len(tids), 1)
    for row, track in zip(meta.rows.tolist(), meta.track.tolist(), strict=True):
        raw = bytes(args[row])
        decoded = decode_any.decode(raw) if raw else {}
        if not isinstance(decoded, dict):
            continue
        raw_pid, raw_tid = pids[track // width], tids[track % width]
        pid, tid, name = numeric_id(raw_pid), numeric_id(raw_tid), names[row]
        if name == "process_name":
            processes[pid] = str(decoded.get("name", pid))
        elif name == "thread_name":
            threads[(pid, tid)] = str(decoded.get("name", tid))
        elif name == "process_labels":
            sort_index[f"process_labels:{raw_pid}"] = str(decoded.get("labels", ""))
        elif name.endswith("sort_index"):
            sort_index[f"{name}:{raw_pid}:{raw_tid}"] = decoded.get("sort_index")
    return processes, threads, sort_index


def tracks_table(
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
    pid_of_track = [numeric_id(pid) for pid in raw_pid]
    tid_of_track = [numeric_id(tid) for tid in raw_tid]
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


def args_blob(args: ArgsText, rows: I64, replaced: dict[int, bytes]) -> tuple[bytes, I64]:
    """Concatenated raw args of `rows` in that order (with `replaced` rows' args swapped in).

    Rows that follow each other in the file and in `rows` are copied as one run: a trace's
    order by time mostly keeps each thread's events in file order, so runs are long.
    """
    if len(rows) == 0:
        return b"", np.zeros(1, dtype=np.int64)
    starts, stops = args.offsets[rows], args.offsets[rows + 1]
    lengths = stops - starts
    parts = args.part_of(starts)
    breaks = np.ones(len(rows), dtype=np.bool_)
    breaks[1:] = (starts[1:] != stops[:-1]) | (parts[1:] != parts[:-1])
    swapped = np.nonzero(np.isin(rows, list(replaced)))[0] if replaced else np.zeros(0, np.int64)
    breaks[swapped] = True
    breaks[swapped[swapped + 1 < len(rows)] + 1] = True
    for position in swapped.tolist():
        lengths[position] = len(replaced[int(rows[position])])
    run_starts = np.nonzero(breaks)[0]
    run_stops = np.append(run_starts[1:], len(rows))
    # Run by run into one buffer of the final size (sized once, so it never grows and copies;
    # getvalue() hands it over without a copy), from the part that holds each run.
    views = [memoryview(part) for part in args.parts]
    run_parts = parts[run_starts]
    base = args.part_starts[run_parts] if len(args.parts) else np.zeros_like(run_parts)
    byte_starts = (starts[run_starts] - base).tolist()
    byte_stops = (stops[run_stops - 1] - base).tolist()
    swapped_runs = set(swapped.tolist())
    out = io.BytesIO()
    size = int(lengths.sum())
    if size:
        out.seek(size - 1)
        out.write(b"\0")
        out.seek(0)
    write = out.write
    for first, part, start, stop in zip(
        run_starts.tolist(), run_parts.tolist(), byte_starts, byte_stops, strict=True
    ):
        if first in swapped_runs:
            write(replaced[int(rows[first])])
        elif stop > start:
            write(views[part][start:stop])
    for view in views:
        view.release()
    if out.tell() != size:  # every run written: the sized buffer holds no stale byte
        raise AssertionError(f"args gather wrote {out.tell()} of {size} bytes")
    blob = out.getvalue()
    del out
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return wrap_non_object_args(blob, offsets), offsets


def wrap_non_object_args(blob: bytes, offsets: I64) -> bytes:
    """Args that are not JSON objects (`null`, a number) become {"args": value}; updates offsets."""
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
