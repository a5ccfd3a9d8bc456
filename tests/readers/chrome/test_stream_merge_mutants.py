"""`readers/chrome/stream_merge.py` piece by piece: runs merged in (ts, -dur, seq) order with
each round's bound, merges in groups over several generations, and `FlowSweep` binding flow
points round by round as a brute-force reading of the binding rule (written here, slice by
slice) binds them, with ties on the round bounds, slices carried across rounds, points waiting
for a later slice, and walks back limited to a few slices."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from irprof.readers.chrome import stream_merge
from irprof.readers.chrome.flows import FLOW_END, FLOW_START, FlowPoints
from irprof.readers.chrome.stream_merge import (
    FlowSweep,
    merged_tables,
    reduce_runs,
    run_schema,
    write_run,
)

Row = tuple[int, int, int]  # ts, dur, seq


def run_table(rows: list[Row]) -> pa.Table:
    """Run columns for rows (ts, dur, seq); the other columns name the row by its seq."""
    count = len(rows)
    return pa.table(
        {
            "ts_ns": pa.array([r[0] for r in rows], pa.int64()),
            "dur_ns": pa.array([r[1] for r in rows], pa.int64()),
            "pid": pa.array([r[2] % 3 for r in rows], pa.int32()),
            "tid": pa.array([r[2] % 5 for r in rows], pa.int32()),
            "name": pa.array([r[2] for r in rows], pa.int32()),
            "kind": pa.array([r[2] % 7 for r in rows], pa.int8()),
            "seq": pa.array([r[2] for r in rows], pa.int64()),
            "slice": pa.array([r[2] % 2 == 0 for r in rows], pa.bool_()),
            "args": pa.array([f"a{r[2]}" for r in rows][:count], pa.large_string()),
        },
        schema=run_schema(),
    )


def key(row: Row) -> tuple[int, int, int]:
    return row[0], -row[1], row[2]


def random_runs(rng: random.Random, count: int) -> list[list[Row]]:
    """`count` runs, each sorted by (ts, -dur, seq), with many ties in ts and dur."""
    seqs = list(range(rng.randint(0, 60)))
    rng.shuffle(seqs)
    runs: list[list[Row]] = [[] for _ in range(count)]
    for seq in seqs:
        runs[rng.randrange(count)].append((rng.randint(0, 6), rng.choice([0, 1, 5]), seq))
    return [sorted(run, key=key) for run in runs]


def write_runs(folder: Path, runs: list[list[Row]]) -> list[Path]:
    paths = []
    for number, rows in enumerate(runs):
        path = folder / f"run-{number}.arrow"
        # Rows in tables of up to four: a run may also hold an empty table.
        write_run(path, (run_table(rows[start : start + 4]) for start in range(0, len(rows), 4)))
        paths.append(path)
    return paths


def rows_of(table: pa.Table) -> list[Row]:
    return list(
        zip(
            table.column("ts_ns").to_pylist(),
            table.column("dur_ns").to_pylist(),
            table.column("seq").to_pylist(),
            strict=True,
        )
    )


def check_merge(runs: list[list[Row]], rounds: list[tuple[pa.Table, int | None]]) -> None:
    """Every row once, in key order, the other columns following their row; each round's
    bound lies between its rows' starts and the later rows' starts; None only last."""
    expected = sorted((row for run in runs for row in run), key=key)
    got = [row for table, _ in rounds for row in rows_of(table)]
    assert got == expected
    for table, _ in rounds:
        seq = table.column("seq").to_pylist()
        assert table.column("name").to_pylist() == seq
        assert table.column("pid").to_pylist() == [s % 3 for s in seq]
        assert table.column("tid").to_pylist() == [s % 5 for s in seq]
        assert table.column("kind").to_pylist() == [s % 7 for s in seq]
        assert table.column("slice").to_pylist() == [s % 2 == 0 for s in seq]
        assert table.column("args").to_pylist() == [f"a{s}" for s in seq]
    if not expected:
        assert rounds == []
        return
    assert [bound is None for _, bound in rounds] == [False] * (len(rounds) - 1) + [True]
    taken = 0
    for table, bound in rounds[:-1]:
        assert bound is not None
        mine = rows_of(table)
        taken += len(mine)
        assert all(row[0] <= bound for row in mine)
        assert all(row[0] >= bound for row in expected[taken:])


@pytest.mark.parametrize("seed", range(40))
def test_runs_merge_in_key_order_with_their_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(stream_merge, "RUN_BATCH_ROWS", 1 + seed % 4)
    rng = random.Random(seed)
    runs = random_runs(rng, rng.randint(1, 5))
    check_merge(runs, list(merged_tables(write_runs(tmp_path, runs))))


def test_rounds_take_rows_up_to_the_smallest_last_buffered_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_merge, "RUN_BATCH_ROWS", 2)
    # Batches of two. Run a: (1,0,0) (3,0,1) | (3,0,4) (9,0,6); run b: (1,0,2) (3,2,5) | (3,0,3).
    # Keys are (ts, -dur, seq): on one start, the longer first, then the file order.
    runs = [
        [(1, 0, 0), (3, 0, 1), (3, 0, 4), (9, 0, 6)],
        [(1, 0, 2), (3, 2, 5), (3, 0, 3)],
    ]
    rounds = list(merged_tables(write_runs(tmp_path, runs)))
    assert [rows_of(table) for table, _ in rounds] == [
        [(1, 0, 0), (1, 0, 2), (3, 2, 5)],  # up to b's last buffered (3,-2,5), before (3,0,1)
        [(3, 0, 1)],  # up to a's (3,0,1); b's (3,0,3) comes after it
        [(3, 0, 3)],  # up to b's (3,0,3): a's (3,0,4) has the larger seq
        [(3, 0, 4), (9, 0, 6)],  # only a is left
    ]
    assert [bound for _, bound in rounds] == [3, 3, 3, None]
    check_merge(runs, rounds)


def test_one_run_and_empty_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_merge, "RUN_BATCH_ROWS", 3)
    runs: list[list[Row]] = [[], [(0, 5, 1), (0, 1, 0), (2, 0, 2), (2, 0, 3)], []]
    runs[1].sort(key=key)
    rounds = list(merged_tables(write_runs(tmp_path, runs)))
    assert [rows_of(table) for table, _ in rounds] == [
        [(0, 5, 1), (0, 1, 0), (2, 0, 2)],
        [(2, 0, 3)],
    ]
    assert [bound for _, bound in rounds] == [2, None]
    assert list(merged_tables(write_runs(tmp_path, [[], []]))) == []


@pytest.mark.parametrize(("count", "fanin"), [(2, 2), (3, 2), (5, 2), (9, 2), (7, 3), (4, 4)])
def test_runs_are_reduced_in_groups_until_the_fanin_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, fanin: int
) -> None:
    monkeypatch.setattr(stream_merge, "RUN_BATCH_ROWS", 2)
    monkeypatch.setattr(stream_merge, "MAX_FANIN", fanin)
    runs = random_runs(random.Random(count * 10 + fanin), count)
    paths = write_runs(tmp_path, runs)
    left = reduce_runs(paths, tmp_path)
    # Groups of `fanin` until at most `fanin` are left: the count a generation leaves is the
    # ceiling of the division.
    expected = count
    while expected > fanin:
        expected = -(-expected // fanin)
    assert len(left) == expected
    if count > fanin:
        assert not any(path.exists() for path in paths)  # merged inputs are removed
        assert all(path.name.startswith("merged-") for path in left)
    else:
        assert left == paths
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(p.name for p in left)
    check_merge(runs, list(merged_tables(left)))
    # Every file left is itself one sorted run.
    for path in left:
        with pa.OSFile(str(path), "rb") as source:
            rows = rows_of(pa.ipc.open_file(source).read_all())
        assert rows == sorted(rows, key=key)


def test_run_files_hold_batches_of_run_batch_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_merge, "RUN_BATCH_ROWS", 3)
    rows = [(t, 0, t) for t in range(8)]
    write_run(tmp_path / "r.arrow", iter([run_table(rows)]))
    with pa.OSFile(str(tmp_path / "r.arrow"), "rb") as source:
        reader = pa.ipc.open_file(source)
        sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
    assert sizes == [3, 3, 2]


# FlowSweep against a brute-force binding, slice by slice.

Slice = tuple[int, int, int, int]  # row, track, ts, end


def brute_force(
    slices: list[Slice], track: list[int], ts: list[int], enclosing: list[bool], walk: int
) -> list[int]:
    """Each point's slice row (-1 for none): an enclosing point binds to the last slice of
    its track started at or before it that has not ended (looking at most `walk` slices before
    the last started one); any other point to the first slice starting at or after it."""
    bound = []
    for point_track, at, encloses in zip(track, ts, enclosing, strict=True):
        mine = [s for s in slices if s[1] == point_track]  # row order: sorted by start
        found = -1
        if encloses:
            started = [index for index, s in enumerate(mine) if s[2] <= at]
            if started:
                last = started[-1]
                for index in range(last, max(-1, last - walk - 1), -1):
                    if mine[index][3] >= at:
                        found = mine[index][0]
                        break
        else:
            later = [s for s in mine if s[2] >= at]
            found = later[0][0] if later else -1
        bound.append(found)
    return bound


def points_of(track: list[int], ts: list[int], enclosing: list[bool]) -> FlowPoints:
    count = len(ts)
    return FlowPoints(
        track=np.array(track, dtype=np.int64),
        ts_ns=np.array(ts, dtype=np.int64),
        phase=np.where(enclosing, FLOW_START, FLOW_END).astype(np.int8),
        bind_enclosing=np.array(enclosing, dtype=np.bool_),
        key=np.arange(count, dtype=np.int64),
        flow_id=np.arange(count, dtype=np.int64),
        order=np.arange(count, dtype=np.int64),
    )


def sweep(points: FlowPoints, slices: list[Slice], cuts: list[int]) -> list[int]:
    """Feed `slices` (row order) in rounds ending after the rows in `cuts`; each round's bound
    is its last row's start, the last round's None."""
    flow_sweep = FlowSweep(points)
    edges = [0, *cuts, len(slices)]
    for number, (start, stop) in enumerate(itertools.pairwise(edges)):
        part = slices[start:stop]
        last = number == len(edges) - 2
        bound = None if last else part[-1][2] if part else slices[start - 1][2]
        rows, track, ts, end = (np.array([s[i] for s in part], dtype=np.int64) for i in range(4))
        flow_sweep.advance(rows, track, ts, end, bound)
    return flow_sweep.bound.tolist()


def random_case(rng: random.Random) -> tuple[list[Slice], list[int], list[int], list[bool]]:
    slices = []
    row = 0
    for _ in range(rng.randint(0, 14)):
        row += rng.randint(1, 2)  # rows between slices: instants, counters
        slices.append((row, rng.randint(0, 2), rng.randint(0, 12), rng.randint(0, 6)))
    # Row order: start, longest first; ends from durations.
    slices.sort(key=lambda s: (s[2], -s[3], s[0]))
    slices = [
        (r, t, ts, ts + d)
        for (_, t, ts, d), r in zip(slices, sorted(s[0] for s in slices), strict=True)
    ]
    points = sorted(
        (rng.randint(-1, 20), rng.randint(0, 3), rng.random() < 0.7)
        for _ in range(rng.randint(0, 10))
    )
    ts = [p[0] for p in points]
    track = [p[1] for p in points]
    enclosing = [p[2] for p in points]
    return slices, track, ts, enclosing


@pytest.mark.parametrize("walk", [0, 1, 2, 4096])
def test_sweep_binds_as_the_brute_force_rule(monkeypatch: pytest.MonkeyPatch, walk: int) -> None:
    monkeypatch.setattr(stream_merge, "MAX_WALK_BACK", walk)
    rng = random.Random(walk)
    for _ in range(200):
        slices, track, ts, enclosing = random_case(rng)
        expected = brute_force(slices, track, ts, enclosing, walk)
        cuts = sorted(rng.sample(range(1, len(slices)), k=rng.randint(0, max(0, len(slices) - 1))))
        points = points_of(track, ts, enclosing)
        assert sweep(points, slices, cuts) == expected, (slices, track, ts, enclosing, cuts)
        assert sweep(points, slices, []) == expected


def test_a_point_on_a_round_bound_waits_for_the_slices_starting_there() -> None:
    # Round 1 ends with the slice at 5 (bound 5); round 2 starts another slice at 5 that
    # encloses the point at 5: the point binds to the later one (the last started).
    slices = [(0, 1, 0, 10), (1, 1, 5, 6), (2, 1, 5, 5), (3, 1, 8, 9)]
    points = points_of([1, 1, 1], [5, 5, 7], [True, False, True])
    assert sweep(points, slices, [2]) == [2, 1, 0]
    assert brute_force(slices, [1, 1, 1], [5, 5, 7], [True, False, True], 4096) == [2, 1, 0]


def test_a_slice_still_open_at_the_bound_is_carried_to_the_next_round() -> None:
    # The slice [0, 100] ends after round 1's bound (10): a point at 50 in round 3 binds to it
    # (the later slices ended before 50); one ending exactly at the bound is carried too.
    slices = [(0, 4, 0, 100), (1, 4, 10, 10), (2, 4, 20, 30), (3, 4, 40, 45), (4, 4, 60, 61)]
    points = points_of([4, 4], [10, 50], [True, True])
    assert sweep(points, slices, [2, 3]) == [1, 0]
    assert sweep(points, slices, [1, 2, 3, 4]) == [1, 0]


def test_following_points_wait_across_rounds_for_a_later_slice() -> None:
    # `f` points (not enclosing) bind to the next slice of their track, rounds later; one
    # after every slice stays unbound; other tracks' slices do not count.
    slices = [(0, 1, 0, 1), (1, 2, 3, 4), (2, 2, 6, 7), (3, 1, 9, 9)]
    points = points_of([1, 1, 2, 1], [1, 2, 5, 10], [False, False, False, False])
    assert sweep(points, slices, [1, 2, 3]) == [3, 3, 2, -1]


def test_the_walk_back_stops_after_max_walk_back_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_merge, "MAX_WALK_BACK", 2)
    # The point at 50 is inside only the first slice; the last started is three slices later.
    slices = [(0, 1, 0, 100), (1, 1, 10, 11), (2, 1, 20, 21), (3, 1, 30, 31)]
    assert sweep(points_of([1], [50], [True]), slices, []) == [-1]
    assert sweep(points_of([1], [50], [True]), slices[:3], []) == [0]  # two slices back
    assert sweep(points_of([1], [50], [True]), slices, [1, 2, 3]) == [-1]
    assert sweep(points_of([1], [50], [True]), slices[:3], [1, 2]) == [0]


def test_unsorted_points_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^FlowSweep needs its points sorted by time$"):
        FlowSweep(points_of([1, 1], [5, 4], [True, True]))
    FlowSweep(points_of([1, 1], [4, 4], [True, True]))  # equal times are sorted
