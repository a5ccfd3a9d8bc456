"""Per-step samples of an op's time, derived from the trace, and bootstrap intervals on them.

Design notes: docs/views.md, "Module notes", `analyses/run_diff_samples.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from irprof.analyses.profiled_ops import ProfiledOp
from irprof.trace.model import EventKind, Trace
from irprof.trace.steps import step_windows

SampleMethod = Literal["step-markers", "occurrence", "event-bootstrap", "profile-only", "none"]
STEP_METHODS: tuple[SampleMethod, ...] = ("step-markers", "occurrence")
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Samples:
    """The time of one op (or a sum of ops) in one run: `values` summed over `divisor` steps."""

    method: SampleMethod
    values: tuple[int, ...]  # ns per step (step methods) or per event (event-bootstrap)
    divisor: int  # steps the values are spread over (len(values) for the step methods)
    # Step methods, when every step ran each of the op's kernels the same number of times: the
    # sum over the kernels' events, taken in step order, of each event's median over the steps.
    typical_ns: float | None = None

    @property
    def per_step_ns(self) -> float:
        """Mean time per step."""
        return sum(self.values) / self.divisor if self.divisor else 0.0

    @property
    def resamplable(self) -> bool:
        """Two or more samples from the trace: a bootstrap can say something about noise."""
        return self.method not in ("profile-only", "none") and len(self.values) >= 2


NO_SAMPLES = Samples("none", (), 1)


@dataclass(frozen=True)
class _KernelEvents:
    """Event rows by name (starts, wall durations and the durations samples are made of), for
    the names ops list as kernels."""

    ts: dict[str, I64]
    dur: dict[str, I64]
    sampled: dict[str, I64]  # wall time, or with `preempted` its on-CPU part


def _kernel_events(
    trace: Trace, names: Iterable[str], preempted: I64 | None = None
) -> _KernelEvents:
    wanted = set(names)
    ids = {index: text for index, text in enumerate(trace.strings) if text in wanted}
    work = (trace.kind != EventKind.INSTANT) & (trace.kind != EventKind.COUNTER)
    rows = np.nonzero(np.isin(trace.name, list(ids)) & work)[0]
    rows = rows[np.lexsort((trace.ts_ns[rows], trace.name[rows]))]
    ts: dict[str, I64] = {}
    dur: dict[str, I64] = {}
    sampled: dict[str, I64] = {}
    if len(rows):
        names_of = trace.name[rows]
        bounds = np.flatnonzero(np.diff(names_of)) + 1
        for chunk in np.split(rows, bounds):
            name = ids[int(trace.name[chunk[0]])]
            ts[name] = trace.ts_ns[chunk]
            dur[name] = trace.dur_ns[chunk]
            sampled[name] = dur[name] if preempted is None else dur[name] - preempted[chunk]
    return _KernelEvents(ts, dur, sampled)


def _own_rows(ts: I64, starts: tuple[int, ...]) -> I64:
    """Positions in one name's sorted starts `ts` of the events starting at `starts` (every
    event at such a start), or every position when `starts` is empty."""
    if not starts:
        return np.arange(len(ts))
    wanted = np.asarray(starts, dtype=np.int64)
    first = np.searchsorted(ts, wanted, side="left")
    last = np.searchsorted(ts, wanted, side="right")
    if not len(wanted) or np.all(last - first <= 1):
        return first[last > first]
    return np.concatenate([np.arange(a, b) for a, b in zip(first, last, strict=True)])


def _scaled(values: I64, ratio: float) -> tuple[int, ...]:
    return tuple(round(float(v) * ratio) for v in values.tolist())


def event_medians(step: I64, kernel: I64, dur: I64, steps: int) -> float | None:
    """A typical step of events: for each kernel, its i-th event of a step is matched with the
    i-th of every other step (a step runs the same program), and the medians of these matched
    durations are summed. One preempted iteration of a loop then moves one median, not the
    step's time. None when some kernel ran a different number of times in different steps
    (the matching would pair unrelated events). `step` (0-based, nondecreasing per kernel),
    `kernel` and `dur` describe the events inside the steps."""
    total = 0.0
    for index in np.unique(kernel).tolist():
        mine = kernel == index
        counts = np.bincount(step[mine], minlength=steps)
        if counts.min() != counts.max():
            return None
        matrix = dur[mine][np.argsort(step[mine], kind="stable")].reshape(steps, int(counts[0]))
        total += float(np.median(matrix, axis=0).sum())
    return total


def op_samples(
    op: ProfiledOp,
    events: _KernelEvents,
    windows: Sequence[tuple[int, int]],
    steps: int,
) -> Samples:
    """The per-step samples of one op (see the module docstring for the methods)."""
    if op.profile is None:
        return NO_SAMPLES
    kernels = [name for name in dict.fromkeys(op.profile.kernels) if name in events.ts]
    # The rows of each name that are the op's: all of them, or those starting where the
    # correlator said the op's events start (names that ran other ops too).
    picked = [_own_rows(events.ts[name], op.profile.event_ts) for name in kernels]
    measured = sum(
        int(events.dur[name][rows].sum()) for name, rows in zip(kernels, picked, strict=True)
    )
    if not kernels or measured <= 0:
        return Samples("profile-only", (op.profile.total_ns,), max(steps, 1))
    # The op's share of its events (1 for an op that ran its kernels alone).
    ratio = op.profile.total_ns / measured
    ts, dur, sampled = (
        np.concatenate([column[name][rows] for name, rows in zip(kernels, picked, strict=True)])
        for column in (events.ts, events.dur, events.sampled)
    )
    kernel = np.repeat(np.arange(len(kernels)), [len(rows) for rows in picked])
    if len(windows) >= 2:
        starts = np.asarray([start for start, _ in windows], dtype=np.int64)
        ends = np.asarray([end for _, end in windows], dtype=np.int64)
        step = np.searchsorted(starts, ts, side="right") - 1
        inside = (step >= 0) & (ts < ends[np.maximum(step, 0)])
        per_step = np.bincount(step[inside], weights=sampled[inside], minlength=len(windows))
        # A total no larger than the steps' events counted only them (TF's correlator leaves
        # out the untimed step its profiler session records before the markers): the share is
        # of the steps' events, or that step (stalled or not) would shrink every sample. A
        # larger total counted events outside the steps too: the share is of all events.
        in_steps = int(dur[inside].sum())
        if 0 < op.profile.total_ns <= in_steps:
            ratio = op.profile.total_ns / in_steps
        typical = event_medians(step[inside], kernel[inside], sampled[inside], len(windows))
        return Samples(
            "step-markers",
            _scaled(per_step.astype(np.int64), ratio),
            len(windows),
            None if typical is None else typical * ratio,
        )
    if steps >= 2 and all(len(rows) % steps == 0 for rows in picked):
        # Time order: consecutive runs of each kernel are the steps.
        step = np.concatenate([np.repeat(np.arange(steps), len(rows) // steps)
                               for rows in picked])  # fmt: skip
        per_step = np.bincount(step, weights=sampled, minlength=steps).astype(np.int64)
        typical = event_medians(step, kernel, sampled, steps)
        return Samples(
            "occurrence",
            _scaled(per_step, ratio),
            steps,
            None if typical is None else typical * ratio,
        )
    return Samples("event-bootstrap", _scaled(sampled, ratio), max(steps, 1))


def run_samples(
    trace: Trace, ops: Sequence[ProfiledOp], steps: int, preempted: I64 | None = None
) -> tuple[dict[int, Samples], int]:
    """Samples of every profiled op (by op index) and the number of step markers found. With
    `preempted` (ns per event, `analyses/preemption.py`), samples are of on-CPU time: each
    event's wall time less the time its thread waited for a CPU (an op's share of shared
    events is still taken from wall time)."""
    names = {kernel for op in ops if op.profile for kernel in op.profile.kernels}
    events = _kernel_events(trace, names, preempted)
    windows = step_windows(trace, nested=False)  # one window per step
    found = {op.index: op_samples(op, events, windows, steps) for op in ops if op.profile}
    return found, len(windows)


def combine(samples: Sequence[Samples]) -> tuple[Samples, ...]:
    """Samples of a set of ops: one elementwise sum when all are per-step samples of the same
    steps (steps co-vary, so summing first keeps that), else the list as it is."""
    present = [item for item in samples if item.method != "none"]
    if not present:
        return ()
    first = present[0]
    if all(
        item.method in STEP_METHODS and len(item.values) == len(first.values) for item in present
    ):
        summed = np.sum([np.asarray(item.values, dtype=np.int64) for item in present], axis=0)
        typicals = [item.typical_ns for item in present]
        typical = None if None in typicals else sum(t for t in typicals if t is not None)
        values = tuple(int(v) for v in summed.tolist())
        return (Samples(first.method, values, first.divisor, typical),)
    return tuple(present)


def method_label(samples: Iterable[Samples]) -> str:
    """The methods used, most frequent first (`step-markers`, `event-bootstrap/profile-only`)."""
    counts: dict[str, int] = {}
    for item in samples:
        if item.method != "none":
            counts[item.method] = counts.get(item.method, 0) + 1
    return "/".join(sorted(counts, key=lambda name: -counts[name])) or "none"


def _resampled_means(
    samples: Sequence[Samples], resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    total = np.zeros(resamples, dtype=np.float64)
    for item in samples:
        values = np.asarray(item.values, dtype=np.float64)
        if not item.resamplable:
            total += item.per_step_ns
            continue
        picks = rng.integers(0, len(values), size=(resamples, len(values)))
        total += values[picks].sum(axis=1) / item.divisor
    return total


def bootstrap_delta(
    a: Sequence[Samples],
    b: Sequence[Samples],
    *,
    resamples: int,
    confidence: float,
    seed: int,
) -> tuple[float, float] | None:
    """Percentile interval of (B - A) per-step time, or None when a side has fewer than two
    samples of some op (one value says nothing about noise)."""
    parts = [item for item in (*a, *b) if item.method != "none"]
    if not parts or not all(item.resamplable for item in parts):
        return None
    rng = np.random.default_rng(seed)
    delta = _resampled_means(b, resamples, rng) - _resampled_means(a, resamples, rng)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(delta, [tail, 100.0 - tail])
    return float(low), float(high)
