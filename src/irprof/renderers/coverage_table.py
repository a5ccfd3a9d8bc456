"""Coverage records as terminal tables (rich renderables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.table import Table

from irprof.coverage import Coverage
from irprof.renderers.units import format_ns

OVERHEAD_FIELDS = ("no_profiler_ns", "profiler_ns", "irprof_ns")
PHASES = ("forward", "backward", "optimizer")


def _exact(ns: int) -> str:
    """A conserved figure: scaled for reading, then to the nanosecond."""
    return f"{format_ns(ns)} ({ns:,} ns)"


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def capture_overhead(options: Mapping[str, Any]) -> dict[str, int] | None:
    """The capture's measured step times (`options.overhead` of the manifest), or None when
    the capture did not record them (or the record is not three positive integers)."""
    record = options.get("overhead")
    if not isinstance(record, dict) or not all(
        _positive_int(record.get(f)) for f in OVERHEAD_FIELDS
    ):
        return None
    return {
        field: int(record[field])
        for field in (*OVERHEAD_FIELDS, "steps")
        if _positive_int(record.get(field))
    }


def capture_overhead_text(options: Mapping[str, Any], *, brief: bool = False) -> str:
    """Median step time without profiler, under the framework's profiler and in irprof's
    timed steps, with ratios; empty when the bundle has no such record."""
    record = capture_overhead(options)
    if record is None:
        return ""
    bare, plain, timed = (record[field] for field in OVERHEAD_FIELDS)
    if brief:
        return f"timed steps {timed / plain:.2f}x the profiler alone"
    steps = f" of {record['steps']} timed" if "steps" in record else ""
    return (
        f"capture overhead (median step time{steps}): {format_ns(bare)} without profiler, "
        f"{format_ns(plain)} under the framework's profiler at its defaults, {format_ns(timed)} "
        f"in irprof's timed steps ({timed / plain:.2f}x the profiler alone, "
        f"{timed / bare:.2f}x no profiler)"
    )


def _phase_table(training: Any) -> Table | None:
    """A training step's time by phase, when the correlator reported it."""
    if not isinstance(training, dict):
        return None
    profiled, attributed = training.get("phases_profiled_ns"), training.get("phases_ns", {})
    if not isinstance(profiled, dict) or not isinstance(attributed, dict):
        return None
    table = Table(title="training step by phase")
    for column in ("phase", "profiled", "attributed to ops"):
        table.add_column(column, justify="left" if column == "phase" else "right")
    buckets = training.get("buckets", [])
    for phase in PHASES:
        spent, given = profiled.get(phase), attributed.get(phase)
        if not isinstance(spent, int) or isinstance(spent, bool) or spent <= 0:
            continue
        if isinstance(buckets, list) and phase in buckets:
            shown = "own bucket, no IR op"
        elif isinstance(given, int) and not isinstance(given, bool):
            shown = format_ns(given)
        else:
            shown = "-"
        table.add_row(phase, format_ns(spent), shown)
    return table


def coverage_report(coverage: Coverage) -> Group:
    """Rich renderables of a coverage record: figures, largest unmatched events and ops."""
    figures = Table(title=f"coverage of level '{coverage.level}'", show_header=False)
    figures.add_column("measure")
    figures.add_column("value", justify="right")
    figures.add_row("profiled op time", _exact(coverage.profiled_ns))
    figures.add_row("attributed to ops", _exact(coverage.attributed_ns))
    figures.add_row("time coverage", f"{coverage.time_coverage:.1%}")
    figures.add_row("ops (total)", str(coverage.ops_total))
    figures.add_row("ops (non-trivial, executed)", str(coverage.ops_nontrivial))
    if coverage.ops_not_executed:
        figures.add_row("ops with no work of their own", str(coverage.ops_not_executed))
    figures.add_row("ops annotated", str(coverage.ops_annotated))
    figures.add_row(
        "non-trivial coverage",
        f"{coverage.nontrivial_coverage:.1%} "
        f"({coverage.ops_nontrivial_annotated}/{coverage.ops_nontrivial})",
    )
    if coverage.ops_untimed:
        figures.add_row(
            "ran, no time of their own",
            f"{coverage.ops_untimed} ({coverage.nontrivial_seen_coverage:.1%} seen running)",
        )
        untimed_ns = coverage.extra.get("untimed_reference_ns")
        if isinstance(untimed_ns, int) and untimed_ns > 0:
            figures.add_row(
                "their time in the untimed steps", f"{format_ns(untimed_ns)} (not counted)"
            )
    parts: list[Table] = [figures]
    phases = _phase_table(coverage.extra.get("training"))
    if phases is not None:
        parts.append(phases)
    if coverage.unmatched_events:
        events = Table(title="largest unmatched events")
        for column in ("event", "time", "count", "reason"):
            events.add_column(column, justify="right" if column in ("time", "count") else "left")
        for event in coverage.unmatched_events[:10]:
            events.add_row(event.name, format_ns(event.total_ns), str(event.count), event.reason)
        parts.append(events)
    if coverage.unmatched_ops:
        # Every non-trivial op without a profile is counted: those that ran untimed and those
        # the compiler removed, not only those no event reached.
        without = coverage.ops_nontrivial - coverage.ops_nontrivial_annotated
        without += coverage.ops_not_executed
        shown = min(len(coverage.unmatched_ops), 10)
        count = f"{shown} of {without}" if without > shown else f"{shown}"
        ops = Table(title=f"non-trivial ops without a profile ({count})")
        for column in ("op", "location", "reason"):
            ops.add_column(column)
        for op in coverage.unmatched_ops[:10]:
            ops.add_row(op.op_name, op.location, op.reason)
        parts.append(ops)
    return Group(*parts, *(f"[yellow]warning:[/] {w}" for w in coverage.warnings))
