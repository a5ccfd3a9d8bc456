"""`TraceBuilder`: the append-only way readers assemble a `Trace` without per-event objects."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.trace.columns import check_time_columns, time_order
from irprof.trace.model import EventKind, Flows, HloProgram, Trace, Tracks

_encode = msgspec.json.Encoder().encode


class TraceBuilder:
    """Collects events into typed arrays; strings and tracks are interned on the way in.

    `source` is the file being read and `locate(row)` where event `row` is in it (default
    `event <row>`): `build` checks the time columns (`check_time_columns`) and names both.
    """

    def __init__(
        self, source: str | Path = "<trace>", locate: Callable[[int], str] | None = None
    ) -> None:
        self.source = source
        self.locate = locate
        self._ts = array("q")
        self._dur = array("q")
        self._track = array("i")
        self._name = array("i")
        self._kind = array("b")
        self._arg_ends = array("q", [0])
        self._arg_parts: list[bytes] = []
        self._arg_size = 0
        self._strings: dict[str, int] = {}
        self._track_keys: dict[tuple[int, int], int] = {}
        self._process: list[str] = []
        self._thread: list[str] = []
        self._pid: list[int] = []
        self._tid: list[int] = []
        self._flow_src = array("i")
        self._flow_dst = array("i")
        self._flow_id = array("q")
        self.metadata: dict[str, Any] = {}
        self.hlo_programs: list[HloProgram] = []
        self.warnings: list[str] = []

    def __len__(self) -> int:
        return len(self._ts)

    def intern(self, text: str) -> int:
        """Id of `text` in the string table, adding it when new."""
        found = self._strings.get(text)
        if found is None:
            found = len(self._strings)
            self._strings[text] = found
        return found

    def track(self, pid: int, tid: int, process: str = "", thread: str = "") -> int:
        """Row of the (pid, tid) track, creating it; non-empty names update earlier blanks."""
        key = (pid, tid)
        row = self._track_keys.get(key)
        if row is None:
            row = len(self._process)
            self._track_keys[key] = row
            self._process.append(process or str(pid))
            self._thread.append(thread or str(tid))
            self._pid.append(pid)
            self._tid.append(tid)
            return row
        if process:
            self._process[row] = process
        if thread:
            self._thread[row] = thread
        return row

    def name_process(self, pid: int, process: str) -> None:
        """Set the process name of every track of `pid` (Chrome `M` process_name)."""
        for (track_pid, _tid), row in self._track_keys.items():
            if track_pid == pid:
                self._process[row] = process

    def add(
        self,
        ts_ns: int,
        dur_ns: int,
        track: int,
        name: str,
        kind: EventKind = EventKind.OTHER,
        args: dict[str, Any] | None = None,
        args_json: bytes | None = None,
    ) -> int:
        """Append one event; returns its row. Pass `args_json` when it is already encoded."""
        row = len(self._ts)
        self._ts.append(ts_ns)
        self._dur.append(dur_ns)
        self._track.append(track)
        self._name.append(self.intern(name))
        self._kind.append(int(kind))
        if args_json is None and args:
            args_json = _encode(args)
        if args_json:
            self._arg_parts.append(args_json)
            self._arg_size += len(args_json)
        self._arg_ends.append(self._arg_size)
        return row

    def extend(
        self,
        ts_ns: npt.NDArray[np.int64],
        dur_ns: npt.NDArray[np.int64],
        tracks: npt.NDArray[np.int32],
        name_ids: npt.NDArray[np.int64],
        kinds: npt.NDArray[np.int8],
        args: tuple[npt.NDArray[np.int64], bytes],
    ) -> int:
        """Append many events at once (names already interned); returns the first row. `args`
        is (length of each event's encoded object, 0 for none; the objects concatenated)."""
        first = len(self._ts)
        lengths, blob = args
        self._ts.frombytes(np.ascontiguousarray(ts_ns, dtype=np.int64).tobytes())
        self._dur.frombytes(np.ascontiguousarray(dur_ns, dtype=np.int64).tobytes())
        self._track.frombytes(np.ascontiguousarray(tracks, dtype=np.int32).tobytes())
        self._name.frombytes(np.ascontiguousarray(name_ids, dtype=np.int32).tobytes())
        self._kind.frombytes(np.ascontiguousarray(kinds, dtype=np.int8).tobytes())
        ends = self._arg_size + np.cumsum(lengths, dtype=np.int64)
        if len(ends) and int(ends[-1]) != self._arg_size + len(blob):
            raise ValueError("args lengths do not add up to the args blob")
        self._arg_ends.frombytes(ends.tobytes())
        self._arg_parts.append(blob)
        self._arg_size += len(blob)
        return first

    def flow(self, src_row: int, dst_row: int, flow_id: int) -> None:
        """Link event `src_row` to event `dst_row`."""
        self._flow_src.append(src_row)
        self._flow_dst.append(dst_row)
        self._flow_id.append(flow_id)

    def build(self, *, sort: bool = True) -> Trace:
        """Freeze into a `Trace`, ordered by (ts, -dur) so parents precede their children;
        times int64 cannot hold are refused, negative durations read as 0 and counted."""
        ts = np.frombuffer(self._ts, dtype=np.int64).copy()
        warnings = list(self.warnings)
        dur = check_time_columns(
            self.source, ts, np.frombuffer(self._dur, dtype=np.int64).copy(), warnings, self.locate
        )
        offsets = np.frombuffer(self._arg_ends, dtype=np.int64).copy()
        trace = Trace(
            ts_ns=ts,
            dur_ns=dur,
            track=np.frombuffer(self._track, dtype=np.int32).copy(),
            name=np.frombuffer(self._name, dtype=np.int32).copy(),
            kind=np.frombuffer(self._kind, dtype=np.int8).copy(),
            strings=tuple(self._strings),
            tracks=Tracks(
                tuple(self._process), tuple(self._thread), tuple(self._pid), tuple(self._tid)
            ),
            args_offsets=offsets,
            args_blob=b"".join(self._arg_parts),
            flows=Flows(
                np.frombuffer(self._flow_src, dtype=np.int32).copy(),
                np.frombuffer(self._flow_dst, dtype=np.int32).copy(),
                np.frombuffer(self._flow_id, dtype=np.int64).copy(),
            ),
            metadata=dict(self.metadata),
            hlo_programs=tuple(self.hlo_programs),
            warnings=tuple(warnings),
        )
        if not sort or len(trace) < 2:
            return trace
        order = time_order(ts, dur)
        if np.array_equal(order, np.arange(len(order))):
            return trace
        return trace.select(order.astype(np.int64))
