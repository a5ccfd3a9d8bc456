"""How much of each event its thread spent preempted: runnable waits subtracted from wall time.

The capture's scheduler record (`RUN/sched.json`, `capture/sched_trace.py`) says when each of
its threads was runnable but not running, and which thread ended each of its sleeps. An
event's preempted time is the overlap of its interval with its thread's waits, counting, while
it slept until another thread of the capture woke it, that thread's waits (an op waiting for
its workers is stretched by their preemption); rankings use the rest, the time the op had a CPU
(docs/views.md, "Preempted time"). Coverage and the raw sums keep wall time.

Which thread ran a track. PyTorch's events carry OS thread ids; XPlane lines carry the
profiler's own thread ids (a hash of the thread handle in recent TSL), so tracks are matched to
threads by structure: a thread must be on a CPU when it stamps an event's start and its end, so
the track's thread is the one whose on-CPU intervals contain (nearly) all of the track's
stamps. A track is matched only when one thread holds at least `MATCH_FLOOR_PCT` percent of
its stamps and no other comes within `MATCH_MARGIN_PCT` points; unmatched tracks keep their
wall time, and the counts of matched and unmatched events are reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, SchedRecord, ThreadSched
from irprof.errors import BundleError
from irprof.trace.model import EventKind, Trace

I64 = npt.NDArray[np.int64]
SLACK_NS = 2_000  # ftrace stamps are whole microseconds; the profilers read their own clock
MATCH_FLOOR_PCT = 95  # percent of a track's stamps inside one thread's CPU intervals...
MATCH_MARGIN_PCT = 20  # ...and ahead of the next thread by this many points (exact integers)
MAX_STAMPS = 4096  # stamps per track tried (evenly spaced): enough to tell threads apart
MAX_DRIFT_NS = 1_000_000  # a clock offset that moved more than this during the steps: unusable


@dataclass(frozen=True)
class Preemption:
    """Per-event preempted ns (0 where unknown) and how much of the trace it covers."""

    preempted_ns: I64
    matched_events: int
    unmatched_events: int
    threads: dict[int, int]  # track index -> OS thread id

    @property
    def total_ns(self) -> int:
        """Preempted time summed over all events (nested events count in each)."""
        return int(self.preempted_ns.sum())


def read_sched(bundle: RunBundle) -> SchedRecord | None:
    """The bundle's scheduler record, or None when the capture did not record one."""
    path = bundle.root / SCHED_FILE
    if not path.is_file() and not path.is_symlink():
        return None
    data = bundle.read_member(SCHED_FILE, what="scheduler record")  # no symlink out, no device
    try:
        record = msgspec.json.decode(data, type=SchedRecord, strict=True)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not a scheduler record: {exc}") from exc
    for thread in record.threads:
        for name in ("oncpu", "runnable"):
            flat = getattr(thread, name)
            if len(flat) % 2 or any(later < earlier for earlier, later in pairwise(flat)):
                raise BundleError(
                    f"{path}: thread {thread.tid}'s {name} intervals are not sorted "
                    "[start, end] pairs"
                )
        blocked = thread.blocked
        if len(blocked) % 3 or any(blocked[i + 1] < blocked[i] for i in range(0, len(blocked), 3)):
            raise BundleError(
                f"{path}: thread {thread.tid}'s blocked sleeps are not [start, end, tid]"
            )
    return record


def _pairs(flat: list[int]) -> tuple[I64, I64]:
    values = np.asarray(flat, dtype=np.int64)  # even length: `read_sched` checked it
    return values[0::2], values[1::2]


def inside(starts: I64, ends: I64, points: I64, slack: int = SLACK_NS) -> npt.NDArray[np.bool_]:
    """Whether each point lies in one of the sorted, disjoint intervals [start, end], widened by
    `slack` on both sides."""
    if not len(starts):
        return np.zeros(len(points), dtype=bool)
    index = np.searchsorted(starts, points + slack, side="right") - 1
    ok = index >= 0
    safe = np.maximum(index, 0)
    return ok & (points <= ends[safe] + slack)


def overlap_ns(starts: I64, ends: I64, begin: I64, end: I64) -> I64:
    """For each [begin, end), its overlap with the union of sorted, disjoint [start, end)
    intervals, through the running total of interval time before each instant."""
    if not len(starts) or not len(begin):
        return np.zeros(len(begin), dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(ends - starts)))

    def covered(at: I64) -> I64:
        index = np.searchsorted(starts, at, side="right")  # intervals starting at or before
        last = np.maximum(index - 1, 0)
        partial = np.clip(at - starts[last], 0, ends[last] - starts[last])
        return np.asarray(before[np.maximum(index - 1, 0)] + np.where(index > 0, partial, 0),
                          dtype=np.int64)  # fmt: skip

    return covered(end) - covered(begin)


def union(starts: I64, ends: I64) -> tuple[I64, I64]:
    """The union of [start, end) intervals as sorted, disjoint intervals (touching ones
    merged)."""
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    first = np.concatenate(([True], starts[1:] > reach[:-1]))
    heads = np.flatnonzero(first)
    return starts[heads], np.maximum.reduceat(ends, heads)


def effective_waits(thread: ThreadSched, threads: dict[int, ThreadSched]) -> tuple[I64, I64]:
    """When `thread` waited for a CPU: its own runnable waits, and while it slept until another
    thread woke it, that thread's runnable waits (it was waiting for that thread's work: a
    worker preempted while the caller waits is the caller's preempted time). One level: a
    waker's own sleeps are not followed."""
    starts, ends = _pairs(thread.runnable)
    parts_s, parts_e = [starts], [ends]
    blocked = np.asarray(thread.blocked, dtype=np.int64).reshape(-1, 3)
    for waker in np.unique(blocked[:, 2]).tolist():
        if waker not in threads:
            continue
        ws, we = _pairs(threads[waker].runnable)
        if not len(ws):
            continue
        mine = blocked[blocked[:, 2] == waker]
        for sleep_start, sleep_end in mine[:, :2].tolist():
            lo = int(np.searchsorted(we, sleep_start, side="right"))
            hi = int(np.searchsorted(ws, sleep_end, side="left"))
            if hi > lo:
                parts_s.append(np.maximum(ws[lo:hi], sleep_start))
                parts_e.append(np.minimum(we[lo:hi], sleep_end))
    return union(np.concatenate(parts_s), np.concatenate(parts_e))


def _stamps(trace: Trace, rows: I64) -> I64:
    if len(rows) > MAX_STAMPS // 2:
        rows = rows[np.linspace(0, len(rows) - 1, MAX_STAMPS // 2).astype(np.int64)]
    return np.concatenate((trace.ts_ns[rows], trace.ts_ns[rows] + trace.dur_ns[rows]))


def rows_by_track(trace: Trace, rows: I64) -> dict[int, I64]:
    """`rows` grouped by their track (one sort, not a pass over the trace per track)."""
    if not len(rows):
        return {}
    rows = rows[np.argsort(trace.track[rows], kind="stable")]
    tracks = trace.track[rows]
    heads = np.flatnonzero(np.concatenate(([True], tracks[1:] != tracks[:-1])))
    return {
        int(tracks[head]): part
        for head, part in zip(heads.tolist(), np.split(rows, heads[1:]), strict=True)
    }


def match_threads(trace: Trace, record: SchedRecord) -> dict[int, ThreadSched]:
    """Track index -> the thread that ran it, for the tracks one thread clearly ran."""
    oncpu = {thread.tid: _pairs(thread.oncpu) for thread in record.threads}
    by_tid = {thread.tid: thread for thread in record.threads}
    host = ~np.isin(trace.kind, [int(kind) for kind in (EventKind.INSTANT, EventKind.COUNTER)])
    timed = host & (trace.dur_ns > 0)
    device = np.isin(trace.kind, [int(kind) for kind in EventKind if kind.on_device])
    matched: dict[int, ThreadSched] = {}
    for track, rows in rows_by_track(trace, np.flatnonzero(timed & ~device)).items():
        stamps = _stamps(trace, rows)
        held = sorted(
            ((int(inside(*oncpu[tid], stamps).sum()), tid) for tid in oncpu), reverse=True
        )
        if not held or 100 * held[0][0] < MATCH_FLOOR_PCT * len(stamps):
            continue
        if len(held) > 1 and 100 * (held[0][0] - held[1][0]) < MATCH_MARGIN_PCT * len(stamps):
            continue
        matched[track] = by_tid[held[0][1]]
    return matched


def preemption(trace: Trace, record: SchedRecord) -> Preemption | None:
    """Each event's preempted ns; None when the record cannot be trusted (events dropped after
    the trace began, a clock offset that moved, no track matched)."""
    if record.offset_drift_ns > MAX_DRIFT_NS or not len(trace.ts_ns):
        return None
    if record.lost_events and not 0 < record.complete_from_ns <= int(trace.ts_ns.min()):
        return None  # events were dropped from inside the trace's span, or nobody knows where
    threads = match_threads(trace, record)
    if not threads:
        return None
    preempted = np.zeros(len(trace.ts_ns), dtype=np.int64)
    matched = 0
    by_tid = {thread.tid: thread for thread in record.threads}
    grouped = rows_by_track(trace, np.arange(len(trace.ts_ns), dtype=np.int64))
    for track, thread in threads.items():
        rows = grouped[track]
        starts, ends = effective_waits(thread, by_tid)
        begin = trace.ts_ns[rows]
        preempted[rows] = overlap_ns(starts, ends, begin, begin + trace.dur_ns[rows])
        matched += len(rows)
    return Preemption(
        preempted,
        matched,
        len(trace.ts_ns) - matched,
        {track: thread.tid for track, thread in threads.items()},
    )


def bundle_preemption(bundle: RunBundle, trace: Trace) -> Preemption | None:
    """The preempted time of the bundle's trace, when its capture recorded the scheduler."""
    record = read_sched(bundle)
    return None if record is None else preemption(trace, record)
