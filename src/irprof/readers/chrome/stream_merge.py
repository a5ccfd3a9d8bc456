"""The second half of a streamed Chrome conversion: merge sorted runs, bind flows on the way.

The first pass (`chrome_stream`) spills each segment's events, sorted by the reader's row order
(start, longest first, file order), as an Arrow IPC "run". Here the runs are merged a few
thousand rows per run at a time: each round takes, from every run, the rows up to the smallest
"last buffered key" among them, so every row taken precedes every row not yet taken. More than
`MAX_FANIN` runs are first merged in groups, so memory stays bounded by the fan-in whatever the
file's size.

Flows need the final row numbers, known only here. `FlowSweep` binds each flow point as the
rows go by, with exactly the in-memory rule of `chrome_flows._bind_on_track`: a point binds to
the last slice of its track that started at or before it and has not ended, found within
`MAX_WALK_BACK` slices of the last one started, or (`f` without `bp: "e"`) to the next slice
that starts at or after it. A round binds the points before its bound's start time; slices that
may still enclose a later point (their end is not before the bound) are carried to the next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from irprof.readers.chrome.flows import MAX_WALK_BACK, FlowPoints

if TYPE_CHECKING:
    import pyarrow as pa

I64 = npt.NDArray[np.int64]
RUN_BATCH_ROWS = 1 << 14  # rows per IPC batch of a run: what a merge round buffers per run
MAX_FANIN = 32  # runs merged at once; more are merged in groups first


def run_schema() -> pa.Schema:
    """Columns of a run: times without the trace's base, interned ids, file order, args."""
    import pyarrow as pa

    return pa.schema(
        [
            ("ts_ns", pa.int64()),
            ("dur_ns", pa.int64()),
            ("pid", pa.int32()),
            ("tid", pa.int32()),
            ("name", pa.int32()),
            ("kind", pa.int8()),
            ("seq", pa.int64()),  # position in the reader's row source: breaks ties in time
            ("slice", pa.bool_()),  # X or B/E: what flow points bind to (not instants)
            ("args", pa.large_string()),
        ]
    )


def write_run(path: Path, tables: Iterator[pa.Table]) -> None:
    """Write sorted tables of run columns as one run file."""
    import pyarrow as pa

    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, run_schema()) as writer:
        for table in tables:
            writer.write_table(table, max_chunksize=RUN_BATCH_ROWS)


class _RunCursor:
    """One run read batch by batch; the rows not yet taken of the current batch."""

    def __init__(self, path: Path, stack: contextlib.ExitStack) -> None:
        import pyarrow as pa

        source = stack.enter_context(pa.OSFile(str(path), "rb"))  # read, never memory-mapped
        self.reader = pa.ipc.open_file(source)
        self.next_batch = 0
        self.batch: pa.RecordBatch | None = None
        self._load()

    def _load(self) -> None:
        while self.next_batch < self.reader.num_record_batches:
            batch = self.reader.get_batch(self.next_batch)
            self.next_batch += 1
            if batch.num_rows:
                self.batch = batch
                self.ts = batch.column("ts_ns").to_numpy()
                self.neg_dur = -batch.column("dur_ns").to_numpy()
                self.seq = batch.column("seq").to_numpy()
                self.pos = 0
                return
        self.batch = None

    def last_key(self) -> tuple[int, int, int]:
        """Sort key of the last buffered row."""
        return int(self.ts[-1]), int(self.neg_dur[-1]), int(self.seq[-1])

    def take(self, bound: tuple[int, int, int]) -> pa.RecordBatch | None:
        """The buffered rows whose key is at most `bound` (a prefix: the batch is sorted)."""
        assert self.batch is not None
        ts, start = self.ts, self.pos
        low = int(np.searchsorted(ts, bound[0], side="left"))
        high = int(np.searchsorted(ts, bound[0], side="right"))
        low, high = max(low, start), max(high, start)
        tied_dur, tied_seq = self.neg_dur[low:high], self.seq[low:high]
        before = (tied_dur < bound[1]) | ((tied_dur == bound[1]) & (tied_seq <= bound[2]))
        stop = low + int(np.count_nonzero(before))
        piece = self.batch.slice(start, stop - start) if stop > start else None
        self.pos = stop
        if stop >= len(ts):
            self._load()
        return piece


def merged_tables(runs: list[Path]) -> Iterator[tuple[pa.Table, int | None]]:
    """Rows of every run in (ts, -dur, seq) order, a table per round, with the round's bound
    start time (None for the last round: every row has been given)."""
    import pyarrow as pa

    with contextlib.ExitStack() as stack:
        cursors = [_RunCursor(path, stack) for path in runs]
        cursors = [cursor for cursor in cursors if cursor.batch is not None]
        while cursors:
            bound = min(cursor.last_key() for cursor in cursors)
            pieces = [piece for cursor in cursors if (piece := cursor.take(bound)) is not None]
            cursors = [cursor for cursor in cursors if cursor.batch is not None]
            table = pa.Table.from_batches(pieces, schema=run_schema())
            if len(pieces) > 1:
                ts = table.column("ts_ns").to_numpy()
                dur = table.column("dur_ns").to_numpy()
                seq = table.column("seq").to_numpy()
                table = table.take(pa.array(np.lexsort((seq, -dur, ts))))
            yield table, (bound[0] if cursors else None)


def reduce_runs(runs: list[Path], folder: Path) -> list[Path]:
    """Merge runs in groups of `MAX_FANIN` until at most that many are left."""
    generation = 0
    while len(runs) > MAX_FANIN:
        merged = []
        for start in range(0, len(runs), MAX_FANIN):
            group = runs[start : start + MAX_FANIN]
            target = folder / f"merged-{generation}-{start // MAX_FANIN}.arrow"
            write_run(target, (table for table, _ in merged_tables(group)))
            for path in group:
                path.unlink()
            merged.append(target)
        runs, generation = merged, generation + 1
    return runs


class FlowSweep:
    """Binds flow points to slice rows while the merged rows go by (see the module doc)."""

    def __init__(self, points: FlowPoints) -> None:
        """`points` in time order (their binding does not depend on that; rounds take them
        by time)."""
        if np.any(np.diff(points.ts_ns) < 0):
            raise ValueError("FlowSweep needs its points sorted by time")
        self.points = points
        self.bound = np.full(len(points.ts_ns), -1, dtype=np.int64)
        self._next = 0
        self._tracks = np.unique(points.track)
        self._pending: dict[int, I64] = {}  # track -> `f` points still waiting for a slice
        self._counts: dict[int, int] = {}  # track -> slices seen on it
        self._carry: dict[int, tuple[I64, I64, I64, I64]] = {}  # track -> row, ts, end, pos

    def advance(self, rows: I64, track: I64, ts: I64, end: I64, bound_ts: int | None) -> None:
        """Take one round's slices (row order) and bind the points before `bound_ts`."""
        stop = (
            len(self.bound)
            if bound_ts is None
            else int(np.searchsorted(self.points.ts_ns, bound_ts, side="left"))
        )
        new = np.arange(self._next, max(stop, self._next), dtype=np.int64)
        self._next = stop
        keep = np.isin(track, self._tracks)
        rows, track, ts, end = rows[keep], track[keep], ts[keep], end[keep]
        order = np.argsort(track, kind="stable")
        slice_tracks, starts = np.unique(track[order], return_index=True)
        bounds = np.append(starts, len(order))
        on_track = {
            int(key): order[bounds[index] : bounds[index + 1]]
            for index, key in enumerate(slice_tracks.tolist())
        }
        new_tracks = self.points.track[new]
        touched = set(on_track) | set(np.unique(new_tracks).tolist()) | set(self._pending)
        for key in touched | set(self._carry):
            mine = on_track.get(key, np.zeros(0, np.int64))
            self._track_round(
                key, rows[mine], ts[mine], end[mine], new[new_tracks == key], bound_ts
            )

    def _track_round(
        self, key: int, own_rows: I64, own_ts: I64, own_end: I64, new: I64, bound_ts: int | None
    ) -> None:
        """One track's round: its new slices, the carried ones before them, its points."""
        before = self._counts.get(key, 0)
        rows, ts, end = own_rows, own_ts, own_end
        positions = before + np.arange(len(own_rows), dtype=np.int64)
        carried = self._carry.pop(key, None)
        if carried is not None:
            rows, ts = np.concatenate([carried[0], rows]), np.concatenate([carried[1], ts])
            end = np.concatenate([carried[2], end])
            positions = np.concatenate([carried[3], positions])
        points = self.points
        enclosing = new[points.bind_enclosing[new]]
        if len(enclosing) and len(ts):
            point_ts = points.ts_ns[enclosing]
            # Position on the track of the last slice started by then, carried or not.
            last_started = before + np.searchsorted(own_ts, point_ts, side="right") - 1
            self._bind_enclosing(enclosing, point_ts, last_started, rows, ts, end, positions)
        waiting = self._pending.pop(key, np.zeros(0, np.int64))
        following = np.concatenate([waiting, new[~points.bind_enclosing[new]]])
        if len(following):
            index = np.searchsorted(ts, points.ts_ns[following], side="left")
            found = index < len(ts)
            self.bound[following[found]] = rows[index[found]]
            if not found.all():
                self._pending[key] = following[~found]
        self._counts[key] = before + len(own_rows)
        if bound_ts is not None:
            still = end >= bound_ts
            if still.any():
                self._carry[key] = (rows[still], ts[still], end[still], positions[still])

    def _bind_enclosing(
        self,
        points: I64,
        point_ts: I64,
        last_started: I64,
        rows: I64,
        ts: I64,
        end: I64,
        positions: I64,
    ) -> None:
        last = np.searchsorted(ts, point_ts, side="right") - 1
        reach = last_started - MAX_WALK_BACK
        candidate = np.clip(last, 0, None)
        usable = (last >= 0) & (last_started >= 0)
        direct = usable & (end[candidate] >= point_ts) & (positions[candidate] >= reach)
        self.bound[points[direct]] = rows[candidate[direct]]
        for index in np.nonzero(usable & ~direct)[0].tolist():
            at, limit = int(point_ts[index]), int(reach[index])
            walk = int(last[index]) - 1
            while walk >= 0 and positions[walk] >= limit:
                if end[walk] >= at:
                    self.bound[points[index]] = rows[walk]
                    break
                walk -= 1
