"""The last step of a streamed Chrome conversion: merged runs -> final columns -> Parquet.

`StreamEnd` holds what the first pass settled once the whole file was seen (base time, the
final pid/tid order and track table, the compacted string table, the flow points) and writes
the output: runs merged in row order (`chrome_stream_merge`), each round's ids turned into the
Trace's (track rows, name codes), written as row groups, flow points bound on the way, and the
header with the flows and warnings at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from irprof.readers.chrome.flows import FlowPoints, link_flows
from irprof.readers.chrome.stream_merge import FlowSweep, merged_tables, reduce_runs
from irprof.trace.io import trace_header
from irprof.trace.model import Flows, Tracks
from irprof.trace.parquet_stream import ParquetTraceWriter

I64 = npt.NDArray[np.int64]
ROW_GROUP_ROWS = 1 << 16  # merged rounds are gathered up to this many rows per row group


@dataclass
class StreamEnd:
    """The settled tables of a streamed trace, and the writer of its rows."""

    base_ns: int
    pid_rank: I64  # interned pid id -> its place in the reader's pid order
    tid_rank: I64
    width: int  # number of distinct tids: track key = pid rank * width + tid rank
    track_keys: I64  # sorted keys of the tracks used; a row's track is its key's index
    tracks: Tracks
    name_remap: I64  # interned name id -> code in `strings`
    strings: list[str]
    points: FlowPoints | None
    warnings: list[str]
    metadata: dict[str, Any]
    rows: int = 0
    flow_count: int = 0
    _pending: list[Any] = field(default_factory=list)

    def write(self, handle: IO[bytes], runs: list[Path], folder: Path) -> None:
        """Merge `runs` into `handle` as an irprof Parquet trace."""
        writer = ParquetTraceWriter(handle, self.strings)
        sweep = FlowSweep(self.points) if self.points is not None else None
        try:
            for table, bound_ts in merged_tables(reduce_runs(runs, folder)):
                self._round(writer, sweep, table, bound_ts)
            self._flush(writer)
            flows = Flows.empty()
            if sweep is not None and self.points is not None:
                flows, unbound = link_flows(self.points, sweep.bound)
                if unbound:
                    self.warnings.append(f"{unbound} flow event(s) found no slice to bind to")
            self.flow_count = len(flows)
            del sweep
            self.points = None
            header = trace_header(
                self.strings, self.tracks, Flows.empty(), self.metadata, self.warnings
            )
            writer.finish(header, flows)
        except BaseException:
            writer.abort()
            raise

    def _round(
        self, writer: ParquetTraceWriter, sweep: FlowSweep | None, table: Any, bound: int | None
    ) -> None:
        ts = table.column("ts_ns").to_numpy()
        dur = table.column("dur_ns").to_numpy()
        pid = table.column("pid").to_numpy()
        tid = table.column("tid").to_numpy()
        keys = self.pid_rank[pid] * self.width + self.tid_rank[tid]
        if sweep is not None:
            slices = np.nonzero(table.column("slice").to_numpy(zero_copy_only=False))[0]
            sweep.advance(
                slices + self.rows,
                keys[slices],
                ts[slices],
                ts[slices] + dur[slices],
                bound,
            )
        self._pending.append(
            (
                ts + self.base_ns,
                dur,
                np.searchsorted(self.track_keys, keys).astype(np.int32),
                self.name_remap[table.column("name").to_numpy()],
                table.column("kind").to_numpy(),
                table.column("args").combine_chunks(),
            )
        )
        self.rows += len(ts)
        if sum(len(part[0]) for part in self._pending) >= ROW_GROUP_ROWS:
            self._flush(writer)

    def _flush(self, writer: ParquetTraceWriter) -> None:
        import pyarrow as pa

        if not self._pending:
            return
        parts = list(zip(*self._pending, strict=True))
        self._pending.clear()
        ts, dur, track, name, kind = (np.concatenate(part) for part in parts[:5])
        writer.write(ts, dur, track, name, kind, pa.concat_arrays(list(parts[5])))
