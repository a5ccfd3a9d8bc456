"""Tests written from the surviving mutants of `analyses/preemption.py`: which events count
as a track's stamps, the exact match thresholds, more than one track or waker, the record's
boundaries (drift, the first complete nanosecond, strict decoding) and reading it from a bundle.
Expected values are counted here from the input."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from irprof.analyses.preemption import (
    MATCH_FLOOR_PCT,
    MATCH_MARGIN_PCT,
    MAX_DRIFT_NS,
    MAX_STAMPS,
    _stamps,
    bundle_preemption,
    effective_waits,
    match_threads,
    preemption,
    read_sched,
)
from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, SchedRecord, ThreadSched
from irprof.errors import BundleError
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

MS = 1_000_000


def record(threads: list[ThreadSched], drift: int = 0) -> SchedRecord:
    return SchedRecord(1, "CLOCK_REALTIME ns", 0, drift, 0, threads)


def flat(pairs: list[tuple[int, int]]) -> list[int]:
    return [value for pair in pairs for value in pair]


def one_track(events: list[tuple[int, int, EventKind]]) -> Trace:
    builder = TraceBuilder()
    track = builder.track(1, 1, "proc", "thread")
    for start, dur, kind in events:
        builder.add(start, dur, track, "e", kind)
    return builder.build()


# Thread 10 holds a CPU over 0-100 ms; thread 20 never does.
ON = ThreadSched(10, "on", flat([(0, 100 * MS)]), [])
OFF = ThreadSched(20, "off", [], [])


@pytest.mark.parametrize(
    ("kind", "dur", "matched"),
    [
        (EventKind.FRAMEWORK_OP, 1, True),  # one nanosecond is an interval
        (EventKind.FRAMEWORK_OP, 0, False),  # no duration: not a stamp pair of work
        (EventKind.INSTANT, 5 * MS, False),
        (EventKind.COUNTER, 5 * MS, False),
        (EventKind.KERNEL, 5 * MS, False),  # a device's clock, not a thread's
        (EventKind.DISPATCH, 5 * MS, False),
    ],
)
def test_only_timed_host_events_are_stamps(kind: EventKind, dur: int, matched: bool) -> None:
    trace = one_track([(10 * MS, dur, kind), (20 * MS, dur, kind)])
    assert (0 in match_threads(trace, record([ON, OFF]))) == matched


def stamps_held(held: int, total_events: int) -> tuple[Trace, ThreadSched]:
    """A track of `total_events` events (2 stamps each) and a thread whose CPU intervals hold
    exactly `held` of the stamps (whole events first, then a start alone)."""
    events = [(k * 10 * MS, 2 * MS, EventKind.FRAMEWORK_OP) for k in range(total_events)]
    pairs = [(start, start + dur) for start, dur, _ in events[: held // 2]]
    if held % 2:
        start = events[held // 2][0]
        pairs.append((start, start + 1000))  # holds the start, not the end
    return one_track(events), ThreadSched(10, "t", flat(pairs), [])


@pytest.mark.parametrize(
    ("held", "matched"),
    [(38, True), (37, False)],  # of 40 stamps: 95% exactly, and one less
)
def test_the_floor_is_exact(held: int, matched: bool) -> None:
    assert MATCH_FLOOR_PCT == 95
    trace, thread = stamps_held(held, 20)
    assert (0 in match_threads(trace, record([thread]))) == matched


@pytest.mark.parametrize(("second", "matched"), [(32, True), (33, False)])
def test_the_margin_is_exact(second: int, matched: bool) -> None:
    """The best thread holds 40 of 40 stamps; a second holding 32 is 20 points behind (matched),
    one holding 33 is closer (ambiguous)."""
    assert MATCH_MARGIN_PCT == 20
    trace, best = stamps_held(40, 20)
    _, other = stamps_held(second, 20)
    runner_up = ThreadSched(11, "other", other.oncpu, [])
    assert (0 in match_threads(trace, record([best, runner_up]))) == matched


def test_a_single_thread_and_two_equal_threads() -> None:
    trace = one_track([(10 * MS, 5 * MS, EventKind.FRAMEWORK_OP)])
    assert match_threads(trace, record([ON]))[0].tid == 10
    twin = ThreadSched(11, "twin", ON.oncpu, [])
    assert match_threads(trace, record([ON, twin])) == {}


def test_an_unmatched_track_does_not_stop_the_next() -> None:
    builder = TraceBuilder()
    first = builder.track(1, 1, "proc", "nobody's")
    second = builder.track(1, 2, "proc", "on's")
    builder.add(200 * MS, 5 * MS, first, "e", EventKind.FRAMEWORK_OP)  # outside every CPU interval
    builder.add(10 * MS, 5 * MS, second, "e", EventKind.FRAMEWORK_OP)
    trace = builder.build()
    matched = match_threads(trace, record([ON, OFF]))
    assert {trace.tracks.tid[track]: thread.tid for track, thread in matched.items()} == {2: 10}


def test_every_waker_counts_not_only_the_first() -> None:
    """Thread 1 slept 0-10 ms until 5 woke it and 20-30 ms until 7 did; 3 is a waker with no
    waits. Its waits are 5's within the first sleep and 7's within the second."""
    sleeper = ThreadSched(1, "caller", [], [], [0, 10 * MS, 5, 20 * MS, 30 * MS, 7, 40, 50, 3])
    first = ThreadSched(5, "w5", [], flat([(2 * MS, 4 * MS)]))
    second = ThreadSched(7, "w7", [], flat([(25 * MS, 35 * MS)]))
    idle = ThreadSched(3, "w3", [], [])
    threads = {t.tid: t for t in (sleeper, first, second, idle)}
    starts, ends = effective_waits(sleeper, threads)
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [
        (2 * MS, 4 * MS),
        (25 * MS, 30 * MS),
    ]
    # A waker outside the record (it exited before) is skipped, the others still count.
    del threads[3]
    gone = ThreadSched(1, "caller", [], [], [40, 50, 2, 0, 10 * MS, 5])
    assert effective_waits(gone, threads)[0].tolist() == [2 * MS]


def test_the_drift_limit_and_the_first_complete_nanosecond_are_inclusive() -> None:
    trace = one_track([(10 * MS, 5 * MS, EventKind.FRAMEWORK_OP)])
    assert preemption(trace, record([ON], drift=MAX_DRIFT_NS)) is not None
    assert preemption(trace, record([ON], drift=MAX_DRIFT_NS + 1)) is None
    lost = SchedRecord(1, "c", 0, 0, 3, [ON], 1)  # complete from 1 ns: the trace is after
    assert preemption(trace, lost) is not None
    assert preemption(one_track([]), record([ON])) is None  # no events, nothing to match


def test_a_record_is_decoded_strictly_and_its_reader_named(tmp_path: Path) -> None:
    text = msgspec.json.encode(record([ON])).replace(b'"version":1', b'"version":"1"')
    (tmp_path / SCHED_FILE).write_bytes(text)
    with pytest.raises(BundleError, match="not a scheduler record"):
        read_sched(RunBundle(tmp_path))
    (tmp_path / SCHED_FILE).unlink()
    (tmp_path / SCHED_FILE).symlink_to("/etc/hostname")
    with pytest.raises(BundleError, match="scheduler record"):
        read_sched(RunBundle(tmp_path))


def test_a_bundles_preemption_is_its_records(tmp_path: Path) -> None:
    trace = one_track([(10 * MS, 5 * MS, EventKind.FRAMEWORK_OP)])
    assert bundle_preemption(RunBundle(tmp_path), trace) is None
    waiting = ThreadSched(10, "on", ON.oncpu, flat([(11 * MS, 12 * MS)]))
    (tmp_path / SCHED_FILE).write_bytes(msgspec.json.encode(record([waiting, OFF])))
    found = bundle_preemption(RunBundle(tmp_path), trace)
    assert found is not None and found.preempted_ns.tolist() == [1 * MS]


@pytest.mark.parametrize(
    ("blocked", "valid"),
    [
        ([10, 20, 3], True),  # the waker's tid may be below the times: only start <= end
        ([5, 5, 1], True),  # a sleep woken at once
        ([1, 2, 3, 4, 9, 8], True),
        ([1, 2, 3, 9, 8, 20], False),  # the second sleep ends before it starts
        ([1, 2, 3, 4], False),  # not triples
        ([], True),
    ],
)
def test_blocked_sleeps_are_start_end_waker_triples(
    tmp_path: Path, blocked: list[int], valid: bool
) -> None:
    thread = ThreadSched(1, "a", [], [], blocked)
    (tmp_path / SCHED_FILE).write_bytes(msgspec.json.encode(record([thread])))
    if valid:
        assert read_sched(RunBundle(tmp_path)) == record([thread])
    else:
        with pytest.raises(
            BundleError, match=r"thread 1's blocked sleeps are not \[start, end, tid\]"
        ):
            read_sched(RunBundle(tmp_path))


def test_unsorted_intervals_are_named_with_their_kind(tmp_path: Path) -> None:
    (tmp_path / SCHED_FILE).write_bytes(
        msgspec.json.encode(record([ThreadSched(4, "a", [3, 1], [])]))
    )
    with pytest.raises(
        BundleError, match=r"thread 4's oncpu intervals are not sorted \[start, end\] pairs"
    ):
        read_sched(RunBundle(tmp_path))


def test_a_symlinked_record_names_the_scheduler_record(tmp_path: Path) -> None:
    (tmp_path / SCHED_FILE).symlink_to("/etc/hostname")
    with pytest.raises(BundleError, match=r"(^|\s)scheduler record(\s|$)"):
        read_sched(RunBundle(tmp_path))


def test_the_thresholds_on_many_stamps() -> None:
    """On 200 stamps 95% is 190: 189 is not enough. On 2,000 stamps the margin is 400: a runner-
    up 397 behind is too close."""
    trace, thread = stamps_held(189, 100)
    assert match_threads(trace, record([thread])) == {}
    trace, thread = stamps_held(190, 100)
    assert 0 in match_threads(trace, record([thread]))
    trace, best = stamps_held(2000, 1000)
    _, other = stamps_held(1603, 1000)
    assert match_threads(trace, record([best, ThreadSched(11, "o", other.oncpu, [])])) == {}
    _, other = stamps_held(1600, 1000)
    assert 0 in match_threads(trace, record([best, ThreadSched(11, "o", other.oncpu, [])]))


def test_stamps_are_every_events_or_an_even_sample_with_both_ends() -> None:
    """Up to MAX_STAMPS / 2 events, every start and end; beyond, MAX_STAMPS / 2 events spread
    evenly from the first to the last (index i * (n - 1) / (k - 1), rounded down)."""
    for count in (MAX_STAMPS // 2, MAX_STAMPS // 2 + 1, 5 * MAX_STAMPS):
        trace = one_track([(k * 10, 5, EventKind.FRAMEWORK_OP) for k in range(count)])
        rows = np.arange(count, dtype=np.int64)
        got = _stamps(trace, rows).tolist()
        k = min(count, MAX_STAMPS // 2)
        picked = [i * (count - 1) // (k - 1) for i in range(k)] if count > k else list(range(count))
        starts = [int(trace.ts_ns[row]) for row in picked]
        assert got == starts + [start + 5 for start in starts], count


def test_preempted_time_is_int64_nanoseconds() -> None:
    trace = one_track([(10 * MS, 5 * MS, EventKind.FRAMEWORK_OP)])
    found = preemption(trace, record([ON]))
    assert found is not None and found.preempted_ns.dtype == np.int64
