"""The step-time check every correlator's result gets: op time never exceeds the step it ran in.

Per measured step (a step marker's window), the time a correlator counted for the events inside
it, plus any time it took from outside the timed steps spread over them, must fit in the step's
wall time. Events of parallel threads legitimately add up to more than the wall time: that
overlap (the union of each thread's busy time, summed over threads, minus the union over all
threads) is allowed and reported. What remains over the step is counted twice or borrowed, a
correlator bug or an untimed source, and `finish_level` prints it as a loud warning.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TOLERANCE = 0.01  # of the step time: integer splits and clock rounding never reach it


@dataclass(frozen=True)
class CountedSpan:
    """One event a correlator counted: its recorded span on its thread and the ns it counted."""

    ts_ns: int
    end_ns: int
    track: int
    counted_ns: int


@dataclass(frozen=True)
class StepTime:
    """One step: measured wall time, counted op time, overlap of parallel threads."""

    step_ns: int
    counted_ns: int
    parallel_ns: int

    @property
    def excess_ns(self) -> int:
        """Counted time beyond the step and the parallel threads' overlap (0 when it fits)."""
        return max(self.counted_ns - self.step_ns - self.parallel_ns, 0)


@dataclass(frozen=True)
class StepCheck:
    """The check over every measured step."""

    steps: tuple[StepTime, ...]
    untimed_ns: int = 0  # time taken from outside the timed steps, spread over them

    @property
    def over(self) -> tuple[int, ...]:
        """Indexes of the steps whose counted time exceeds them beyond the tolerance."""
        return tuple(
            index
            for index, step in enumerate(self.steps)
            if step.excess_ns > TOLERANCE * max(step.step_ns, 1)
        )

    def warning(self) -> str | None:
        """The loud warning when a step is over-counted, else None."""
        over = self.over
        if not over:
            return None
        worst = max(over, key=lambda i: self.steps[i].excess_ns)
        step = self.steps[worst]
        borrowed = (
            f"; {self.untimed_ns / 1e6:.3f} ms of it was taken from outside the timed steps"
            if self.untimed_ns
            else ""
        )
        return (
            f"STEP TIME EXCEEDED in {len(over)} of {len(self.steps)} steps: step {worst} counts "
            f"{step.counted_ns / 1e6:.3f} ms of op time in a {step.step_ns / 1e6:.3f} ms step "
            f"(parallel threads overlap {step.parallel_ns / 1e6:.3f} ms){borrowed}; time is "
            "counted twice or borrowed, so per-op figures are too high"
        )

    def record(self) -> dict[str, Any]:
        """The check's figures for `Coverage.extra["step_check"]`."""
        return {
            "steps": len(self.steps),
            "step_ns": [s.step_ns for s in self.steps],
            "counted_ns": [s.counted_ns for s in self.steps],
            "parallel_overlap_ns": [s.parallel_ns for s in self.steps],
            "untimed_ns": self.untimed_ns,
            "over_steps": list(self.over),
        }


def union_ns(spans: list[tuple[int, int]]) -> int:
    """Time covered by at least one of the (begin, end) spans."""
    total, end = 0, None
    for begin, finish in sorted(spans):
        if end is None or begin > end:
            total += finish - begin
            end = finish
        elif finish > end:
            total += finish - end
            end = finish
    return total


def _parallel_ns(spans: Sequence[CountedSpan], begin: int, end: int) -> int:
    """Sum over threads of each thread's busy time in [begin, end], minus the busy time of all."""
    by_track: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for span in spans:
        clipped = (max(span.ts_ns, begin), min(span.end_ns, end))
        if clipped[1] > clipped[0]:
            by_track[span.track].append(clipped)
    every = [s for spans_ in by_track.values() for s in spans_]
    return sum(union_ns(s) for s in by_track.values()) - union_ns(every)


def check_step_times(
    windows: Sequence[tuple[int, int]], spans: Sequence[CountedSpan], untimed_ns: int = 0
) -> StepCheck | None:
    """Check each step window (begin, end) against the counted spans that start in it;
    `untimed_ns` (time not from these steps) is spread evenly over them. None without steps."""
    if not windows:
        return None
    share = untimed_ns // len(windows)
    steps = []
    for begin, end in windows:
        inside = [s for s in spans if begin <= s.ts_ns <= end]
        counted = sum(s.counted_ns for s in inside) + share
        steps.append(StepTime(end - begin, counted, _parallel_ns(inside, begin, end)))
    return StepCheck(tuple(steps), untimed_ns)
