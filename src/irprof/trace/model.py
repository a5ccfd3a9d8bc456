"""`Trace`: events as parallel numpy columns with interned strings and JSON-encoded arguments.

One row per event: `ts_ns`, `dur_ns` (int64 nanoseconds), `track` (row of `tracks`), `name`
(index into `strings`), `kind` (`EventKind`). Arguments are kept as one UTF-8 JSON object per
event, concatenated in `args_blob` and sliced by `args_offsets`, so millions of events stay a
handful of arrays and a field is only decoded when asked for.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
I8 = npt.NDArray[np.int8]


class EventKind(enum.IntEnum):
    """What an event stands for, normalised across profilers by the readers."""

    OTHER = 0
    FRAMEWORK_OP = 1  # a TF op, an aten:: op: the unit IR ops correspond to
    KERNEL = 2  # a device kernel or an XLA thunk
    DISPATCH = 3  # an IREE dispatch
    PYTHON = 4  # a Python function frame
    STEP = 5  # a training/inference step marker
    RUNTIME = 6  # executor / runtime bookkeeping (launches, memcpy calls, TraceMe scopes)
    INSTANT = 7  # zero-duration marker (Chrome phase "i"/"I")
    COUNTER = 8  # a counter sample (Chrome phase "C"); value in args
    MEMCPY = 9  # a device memory copy (Kineto `gpu_memcpy`)
    MEMSET = 10  # a device memory fill (Kineto `gpu_memset`)
    COLLECTIVE = 11  # device communication: an NCCL/RCCL collective or send/recv kernel
    ANNOTATION = 12  # a user-named range (record_function, NVTX-like profiler ranges)
    ENVELOPE = 13  # the profiler's own span around the recording ("PyTorch Profiler (0)")

    @property
    def on_device(self) -> bool:
        """Whether events of this kind are work a device (GPU, accelerator) executed."""
        return self in DEVICE_KINDS

    @property
    def label(self) -> str:
        """Lower-case name used in JSON and tables."""
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> EventKind:
        """Inverse of `label`."""
        return cls[label.upper()]


DEVICE_KINDS = frozenset(
    {EventKind.KERNEL, EventKind.DISPATCH, EventKind.MEMCPY, EventKind.MEMSET, EventKind.COLLECTIVE}
)


@dataclass(frozen=True)
class Tracks:
    """Table of tracks: a Chrome process/thread or an XPlane plane/line."""

    process: tuple[str, ...]
    thread: tuple[str, ...]
    pid: tuple[int, ...]
    tid: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.process)

    def label(self, row: int) -> str:
        """`process/thread` display label of a track."""
        return f"{self.process[row]}/{self.thread[row]}"


@dataclass(frozen=True)
class Flows:
    """Directed links between events (Chrome s/t/f flows, Kineto ac2g, XPlane flow stats)."""

    src: I32
    dst: I32
    flow_id: I64

    def __len__(self) -> int:
        return len(self.src)

    @staticmethod
    def empty() -> Flows:
        """No flow links."""
        return Flows(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64))


@dataclass(frozen=True)
class HloProgram:
    """A serialized `xla.HloProto` found in the trace (XPlane `/host:metadata` plane)."""

    program_id: int
    name: str
    proto: bytes


_decode_object_list = msgspec.json.Decoder(list[dict[str, Any]])


def _gather_runs(blob: bytes, starts: I64, stops: I64) -> bytes:
    """`blob[starts[i]:stops[i]]` concatenated, copying rows adjacent in `blob` as one slice
    (a sort by time keeps most of each track's rows in order, so there are few runs)."""
    if len(starts) == 0:
        return b""
    breaks = np.ones(len(starts), dtype=np.bool_)
    breaks[1:] = starts[1:] != stops[:-1]
    run_starts = np.nonzero(breaks)[0]
    run_stops = np.append(run_starts[1:], len(starts)) - 1
    view = memoryview(blob)
    pieces = [
        view[start:stop]
        for start, stop in zip(starts[run_starts].tolist(), stops[run_stops].tolist(), strict=True)
    ]
    joined = b"".join(pieces)
    view.release()
    return joined


@dataclass(frozen=True, eq=False)
class Trace:
    """A profile as columns; build one with `TraceBuilder` or a reader."""

    ts_ns: I64
    dur_ns: I64
    track: I32
    name: I32
    kind: I8
    strings: tuple[str, ...]
    tracks: Tracks
    args_offsets: I64  # len(events) + 1; event i's JSON is blob[off[i]:off[i+1]] (empty: none)
    args_blob: bytes
    flows: Flows = field(default_factory=Flows.empty)
    metadata: dict[str, Any] = field(default_factory=dict)
    hlo_programs: tuple[HloProgram, ...] = ()
    warnings: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.ts_ns)

    @property
    def end_ns(self) -> I64:
        """End time of every event."""
        return self.ts_ns + self.dur_ns

    def span_ns(self) -> tuple[int, int]:
        """(first start, last end) over all events; (0, 0) when empty."""
        if len(self) == 0:
            return (0, 0)
        return (int(self.ts_ns.min()), int(self.end_ns.max()))

    def name_of(self, row: int) -> str:
        """Event name of one row."""
        return self.strings[int(self.name[row])]

    def names(self) -> list[str]:
        """Event names of all rows (materialised; prefer `name` ids on large traces)."""
        strings = self.strings
        return [strings[i] for i in self.name.tolist()]

    def string_id(self, text: str) -> int | None:
        """Index of `text` in the string table, or None when no event uses it."""
        try:
            return self.strings.index(text)
        except ValueError:
            return None

    def args(self, row: int) -> dict[str, Any]:
        """Decoded arguments of one event ({} when it has none)."""
        start, stop = int(self.args_offsets[row]), int(self.args_offsets[row + 1])
        if start == stop:
            return {}
        decoded: dict[str, Any] = msgspec.json.decode(self.args_blob[start:stop])
        return decoded

    def args_many(self, rows: Sequence[int] | I64 | I32) -> list[dict[str, Any]]:
        """Decoded arguments of many events in one decoder call."""
        offsets, blob = self.args_offsets, self.args_blob
        parts = []
        for row in np.asarray(rows, dtype=np.int64).tolist():
            start, stop = int(offsets[row]), int(offsets[row + 1])
            parts.append(blob[start:stop] if stop > start else b"{}")
        if not parts:
            return []
        return _decode_object_list.decode(b"[" + b",".join(parts) + b"]")

    def arg_column(self, key: str) -> list[Any]:
        """The value of argument `key` for every event (None where absent)."""
        needle = msgspec.json.encode(key)
        offsets = self.args_offsets
        has_args = np.nonzero(offsets[1:] > offsets[:-1])[0]
        out: list[Any] = [None] * len(self)
        if needle not in self.args_blob:
            return out
        for row, args in zip(has_args.tolist(), self.args_many(has_args), strict=True):
            if key in args:
                out[row] = args[key]
        return out

    def rows_of_kind(self, *kinds: EventKind) -> I64:
        """Row indices whose kind is any of `kinds`."""
        mask = np.isin(self.kind, np.array([int(k) for k in kinds], dtype=np.int8))
        return np.nonzero(mask)[0].astype(np.int64)

    def iter_rows(self) -> Iterator[int]:
        """Row indices in storage order."""
        return iter(range(len(self)))

    def to_arrow(self) -> Any:
        """The events as a pyarrow Table, one row per event (the Parquet trace's columns: name
        and kind dictionary-encoded, args as JSON text; tracks and flows in its metadata)."""
        from irprof.trace.io import trace_to_arrow  # io imports this module; pyarrow is heavy

        return trace_to_arrow(self)

    def select(self, rows: I64 | npt.NDArray[np.bool_]) -> Trace:
        """A new Trace holding only `rows` (indices or mask); flows between kept rows survive."""
        index = np.nonzero(rows)[0] if rows.dtype == np.bool_ else np.asarray(rows, np.int64)
        remap = np.full(len(self) + 1, -1, dtype=np.int64)
        remap[index] = np.arange(len(index))
        starts, stops = self.args_offsets[index], self.args_offsets[index + 1]
        blob = _gather_runs(self.args_blob, starts, stops)
        lengths = stops - starts
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        src, dst = remap[self.flows.src], remap[self.flows.dst]
        keep = (src >= 0) & (dst >= 0)
        flows = Flows(
            src[keep].astype(np.int32), dst[keep].astype(np.int32), self.flows.flow_id[keep]
        )
        return Trace(
            ts_ns=self.ts_ns[index],
            dur_ns=self.dur_ns[index],
            track=self.track[index],
            name=self.name[index],
            kind=self.kind[index],
            strings=self.strings,
            tracks=self.tracks,
            args_offsets=offsets,
            args_blob=blob,
            flows=flows,
            metadata=dict(self.metadata),
            hlo_programs=self.hlo_programs,
            warnings=self.warnings,
        )
