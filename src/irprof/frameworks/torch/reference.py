"""Timed events get their call stacks from the untimed reference step, joined by execution order.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/reference.py`.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Sequence
from difflib import SequenceMatcher

from irprof.frameworks.torch.events import OpEvent
from irprof.trace.model import Trace
from irprof.trace.steps import step_windows

OUTSIDE_STEPS = "outside every ProfilerStep marker of the timed trace"


def split_by_step(
    events: Sequence[OpEvent], windows: Sequence[tuple[int, int]]
) -> tuple[list[list[OpEvent]], list[OpEvent]]:
    """Events of each step window (in time order) and the events outside every window."""
    starts = [start for start, _ in windows]
    steps: list[list[OpEvent]] = [[] for _ in windows]
    outside = []
    for event in events:
        index = bisect_right(starts, event.ts_ns) - 1
        if index >= 0 and event.ts_ns < windows[index][1]:
            steps[index].append(event)
        else:
            outside.append(event)
    return steps, outside


def _borrow(event: OpEvent, reference: OpEvent) -> OpEvent:
    return dataclasses.replace(
        event, chain=reference.chain, frames=reference.frames, phase=reference.phase
    )


@dataclasses.dataclass(frozen=True)
class BorrowedStacks:
    """Timed events with the reference step's stacks, and the events that found none."""

    events: list[OpEvent]  # every timed event, in time order
    unaligned: dict[int, str]  # event row -> why no reference event was found


def align_step(
    step: Sequence[OpEvent], reference: Sequence[OpEvent]
) -> tuple[list[OpEvent], list[OpEvent]]:
    """One step joined to the reference: (events that borrowed stacks, events left alone)."""
    names = [event.name for event in step]
    reference_names = [event.name for event in reference]
    if names == reference_names:
        return [_borrow(e, r) for e, r in zip(step, reference, strict=True)], []
    matcher = SequenceMatcher(None, reference_names, names, autojunk=False)
    joined: dict[int, OpEvent] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            joined[block.b + offset] = _borrow(step[block.b + offset], reference[block.a + offset])
    alone = [event for index, event in enumerate(step) if index not in joined]
    return [joined[index] for index in sorted(joined)], alone


def borrow_call_stacks(
    timed: Trace,
    timed_events: Sequence[OpEvent],
    reference: Trace,
    reference_events: Sequence[OpEvent],
) -> BorrowedStacks:
    """Every timed event with the stack of its reference event (see module docstring)."""
    windows = step_windows(reference, nested=True)
    reference_steps, _ = split_by_step(reference_events, windows)
    # The capture profiles one reference step; an older or edited file may have more or none.
    pattern = reference_steps[0] if reference_steps else list(reference_events)
    steps, outside = split_by_step(timed_events, step_windows(timed, nested=True))
    events: list[OpEvent] = []
    unaligned = {event.row: OUTSIDE_STEPS for event in outside}
    for number, step in enumerate(steps):
        joined, alone = align_step(step, pattern)
        events += joined
        for event in alone:
            unaligned[event.row] = (
                f"timed step {number} ran {event.name} where the call-stack reference step ran "
                "no such call (the steps ran different ops), so no call stack identifies it"
            )
        events += alone
    events += outside
    events.sort(key=lambda event: (event.ts_ns, event.row))
    return BorrowedStacks(events, unaligned)
