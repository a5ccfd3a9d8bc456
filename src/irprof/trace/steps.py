"""Step windows: the (start, end) spans of a trace's step markers (`EventKind.STEP`).

Frameworks nest markers (a `ProfilerStep#n` inside a user's step annotation, a marker within a
marker), so every caller says which it wants: `nested=False` keeps only the outermost markers
(one window per step: per-step samples, a critical path per step), `nested=True` keeps every
marker (events are placed in the innermost window that starts before them).
"""

from __future__ import annotations

from collections.abc import Iterable

from irprof.trace.model import EventKind, Trace


def step_windows(trace: Trace, *, nested: bool) -> list[tuple[int, int]]:
    """`(start, end)` in ns of the trace's step markers in time order; with `nested=False` only
    the top-level ones (`top_level_windows`)."""
    rows = trace.rows_of_kind(EventKind.STEP)
    spans = list(zip(trace.ts_ns[rows].tolist(), trace.end_ns[rows].tolist(), strict=True))
    return sorted(spans) if nested else top_level_windows(spans)


def top_level_windows(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans no earlier span overlaps, in time order: a span that starts before the last
    kept one ends is inside it (a marker within a marker) and is dropped. Of spans starting
    together the longest, the outer marker, is kept."""
    windows: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if windows and start < windows[-1][1]:
            continue
        windows.append((start, end))
    return windows
