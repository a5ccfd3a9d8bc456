"""Preempted time per event: interval arithmetic against brute force over integer instants,
tracks matched to threads by where their stamps fall, and per-step samples of on-CPU time.

Every expected figure is counted here from the input: instants covered, event by event.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.preemption import (
    MATCH_FLOOR_PCT,
    effective_waits,
    inside,
    match_threads,
    overlap_ns,
    preemption,
    read_sched,
    union,
)
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.run_diff_samples import run_samples
from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, SchedRecord, ThreadSched
from irprof.errors import BundleError
from irprof.opprofile import ProfileData
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

GRID = 12  # a coarse grid: equal and touching ends are common


@st.composite
def disjoint_intervals(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-empty [start, end) intervals on the grid (touching allowed)."""
    cuts = sorted(set(draw(st.lists(st.integers(0, GRID), max_size=8))))
    pairs = list(zip(cuts[0::2], cuts[1::2], strict=False))
    return [(start, end) for start, end in pairs if end > start]


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return (np.asarray([s for s, _ in pairs], dtype=np.int64),
            np.asarray([e for _, e in pairs], dtype=np.int64))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(disjoint_intervals(), st.lists(st.tuples(st.integers(0, GRID), st.integers(0, GRID))))
def test_overlap_counts_the_instants_an_event_shares_with_the_waits(
    waits: list[tuple[int, int]], events: list[tuple[int, int]]
) -> None:
    spans = [(min(a, b), max(a, b)) for a, b in events]
    begin = np.asarray([s for s, _ in spans], dtype=np.int64)
    end = np.asarray([e for _, e in spans], dtype=np.int64)
    got = overlap_ns(*arrays(waits), begin, end).tolist()
    # Brute force: unit instants [t, t+1) inside both the event and some wait.
    expected = [
        sum(1 for t in range(s, e) if any(ws <= t < we for ws, we in waits)) for s, e in spans
    ]
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(disjoint_intervals(), st.lists(st.integers(-2, GRID + 2)), st.integers(0, 2))
def test_inside_is_membership_in_the_widened_closed_intervals(
    intervals: list[tuple[int, int]], points: list[int], slack: int
) -> None:
    got = inside(*arrays(intervals), np.asarray(points, dtype=np.int64), slack).tolist()
    expected = [any(s - slack <= p <= e + slack for s, e in intervals) for p in points]
    assert got == expected


def flat(pairs: list[tuple[int, int]]) -> list[int]:
    return [value for pair in pairs for value in pair]


def record(
    threads: list[ThreadSched], lost: int = 0, drift: int = 0, complete_from: int = 0
) -> SchedRecord:
    return SchedRecord(1, "CLOCK_REALTIME ns", 0, drift, lost, threads, complete_from)


US = 1000
MS = 1_000_000


def two_thread_trace() -> Trace:
    """Track 0 (the main thread): a step marker per 10 ms and one op event in each step;
    track 1 (a worker): two events at 0.6 ms and 20.6 ms."""
    builder = TraceBuilder()
    main = builder.track(1, 7777, "proc", "main")
    worker = builder.track(1, 8888, "proc", "worker")
    for step in range(3):
        start = step * 10 * MS
        builder.add(start, 10 * MS, main, "step", EventKind.STEP)
        builder.add(start + 2 * MS, 4 * MS, main, "conv", EventKind.FRAMEWORK_OP)
    builder.add(600 * US, 800 * US, worker, "io", EventKind.RUNTIME)
    builder.add(20_600 * US, 800 * US, worker, "io", EventKind.RUNTIME)
    return builder.build()


# The main thread (OS tid 101) runs 0-30 ms but sleeps while the worker runs (0.5-1.5 ms,
# 20.5-21.5 ms) and waits for a CPU 3-4 ms and 13-15.5 ms (inside steps 0 and 1's conv) and
# 26-27 ms (after step 2's conv ended at 26 ms: touching, no overlap).
MAIN = ThreadSched(
    101,
    "python",
    flat([(0, 500 * US), (1_500 * US, 3 * MS), (4 * MS, 13 * MS), (15_500 * US, 20_500 * US),
          (21_500 * US, 26 * MS), (27 * MS, 30 * MS)]),
    flat([(3 * MS, 4 * MS), (13 * MS, 15_500 * US), (26 * MS, 27 * MS)]),
)  # fmt: skip
# The worker (tid 102) is on a CPU only around its own two events.
WORKER = ThreadSched(102, "worker", flat([(500 * US, 1_500 * US), (20_500 * US, 21_500 * US)]), [])


def test_tracks_match_the_thread_whose_cpu_intervals_hold_their_stamps() -> None:
    trace = two_thread_trace()
    matched = match_threads(trace, record([MAIN, WORKER]))
    assert {track: thread.tid for track, thread in matched.items()} == {0: 101, 1: 102}


def test_a_track_no_thread_clearly_ran_is_not_matched() -> None:
    trace = two_thread_trace()
    # A twin of the main thread holds the same stamps: ambiguous, so no match for track 0;
    # the worker's track still matches (its stamps are in neither twin's intervals).
    twin = ThreadSched(103, "twin", MAIN.oncpu, [])
    matched = match_threads(trace, record([MAIN, twin, WORKER]))
    assert {track: thread.tid for track, thread in matched.items()} == {1: 102}
    # A thread holding under MATCH_FLOOR_PCT of the stamps is no match either: the worker's
    # intervals without the second event's.
    partial = ThreadSched(102, "worker", flat([(500 * US, 1_500 * US)]), [])
    assert MATCH_FLOOR_PCT > 50
    assert 1 not in match_threads(trace, record([MAIN, partial]))


def test_each_event_loses_the_waits_it_overlaps() -> None:
    trace = two_thread_trace()
    found = preemption(trace, record([MAIN, WORKER]))
    assert found is not None
    expected = []
    for row in range(len(trace)):
        start, end = int(trace.ts_ns[row]), int(trace.end_ns[row])
        waits = [(3 * MS, 4 * MS), (13 * MS, 15_500 * US), (26 * MS, 27 * MS)]
        on_main = int(trace.track[row]) == 0
        expected.append(
            sum(max(0, min(end, we) - max(start, ws)) for ws, we in waits) if on_main else 0
        )
    assert found.preempted_ns.tolist() == expected
    # conv of step 0: 2-6 ms holds the 3-4 ms wait; of step 1: 12-16 ms holds 13-15.5 ms;
    # of step 2: 22-26 ms ends as the 26 ms wait starts.
    conv = [row for row in range(len(trace)) if trace.strings[trace.name[row]] == "conv"]
    assert [expected[row] for row in conv] == [1 * MS, 2_500 * US, 0]
    assert (found.matched_events, found.unmatched_events) == (len(trace), 0)


@pytest.mark.parametrize(("lost", "drift"), [(1, 0), (0, 2 * MS)])
def test_a_record_with_dropped_events_or_a_moving_clock_is_not_used(lost: int, drift: int) -> None:
    assert preemption(two_thread_trace(), record([MAIN, WORKER], lost, drift)) is None


def late_trace() -> Trace:
    """Steps 1 and 2 of `two_thread_trace` and the worker's second event: it starts at 10 ms."""
    builder = TraceBuilder()
    main = builder.track(1, 7777, "proc", "main")
    worker = builder.track(1, 8888, "proc", "worker")
    for step in (1, 2):
        builder.add(step * 10 * MS, 10 * MS, main, "step", EventKind.STEP)
        builder.add(step * 10 * MS + 2 * MS, 4 * MS, main, "conv", EventKind.FRAMEWORK_OP)
    builder.add(20_600 * US, 800 * US, worker, "io", EventKind.RUNTIME)
    return builder.build()


@pytest.mark.parametrize(
    ("complete_from", "used"),
    [(10 * MS, True), (5 * MS, True), (10 * MS + 1, False), (0, False)],
)
def test_events_dropped_before_the_trace_began_do_not_matter(
    complete_from: int, used: bool
) -> None:
    """A full ring buffer overwrites its oldest events: a record complete from the trace's
    first nanosecond on is used; complete from one ns later, or from nobody knows when, not."""
    found = preemption(late_trace(), record([MAIN, WORKER], 5, 0, complete_from))
    assert (found is not None) == used
    if found is not None:  # step 1's conv (12-16 ms) holds the 13-15.5 ms wait
        trace = late_trace()
        conv = [row for row in range(len(trace)) if trace.strings[trace.name[row]] == "conv"]
        assert [int(found.preempted_ns[row]) for row in conv] == [2_500 * US, 0]


def conv_op() -> ProfiledOp:
    data = ProfileData(count=3, total_ns=12 * MS, mean_ns=4 * MS, min_ns=4 * MS, max_ns=4 * MS,
                       first_ts_ns=2 * MS, fraction=1.0, kernels=("conv",))  # fmt: skip
    return ProfiledOp(index=0, op_name="tf.Conv2D", function="main", runtime_name="conv",
                      scope="", source="", chain=(), location="", profile=data,
                      trivial=False)  # fmt: skip


def test_samples_of_on_cpu_time_subtract_each_steps_waits() -> None:
    trace = two_thread_trace()
    found = preemption(trace, record([MAIN, WORKER]))
    assert found is not None
    wall, _ = run_samples(trace, [conv_op()], 3)
    oncpu, _ = run_samples(trace, [conv_op()], 3, found.preempted_ns)
    assert wall[0].values == (4 * MS, 4 * MS, 4 * MS)
    # 4 ms less 1 ms, 2.5 ms and nothing.
    assert oncpu[0].values == (3 * MS, 1_500 * US, 4 * MS)
    assert oncpu[0].typical_ns == 3 * MS  # the median event, matched step to step


def test_a_bundle_without_a_record_has_none_and_a_bad_one_is_named(tmp_path: Path) -> None:
    assert read_sched(RunBundle(tmp_path)) is None
    (tmp_path / SCHED_FILE).write_bytes(msgspec.json.encode(record([MAIN])))
    assert read_sched(RunBundle(tmp_path)) == record([MAIN])
    (tmp_path / SCHED_FILE).write_bytes(b'{"version": 1, "threads": "\xff"}')
    with pytest.raises(BundleError, match=SCHED_FILE):
        read_sched(RunBundle(tmp_path))
    # A symlink out of the bundle, to a device that never ends, is refused unread.
    (tmp_path / SCHED_FILE).unlink()
    (tmp_path / SCHED_FILE).symlink_to("/dev/zero")
    with pytest.raises(BundleError, match="outside the bundle"):
        read_sched(RunBundle(tmp_path))


@pytest.mark.parametrize(
    ("thread", "problem"),
    [
        (ThreadSched(1, "a", [5, 3], []), "oncpu intervals are not sorted"),
        (ThreadSched(1, "a", [], [1, 2, 3]), "runnable intervals are not sorted"),
        (ThreadSched(1, "a", [], [4, 6, 5, 7]), "runnable intervals are not sorted"),
        (ThreadSched(1, "a", [], [], [9, 8, 2]), "blocked sleeps"),
        (ThreadSched(1, "a", [], [], [1, 2]), "blocked sleeps"),
    ],
)
def test_a_record_whose_intervals_are_not_intervals_is_refused(
    tmp_path: Path, thread: ThreadSched, problem: str
) -> None:
    (tmp_path / SCHED_FILE).write_bytes(msgspec.json.encode(record([thread])))
    with pytest.raises(BundleError, match=problem):
        read_sched(RunBundle(tmp_path))
    # Touching and equal stamps are intervals.
    (tmp_path / SCHED_FILE).write_bytes(
        msgspec.json.encode(record([ThreadSched(1, "a", [1, 1, 1, 2], [2, 3])]))
    )
    assert read_sched(RunBundle(tmp_path)) is not None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, GRID), st.integers(0, GRID)), max_size=8))
def test_union_covers_exactly_the_instants_of_its_parts(spans: list[tuple[int, int]]) -> None:
    starts = np.asarray([a for a, _ in spans], dtype=np.int64)
    ends = np.asarray([b for _, b in spans], dtype=np.int64)
    got_s, got_e = union(starts, ends)
    covered = {t for a, b in spans for t in range(a, b)}
    assert {
        t for a, b in zip(got_s.tolist(), got_e.tolist(), strict=True) for t in range(a, b)
    } == covered
    # Disjoint and not touching: each interval starts after the previous one ends.
    assert all(
        later > earlier
        for earlier, later in zip(got_e[:-1].tolist(), got_s[1:].tolist(), strict=True)
    )


def test_a_caller_blocked_on_a_preempted_worker_loses_the_workers_wait() -> None:
    """The main thread sleeps 2-6 ms inside step 0's conv until worker 104 wakes it; the worker
    waited for a CPU 1-3 ms and 5-8 ms. The conv (2-6 ms) loses the worker's waits inside the
    sleep (2-3 ms and 5-6 ms) and its own (none there); a sleep no thread of the capture ended
    (12-14 ms) loses nothing."""
    trace = two_thread_trace()
    main = ThreadSched(
        101,
        "python",
        flat([(0, 500 * US), (1_500 * US, 2 * MS), (6 * MS, 12 * MS), (14 * MS, 30 * MS)]),
        [],
        [2 * MS, 6 * MS, 104],
    )
    worker = ThreadSched(
        104, "omp", flat([(3 * MS, 5 * MS)]), flat([(1 * MS, 3 * MS), (5 * MS, 8 * MS)])
    )
    io = ThreadSched(102, "worker", WORKER.oncpu, [])
    found = preemption(trace, record([main, worker, io]))
    assert found is not None and found.threads[0] == 101
    conv = [row for row in range(len(trace)) if trace.strings[trace.name[row]] == "conv"]
    assert [int(found.preempted_ns[row]) for row in conv] == [2 * MS, 0, 0]
    waits = effective_waits(main, {t.tid: t for t in (main, worker, io)})
    assert [a.tolist() for a in waits] == [[2 * MS, 5 * MS], [3 * MS, 6 * MS]]
