"""Step windows of a trace: every marker, or only the outermost ones."""

from __future__ import annotations

from irprof.trace import EventKind, TraceBuilder
from irprof.trace.model import Trace
from irprof.trace.steps import step_windows, top_level_windows


def trace_of(*steps: tuple[int, int]) -> Trace:
    """Step markers (start, duration) on one track, plus an op that is no marker."""
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    builder.add(5, 1000, track, "not a step", EventKind.FRAMEWORK_OP)
    for index, (start, duration) in enumerate(steps):
        builder.add(start, duration, track, f"step {index}", EventKind.STEP)
    return builder.build()


def test_nested_markers_are_kept_or_dropped_as_asked() -> None:
    trace = trace_of((200, 100), (0, 100), (10, 20))
    assert step_windows(trace, nested=True) == [(0, 100), (10, 30), (200, 300)]
    assert step_windows(trace, nested=False) == [(0, 100), (200, 300)]


def test_of_markers_starting_together_the_outer_one_is_the_step() -> None:
    trace = trace_of((0, 40), (0, 100))
    assert step_windows(trace, nested=False) == [(0, 100)]
    assert step_windows(trace, nested=True) == [(0, 40), (0, 100)]


def test_a_trace_without_markers_has_no_windows() -> None:
    assert step_windows(trace_of(), nested=True) == []
    assert step_windows(trace_of(), nested=False) == []


def test_back_to_back_steps_are_both_top_level() -> None:
    assert top_level_windows([(100, 200), (0, 100)]) == [(0, 100), (100, 200)]
