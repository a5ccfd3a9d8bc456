"""What profiling costs a step: the `options.overhead` record every capture writes.

Three conditions are timed in the capture's own process, each as a block of the same number of
steps: no profiler, the framework's profiler at its defaults, and irprof's timed-step settings
(its trace dropped). They run in `ROUNDS` rounds, the order rotated each round (each condition
first, second and last in turn), so neither a drift of the step time over the measurement nor
the position after a session's stop favours one, and each block starts from a collected heap.
Each figure is the median over all of its condition's steps; irprof's includes the steps of the
timed window itself (the same settings, its trace kept), whose own median is recorded apart as
`timed_window_ns`.

Measured on the 2-core VM before the rotation: one block per condition (baselines before and
after the timed window) gave irprof / profiler ratios from 0.59x to 1.24x for settings that
differ by a step marker, i.e. the position of a block, not irprof, decided the ratio.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROUNDS = 5
StepTimes = Callable[[], list[int]]  # runs one block of steps, returns their wall times (ns)


@dataclass(frozen=True)
class Conditions:
    """One block of steps under each timed condition."""

    bare: StepTimes  # no profiler
    profiler: StepTimes  # the framework's profiler at its defaults, trace dropped
    irprof: StepTimes  # irprof's timed-step settings, trace dropped


def measure_overhead(
    conditions: Conditions, timed_window: StepTimes, steps: int, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Run the rotated rounds, then the timed window; the overhead record (ns medians)."""
    blocks: dict[str, list[int]] = {"bare": [], "profiler": [], "irprof": []}
    names = list(blocks)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()  # the garbage of the previous block (a session's events) is not timed
            blocks[name].extend(getattr(conditions, name)())
    gc.collect()
    window = timed_window()
    return {
        "steps": steps,
        "no_profiler_ns": int(statistics.median(blocks["bare"])),
        "profiler_ns": int(statistics.median(blocks["profiler"])),
        "irprof_ns": int(statistics.median(blocks["irprof"] + window)),
        "timed_window_ns": int(statistics.median(window)),
        "order": f"{rounds} rounds of no profiler, profiler, irprof's settings, the order "
        "rotated each round, then the timed window; each figure the median over its steps",
    }
