"""Coverage records as terminal tables (rich renderables)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from irprof.coverage import Coverage


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms"


def coverage_report(coverage: Coverage) -> Group:
    """Rich renderables of a coverage record: figures, largest unmatched events and ops."""
    figures = Table(title=f"coverage of level '{coverage.level}'", show_header=False)
    figures.add_column("measure")
    figures.add_column("value", justify="right")
    figures.add_row("profiled op time", _ms(coverage.profiled_ns))
    figures.add_row("attributed to ops", _ms(coverage.attributed_ns))
    figures.add_row("time coverage", f"{coverage.time_coverage:.1%}")
    figures.add_row("ops (total)", str(coverage.ops_total))
    figures.add_row("ops (non-trivial, executed)", str(coverage.ops_nontrivial))
    if coverage.ops_not_executed:
        figures.add_row("ops removed by the compiler", str(coverage.ops_not_executed))
    figures.add_row("ops annotated", str(coverage.ops_annotated))
    figures.add_row(
        "non-trivial coverage",
        f"{coverage.nontrivial_coverage:.1%} "
        f"({coverage.ops_nontrivial_annotated}/{coverage.ops_nontrivial})",
    )
    parts: list[Table] = [figures]
    if coverage.unmatched_events:
        events = Table(title="largest unmatched events")
        for column in ("event", "time", "count", "reason"):
            events.add_column(column, justify="right" if column in ("time", "count") else "left")
        for event in coverage.unmatched_events[:10]:
            events.add_row(event.name, _ms(event.total_ns), str(event.count), event.reason)
        parts.append(events)
    if coverage.unmatched_ops:
        ops = Table(title="unmatched non-trivial ops")
        for column in ("op", "location", "reason"):
            ops.add_column(column)
        for op in coverage.unmatched_ops[:10]:
            ops.add_row(op.op_name, op.location, op.reason)
        parts.append(ops)
    return Group(*parts, *(f"[yellow]warning:[/] {w}" for w in coverage.warnings))
