"""The critical path of a step as a terminal table: each event, its work and its IR ops."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from irprof.analyses.critical_path import CriticalPath
from irprof.renderers.units import format_ns, shorten


def critical_path_title(path: CriticalPath) -> str:
    """One line: which step, how much work the path holds of the step's wall time."""
    which = f"step {path.step} of {path.steps}" if path.step >= 0 else "the whole trace"
    share = path.length_ns / path.span_ns if path.span_ns else 0.0
    return (
        f"critical path of {which}: {len(path.events)} events, {format_ns(path.length_ns)} "
        f"of work in {format_ns(path.span_ns)} wall ({share:.0%})"
    )


def critical_path_table(path: CriticalPath, limit: int = 40) -> Table:
    """Rows in path order; events adding no work (pure links) are counted, not listed."""
    table = Table(title=critical_path_title(path), title_justify="left", expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("event", overflow="fold")
    table.add_column("track", overflow="fold", style="dim")
    table.add_column("start", justify="right")
    table.add_column("duration", justify="right")
    table.add_column("work on path", justify="right")
    table.add_column("IR ops", overflow="fold", style="cyan")
    working = [event for event in path.events if event.self_ns > 0]
    heaviest = sorted(working, key=lambda event: -event.self_ns)[:limit]
    chosen = {event.node for event in heaviest}
    for rank, event in enumerate(path.events, start=1):
        if event.node not in chosen:
            continue
        table.add_row(
            Text(str(rank)),
            Text(shorten(event.name, 60)),
            Text(shorten(event.track, 40)),
            Text("+" + format_ns(event.ts_ns - path.start_ns)),
            Text(format_ns(event.dur_ns)),
            Text(format_ns(event.self_ns)),
            Text("\n".join(event.ops) or "-"),
        )
    left = len(path.events) - len(chosen)
    if left:
        table.caption = f"{left} more events on the path add less work (or only link)"
    return table
