"""What profiling costs a step: the `options.overhead` record every capture writes.

Design notes: docs/frameworks.md, "Module notes", `capture/step_overhead.py`.
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
