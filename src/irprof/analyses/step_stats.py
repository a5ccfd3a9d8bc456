"""Per-step statistics of op time: the robust estimate rankings use, the spread of a row's
per-step times, the op-steps far above their op's typical time, and whether the run was too
noisy to rank ops. The samples are `run_diff_samples`' (one value per op per step).

The rules and their constants are stated in docs/views.md, "Per-step statistics".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from irprof.analyses.preemption import Preemption, bundle_preemption
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.run_diff_samples import STEP_METHODS, run_samples
from irprof.analyses.trace_export import measured_events, with_trace_kernels
from irprof.bundle import RunBundle
from irprof.errors import IrprofError, UsageError
from irprof.trace.model import Trace

Stat = Literal["median", "sum", "min", "mean"]
STATS: tuple[Stat, ...] = ("median", "sum", "min", "mean")
STAT_LABELS: dict[str, str] = {
    "median": "median step x steps",
    "sum": "sum over steps",
    "min": "fastest step x steps",
    "mean": "mean step x steps",
}


TimeBasis = Literal["oncpu", "wall"]
TIME_BASES: tuple[TimeBasis, ...] = ("oncpu", "wall")


def parse_time_basis(text: str) -> TimeBasis:
    """`text` as a time basis (a UsageError naming `--time` otherwise)."""
    for basis in TIME_BASES:
        if text == basis:
            return basis
    raise UsageError(f"--time {text!r}: expected one of {'|'.join(TIME_BASES)}")


def parse_stat(text: str, *, option: str = "--stat") -> Stat:
    """`text` as a statistic name (a UsageError naming `option` otherwise)."""
    for stat in STATS:
        if text == stat:
            return stat
    raise UsageError(f"{option} {text!r}: expected one of {'|'.join(STATS)}")


OUTLIER_MADS = 5.0  # an op-step above its op's median by more than this many MADs...
OUTLIER_FLOOR_NS = 100_000  # ...and by more than this (microsecond jitter is not a stall)
UNSTABLE_RATIO = 3.0  # a row whose slowest step exceeds its median step this many times...
NOISY_CV = 0.20  # steps whose totals vary more than this (robust CV) make a noisy run
MAD_TO_SIGMA = 1.4826  # MAD x this estimates the standard deviation of normal noise
TARGET_ERROR = 0.10  # steps needed: the median within +-10% ...
Z_95 = 1.96  # ... at 95% confidence


@dataclass(frozen=True)
class StepSamples:
    """Per-step times of every op that has them (by op index), all over the same steps."""

    values: Mapping[int, tuple[int, ...]]
    steps: int  # steps the samples cover (0: no per-step samples)
    method: str  # "step-markers", "occurrence" or "none"
    # Per op: its typical step, event by event (`run_diff_samples.Samples.typical_ns`).
    typical: Mapping[int, float] = field(default_factory=dict)
    # Set when the samples are of on-CPU time (the capture recorded the scheduler).
    preemption: Preemption | None = None

    @property
    def oncpu_note(self) -> str:
        """What the samples subtracted, for table headers ("" for wall-time samples)."""
        found = self.preemption
        if found is None:
            return ""
        events = found.matched_events + found.unmatched_events
        return (
            "on-CPU time: each event's waits for a CPU (preempted, or woken and not yet "
            f"running) subtracted; {found.matched_events:,} of {events:,} events on threads "
            "the scheduler record matched"
        )


NO_STEP_SAMPLES = StepSamples({}, 0, "none")


def load_step_samples(
    trace: Trace, ops: Sequence[ProfiledOp], steps: int, preemption: Preemption | None = None
) -> StepSamples:
    """The per-step samples of `ops` from the trace's step markers (or, without markers,
    consecutive kernel runs when their count is a multiple of `steps`); ops with only a
    total or single events are left out. With `preemption`, of on-CPU time."""
    # An inclusive call repeats its callee's time: rankings and step totals leave it out.
    preempted = None if preemption is None else preemption.preempted_ns
    found, _ = run_samples(trace, [op for op in ops if not op.inclusive], steps, preempted)
    kept = {index: item for index, item in found.items() if item.method in STEP_METHODS}
    if not kept:
        return NO_STEP_SAMPLES
    # Every op of one run is split by the same windows: one length, one method.
    first = next(iter(kept.values()))
    values = {
        index: item.values
        for index, item in kept.items()
        if len(item.values) == len(first.values) and len(item.values) >= 2
    }
    if not values:
        return NO_STEP_SAMPLES
    typical = {
        index: typical_ns for index in values if (typical_ns := kept[index].typical_ns) is not None
    }
    return StepSamples(values, len(first.values), first.method, typical, preemption)


def bundle_step_samples(
    bundle: RunBundle, ops: Sequence[ProfiledOp], time: TimeBasis = "oncpu"
) -> StepSamples:
    """The per-step samples of `ops` from the bundle's trace and step count, of on-CPU time
    when the capture recorded the scheduler (and `time` is "oncpu"); none when the bundle has
    no readable trace (rankings then fall back to the sum, and say so)."""
    try:
        trace = bundle.trace()
    except IrprofError:
        return NO_STEP_SAMPLES
    found = bundle_preemption(bundle, trace) if time == "oncpu" else None
    measured = with_trace_kernels(ops, measured_events(bundle))
    return load_step_samples(trace, measured, bundle.manifest().steps, found)


def stat_estimate(values: Sequence[int], stat: Stat, total_ns: int) -> int:
    """The time `stat` gives a row over its per-step `values`, scaled by the number of steps
    so it reads like the sum (`sum` is the row's attributed total)."""
    if stat == "sum" or not values:
        return total_ns
    steps = len(values)
    if stat == "median":
        return round(statistics.median(values) * steps)
    if stat == "min":
        return min(values) * steps
    return sum(values)  # the mean step times the steps


@dataclass(frozen=True)
class StepSpread:
    """The per-step times of one row: fastest, median and slowest step."""

    steps: int
    min_ns: int
    median_ns: int
    max_ns: int

    @property
    def unstable(self) -> bool:
        """The slowest step took over `UNSTABLE_RATIO` times the median step, and by more than
        `OUTLIER_FLOOR_NS`: the row's time depends on which steps were captured."""
        return (
            self.max_ns > UNSTABLE_RATIO * self.median_ns
            and self.max_ns - self.median_ns > OUTLIER_FLOOR_NS
        )


def step_spread(values: Sequence[int]) -> StepSpread:
    """Min, median and max of per-step times (rounded to whole ns)."""
    return StepSpread(len(values), min(values), round(statistics.median(values)), max(values))


@dataclass(frozen=True)
class Outlier:
    """One step of one row far above the row's typical step time."""

    key: str  # the row's key (as `top` names it)
    op_index: int  # the (hottest) op of the row
    step: int  # 0-based, in time order
    value_ns: int  # the row's time in that step
    median_ns: int  # the row's median step time

    @property
    def excess_ns(self) -> int:
        """Time above the median step."""
        return self.value_ns - self.median_ns

    @property
    def ratio(self) -> float:
        """How many times the median step the outlier took (inf for a median of 0)."""
        return self.value_ns / self.median_ns if self.median_ns else math.inf


def outlier_threshold(values: Sequence[int]) -> float:
    """The step time above which a step is an outlier: the median plus the larger of
    `OUTLIER_MADS` median absolute deviations and `OUTLIER_FLOOR_NS`."""
    median = statistics.median(values)
    mad = statistics.median(abs(value - median) for value in values)
    return median + max(OUTLIER_MADS * mad, OUTLIER_FLOOR_NS)


def step_outliers(values: Sequence[int], *, key: str, op_index: int) -> list[Outlier]:
    """The steps of one row strictly above `outlier_threshold` (none with under 3 steps: two
    values cannot say which one is typical)."""
    if len(values) < 3:
        return []
    threshold = outlier_threshold(values)
    median = round(statistics.median(values))
    return [
        Outlier(key, op_index, step, value, median)
        for step, value in enumerate(values)
        if value > threshold
    ]


@dataclass(frozen=True)
class NoiseVerdict:
    """How noisy the captured steps were, and whether that undermines a ranking of ops."""

    steps: int
    cv: float | None  # robust CV of the steps' attributed times (None: under 2 steps)
    load_1m: float | None  # the highest 1-minute load average read around the steps
    cpus: int | None
    steal_share: float | None  # steal ticks / all CPU ticks during capture (Linux)
    warnings: tuple[str, ...]
    steps_needed: int | None  # for a stable median at this CV (None when not noisy)


def steps_needed(cv: float) -> int:
    """Steps for the median to land within `TARGET_ERROR` of its value at 95% confidence:
    n = pi/2 * (Z_95 * cv / TARGET_ERROR)^2 (the median's variance is pi/2 times the
    mean's for normal noise), at least 3."""
    return max(3, math.ceil(math.pi / 2 * (Z_95 * cv / TARGET_ERROR) ** 2))


def robust_cv(values: Sequence[int]) -> float | None:
    """1.4826 x MAD / median: the coefficient of variation of normal noise, which one stalled
    step (an outlier, listed as such) cannot inflate. None under 2 values or a zero median."""
    if len(values) < 2:
        return None
    median = statistics.median(values)
    if median <= 0:
        return None
    return MAD_TO_SIGMA * statistics.median(abs(value - median) for value in values) / median


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def noise_verdict(step_totals: Sequence[int], noise: Mapping[str, Any] | None) -> NoiseVerdict:
    """The verdict on a run from its steps' attributed times and the capture's `noise` record
    (`options.noise` of the manifest; None for bundles written before it existed)."""
    cv = robust_cv(step_totals)
    noise = noise if isinstance(noise, Mapping) else {}
    loads = [
        load
        for load in (_number(noise.get("load_1m_before")), _number(noise.get("load_1m_after")))
        if load is not None
    ]
    load = max(loads) if loads else None
    cpus_value = _number(noise.get("cpus"))
    cpus = int(cpus_value) if cpus_value else None
    steal = _number(noise.get("steal_share"))
    warnings: list[str] = []
    if load is not None and cpus is not None and load > cpus:
        warnings.append(
            f"load average {load:.2f} exceeded the {cpus} CPUs during capture: "
            "other processes competed for the cores"
        )
    needed = None
    if cv is not None and cv > NOISY_CV:
        needed = steps_needed(cv)
        warnings.append(
            f"step times vary by {cv:.0%} (robust coefficient of variation > {NOISY_CV:.0%}): "
            f"about {needed} steps are needed for a stable median "
            f"(captured {len(step_totals)}; `--steps {needed}`)"
        )
    return NoiseVerdict(len(step_totals), cv, load, cpus, steal, tuple(warnings), needed)


def step_totals(samples: StepSamples) -> list[int]:
    """The attributed time of each step: the sum over ops of their per-step times."""
    totals = [0] * samples.steps
    for values in samples.values.values():
        for step, value in enumerate(values):
            totals[step] += value
    return totals
