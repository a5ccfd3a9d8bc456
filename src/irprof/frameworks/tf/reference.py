"""The untimed reference steps of a TF capture: the kernels and shapes the timed steps leave out.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/reference.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irprof.bundle import RunBundle
from irprof.trace.model import EventKind, Trace


@dataclass(frozen=True)
class ReferenceSteps:
    """The reference trace's op rows, and the rows standing in for kernels the timed steps lack."""

    trace: Trace
    rows: np.ndarray  # every op event inside a reference step
    stand_ins: np.ndarray  # per timed step, the reference events of nodes it did not record


def step_rows(trace: Trace, marker: str) -> list[np.ndarray]:
    """Op-event rows of each step window (`marker` events), in step order."""
    marker_id = trace.string_id(marker)
    steps = trace.rows_of_kind(EventKind.STEP)
    if marker_id is not None:
        steps = steps[trace.name[steps] == marker_id]
    ops = trace.kind == int(EventKind.FRAMEWORK_OP)
    windows = sorted((int(trace.ts_ns[r]), int(trace.end_ns[r])) for r in steps.tolist())
    return [
        np.nonzero(ops & (trace.ts_ns >= begin) & (trace.end_ns <= end))[0]
        for begin, end in windows
    ]


def load_reference_steps(
    bundle: RunBundle, timed: Trace, timed_rows: np.ndarray, marker: str
) -> ReferenceSteps | None:
    """The bundle's reference steps, or None when the capture recorded none."""
    name = bundle.manifest().option_str("reference_trace", "")
    if not name:
        return None
    reference = bundle.read_trace_member(name, what="reference trace")
    per_step = [rows for rows in step_rows(reference, marker) if len(rows)]
    if not per_step:
        return None
    recorded = {timed.name_of(row) for row in timed_rows.tolist()}
    missing = [
        np.array([r for r in rows.tolist() if reference.name_of(r) not in recorded], dtype=np.int64)
        for rows in per_step
    ]
    # The reference step whose missing kernels took the median time: one step the machine
    # stalled in (a preempted `_Arg`) would otherwise be copied into every timed step.
    ranked = sorted(range(len(missing)), key=lambda i: int(reference.dur_ns[missing[i]].sum()))
    chosen = missing[ranked[(len(ranked) - 1) // 2]]
    steps = len(step_rows(timed, marker)) or 1
    return ReferenceSteps(reference, np.concatenate(per_step), np.tile(chosen, steps))
