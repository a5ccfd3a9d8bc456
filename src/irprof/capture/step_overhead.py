"""What profiling costs a step: the `options.overhead` record every capture writes.

Design notes: docs/frameworks.md, "Module notes", `capture/step_overhead.py`.
"""

from __future__ import annotations

import gc
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from irprof.errors import UsageError

ROUNDS = 5
ROUNDS_VARIABLE = "IRPROF_OVERHEAD_ROUNDS"  # another number of rounds (at least 1)
StepTimes = Callable[[], list[int]]  # runs one block of steps, returns their wall times (ns)


@dataclass(frozen=True)
class Conditions:
    """One block of steps under each timed condition."""

    bare: StepTimes  # no profiler
    profiler: StepTimes  # the framework's profiler at its defaults, trace dropped
    irprof: StepTimes  # irprof's timed-step settings, trace dropped


def overhead_rounds() -> int:
    """`IRPROF_OVERHEAD_ROUNDS` when set, else `ROUNDS`. Each round starts and stops the
    framework's profiler twice (~1.5 s a round for a small TF model), so a suite of many
    captures may want one. Anything but an integer of at least 1 is a UsageError (captures
    check it before starting their child)."""
    text = os.environ.get(ROUNDS_VARIABLE, "").strip()
    if not text:
        return ROUNDS
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"{ROUNDS_VARIABLE}={text!r}: expected an integer of at least 1")
    return int(text)


def measure_overhead(
    conditions: Conditions, timed_window: StepTimes, steps: int, rounds: int | None = None
) -> dict[str, Any]:
    """Run the rotated rounds (`overhead_rounds()` unless given), then the timed window; the
    overhead record (ns medians)."""
    rounds = overhead_rounds() if rounds is None else rounds
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
