"""The critical path of a step as a terminal table: each event, its work and its IR ops."""

from __future__ import annotations

from rich.table import Table

from irprof.analyses.critical_path import CriticalPath
from irprof.renderers.fit import FitColumn, fit_table
from irprof.renderers.hotspot_table import WIDE
from irprof.renderers.units import format_ns


def critical_path_title(path: CriticalPath) -> str:
    """One line: which step, how much work the path holds of the step's wall time."""
    which = f"step {path.step} of {path.steps}" if path.step >= 0 else "the whole trace"
    share = path.length_ns / path.span_ns if path.span_ns else 0.0
    return (
        f"critical path of {which}: {len(path.events)} events, {format_ns(path.length_ns)} "
        f"of work in {format_ns(path.span_ns)} wall ({share:.0%})"
    )


def critical_path_table(path: CriticalPath, limit: int = 40, width: int = WIDE) -> Table:
    """Rows in path order, one line each; events adding no work (pure links) are counted, not
    listed; the caption says how many CUDA sync dependencies the path follows, when looked for."""
    working = [event for event in path.events if event.self_ns > 0]
    heaviest = sorted(working, key=lambda event: -event.self_ns)[:limit]
    chosen = {event.node for event in heaviest}
    rows = [(rank, e) for rank, e in enumerate(path.events, start=1) if e.node in chosen]
    columns = [
        FitColumn("#", [str(rank) for rank, _ in rows], justify="right", style="dim"),
        FitColumn("event", [e.name for _, e in rows], shrink="middle", min_width=20),
        FitColumn("track", [e.track for _, e in rows], priority=3, shrink="head", style="dim"),
        FitColumn(
            "start",
            ["+" + format_ns(e.ts_ns - path.start_ns) for _, e in rows],
            priority=2,
            justify="right",
        ),
        FitColumn("duration", [format_ns(e.dur_ns) for _, e in rows], priority=1, justify="right"),
        FitColumn("work on path", [format_ns(e.self_ns) for _, e in rows], justify="right"),
        FitColumn(
            "IR ops",
            [", ".join(e.ops) or "-" for _, e in rows],
            priority=1,
            shrink="tail",
            min_width=12,
            style="cyan",
        ),
    ]
    left = len(path.events) - len(chosen)
    notes = [f"{left} more events on the path add less work (or only link)"] if left else []
    if path.syncs_followed:
        notes.append(path.sync_summary())
    caption = "\n".join(notes)
    return fit_table(columns, width, title=critical_path_title(path), caption=caption)
