"""XLA thunk events of one HLO module in a trace, with asynchronous ends resolved and nested
thunks' time taken out of their parents, so no nanosecond counts twice.

Shared by every XLA-compiled stack (it was part of `frameworks/jax/attribution.py`). Design notes:
docs/jax.md, "Module notes", `frameworks/jax/attribution.py`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from irprof.trace.model import Trace

END_PREFIX = "end: "


@dataclass(frozen=True)
class ThunkEvent:
    """One profiled thunk: trace row, exact event name, HLO instruction, start and duration."""

    row: int
    name: str
    hlo_op: str
    ts_ns: int
    dur_ns: int
    async_end_row: int | None = None


def thunk_events(trace: Trace, module_name: str) -> tuple[list[ThunkEvent], list[str]]:
    """Thunk events of `module_name` with async durations resolved; also other modules seen."""
    hlo_ops = trace.arg_column("hlo_op")
    modules = trace.arg_column("hlo_module")
    producers = trace.arg_column("_p")
    consumers = trace.arg_column("_c")
    ends_by_consumer: dict[Any, list[int]] = defaultdict(list)
    ends_by_track_name: dict[tuple[int, str], list[int]] = defaultdict(list)
    end_ids = [i for i, text in enumerate(trace.strings) if text.startswith(END_PREFIX)]
    for row in np.nonzero(np.isin(trace.name, end_ids))[0].tolist():
        if hlo_ops[row] is not None:
            continue
        if consumers[row] is not None:
            ends_by_consumer[consumers[row]].append(row)
        name = trace.name_of(row)[len(END_PREFIX) :]
        ends_by_track_name[(int(trace.track[row]), name)].append(row)
    events: list[ThunkEvent] = []
    others: set[str] = set()
    for row, hlo_op in enumerate(hlo_ops):
        if hlo_op is None:
            continue
        if modules[row] not in (None, module_name):
            others.add(str(modules[row]))
            continue
        start = int(trace.ts_ns[row])
        end = start + int(trace.dur_ns[row])
        end_row = _find_end(
            trace, row, str(hlo_op), producers[row], ends_by_consumer, ends_by_track_name
        )
        if end_row is not None:
            end = max(end, int(trace.ts_ns[end_row] + trace.dur_ns[end_row]))
        events.append(ThunkEvent(row, trace.name_of(row), str(hlo_op), start, end - start, end_row))
    return _exclusive(events, trace), sorted(others)


def _exclusive(events: list[ThunkEvent], trace: Trace) -> list[ThunkEvent]:
    """Events with the time of the thunks nested in them (a `while` or `conditional` thunk runs
    its body's thunks inside its own span, on the same thread) taken out, so no nanosecond is
    counted twice; the loop or branch op keeps its own overhead. Nesting is read from the
    recorded events' own spans: an asynchronous thunk's launch does not contain the thunks that
    run while it completes elsewhere."""
    spans = [(int(trace.ts_ns[e.row]), int(trace.end_ns[e.row])) for e in events]
    nested_ns = [0] * len(events)
    by_track: dict[int, list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        by_track[int(trace.track[event.row])].append(index)
    for indexes in by_track.values():
        indexes.sort(key=lambda i: (spans[i][0], -spans[i][1]))
        open_spans: list[int] = []
        for index in indexes:
            while open_spans and spans[open_spans[-1]][1] < spans[index][1]:
                open_spans.pop()
            if open_spans:
                nested_ns[open_spans[-1]] += spans[index][1] - spans[index][0]
            open_spans.append(index)
    return [
        replace(event, dur_ns=max(event.dur_ns - nested, 0)) if nested else event
        for event, nested in zip(events, nested_ns, strict=True)
    ]


def _find_end(
    trace: Trace,
    row: int,
    hlo_op: str,
    producer: Any,
    ends_by_consumer: dict[Any, list[int]],
    ends_by_track_name: dict[tuple[int, str], list[int]],
) -> int | None:
    """The first `end:` event at or after the thunk's start: linked by its consumer id (ids
    can repeat over a long trace), else the next one of that name on the thunk's track."""
    start = int(trace.ts_ns[row])
    linked = ends_by_consumer.get(producer, []) if producer is not None else []
    candidates = linked or ends_by_track_name.get((int(trace.track[row]), hlo_op), [])
    later = [r for r in candidates if int(trace.ts_ns[r]) >= start]
    return min(later, key=lambda r: int(trace.ts_ns[r])) if later else None
