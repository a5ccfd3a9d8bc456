"""Terminal tables (rich) of a trace summary and of a multi-rank comparison.

Names are cut to a table cell before rich sees them: folding a multi-megabyte name is quadratic
in rich, and nobody reads past a few lines of a kernel signature anyway.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text

from irprof.analyses.device_waits import SHORT_KERNEL_NS, StreamWaits
from irprof.analyses.ranks import RankTable
from irprof.analyses.trace_summary import DeviceTime, NameTotals, TraceSummary
from irprof.renderers.units import format_ns, format_share

NAME_HEAD, NAME_TAIL = 90, 30


def cell_name(name: str) -> Text:
    """A name as plain text (never markup), its middle elided when long."""
    if len(name) > NAME_HEAD + NAME_TAIL + 1:
        name = name[:NAME_HEAD] + "…" + name[-NAME_TAIL:]
    return Text(name)


def _share(part: int, whole: int) -> str:
    return format_share(part / whole if whole else None)


def name_table(title: str, rows: tuple[NameTotals, ...], span_ns: int) -> Table:
    """Names with count, total, self and mean time."""
    table = Table(title=title, title_justify="left")
    table.add_column("name", overflow="fold", max_width=60)
    table.add_column("kind")
    for column in ("count", "total", "self", "mean", "self % span"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            cell_name(row.name),
            row.kind,
            f"{row.count:,}",
            format_ns(row.total_ns),
            format_ns(row.self_ns),
            format_ns(row.mean_ns),
            _share(row.self_ns, span_ns),
        )
    return table


def device_table(title: str, rows: tuple[DeviceTime, ...]) -> Table:
    """Compute, communication, memory and idle time per device or stream."""
    table = Table(title=title, title_justify="left")
    table.add_column("device")
    if any(row.stream for row in rows):
        table.add_column("stream")
    for column in ("events", "window", "compute", "comm", "hidden", "memory", "idle", "idle %"):
        table.add_column(column, justify="right")
    for row in rows:
        hidden = row.comm_hidden_fraction
        stream = [cell_name(row.stream)] if row.stream else []
        table.add_row(
            cell_name(row.device),
            *stream,
            f"{row.events:,}",
            format_ns(row.window_ns),
            format_ns(row.compute_ns),
            format_ns(row.communication_ns),
            "-" if hidden is None else f"{hidden:.0%}",
            format_ns(row.memory_ns),
            format_ns(row.idle_ns),
            _share(row.idle_ns, row.window_ns),
        )
    return table


def exclusive_table(rows: tuple[DeviceTime, ...]) -> Table:
    """Each device's window split into parts that add up to it (compute first, then
    communication, then memory, then idle)."""
    table = Table(
        title="Device time, exclusive (compute > comm > memory > idle; parts sum to the window)",
        title_justify="left",
    )
    table.add_column("device")
    for column in ("window", "compute", "comm only", "memory only", "idle"):
        table.add_column(column, justify="right")
    for row in rows:
        parts = row.exclusive_ns()
        table.add_row(
            cell_name(row.device),
            format_ns(row.window_ns),
            *(
                f"{format_ns(parts[name])} ({_share(parts[name], row.window_ns)})"
                for name in ("compute", "communication", "memory", "idle")
            ),
        )
    return table


def waits_table(rows: tuple[StreamWaits, ...]) -> Table:
    """Each stream's idle time by what it waited for, with launch delays and short kernels."""
    table = Table(
        title="Idle time by cause (host wait: until the launch; kernel wait: launched, not run)",
        title_justify="left",
    )
    table.add_column("device")
    table.add_column("stream")
    for column in ("idle", "host wait", "kernel wait", "unexplained", "launch delay p50 / max"):
        table.add_column(column, justify="right")
    table.add_column(f"< {format_ns(SHORT_KERNEL_NS)}", justify="right")
    for row in rows:
        delay = (
            "-"
            if row.launch_delay_median_ns is None or row.launch_delay_max_ns is None
            else f"{format_ns(row.launch_delay_median_ns)} / {format_ns(row.launch_delay_max_ns)}"
        )
        table.add_row(
            cell_name(row.device),
            cell_name(row.stream),
            format_ns(row.idle_ns),
            format_ns(row.host_wait_ns),
            format_ns(row.kernel_wait_ns),
            format_ns(row.unexplained_ns),
            delay,
            f"{row.short_events:,} of {row.events:,}",
        )
    return table


def summary_tables(summary: TraceSummary) -> list[Table]:
    """Overview, device and stream time, top device work, top names by total and self time."""
    overview = Table(title=Text(f"{summary.source} ({summary.format})"), title_justify="left")
    for column in ("events", "tracks", "flows", "span"):
        overview.add_column(column, justify="right")
    overview.add_column("by kind")
    overview.add_row(
        f"{summary.events:,}",
        str(summary.tracks),
        f"{summary.flows:,}",
        format_ns(summary.span_ns),
        ", ".join(f"{kind} {count:,}" for kind, count in summary.events_by_kind.items()),
    )
    tables = [overview]
    if summary.devices:
        tables.append(device_table("Device time", summary.devices))
        tables.append(exclusive_table(summary.devices))
        tables.append(device_table("Stream time", summary.streams))
        tables.append(waits_table(summary.waits))
        tables.append(name_table("Top device work", summary.top_device, summary.span_ns))
    tables.append(name_table("Top names by total time", summary.top_by_total, summary.span_ns))
    tables.append(name_table("Top names by self time", summary.top_by_self, summary.span_ns))
    return tables


def rank_table(table: RankTable) -> Table:
    """One row per rank; stragglers marked; the trace file names under the table."""
    title = (
        f"Ranks (median step {format_ns(table.median_step_ns)}; straggler: more than "
        f"{table.threshold:.0%} slower)"
    )
    files = "\n".join(f"rank {rank.rank}: {Path(rank.source).name}" for rank in table.ranks)
    rich_table = Table(title=title, title_justify="left", caption=files, caption_justify="left")
    rich_table.add_column("rank", justify="right")
    for column in ("steps", "step", "compute", "comm", "memory", "idle"):
        rich_table.add_column(column, justify="right", no_wrap=True)
    rich_table.add_column("straggler")
    for rank in table.ranks:
        rich_table.add_row(
            str(rank.rank),
            str(rank.steps),
            format_ns(rank.step_ns),
            format_ns(rank.compute_ns),
            format_ns(rank.communication_ns),
            format_ns(rank.memory_ns),
            format_ns(rank.idle_ns),
            "yes" if rank.straggler else "",
        )
    return rich_table
