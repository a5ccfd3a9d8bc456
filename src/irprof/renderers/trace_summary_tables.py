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
from irprof.analyses.trace_summary import DeviceTime, NameTotals, StepDeviceTime, TraceSummary
from irprof.renderers.fit import FitColumn, fit_table, shorten_to
from irprof.renderers.hotspot_table import WIDE
from irprof.renderers.units import format_ns, format_share

NAME_HEAD, NAME_TAIL = 90, 30


def _clip(name: str) -> str:
    """A name cut to what a cell can show, its middle elided (a kernel signature can run to
    megabytes; folding it is quadratic in rich)."""
    if len(name) > NAME_HEAD + NAME_TAIL + 1:
        name = name[:NAME_HEAD] + "…" + name[-NAME_TAIL:]
    return name


def cell_name(name: str) -> Text:
    """A name as plain text (never markup), its middle elided when long."""
    return Text(_clip(name))


def _share(part: int, whole: int) -> str:
    return format_share(part / whole if whole else None)


def _time(title: str, values: list[int], priority: int = 0) -> FitColumn:
    return FitColumn(title, [format_ns(v) for v in values], priority=priority, justify="right")


def _place(title: str, cells: list[str], priority: int = 0) -> FitColumn:
    """A device, stream or track name: its end tells them apart (`stream 20`, `GPU 1`)."""
    return FitColumn(title, cells, priority=priority, shrink="head", min_width=8)


def name_table(title: str, rows: tuple[NameTotals, ...], span_ns: int, width: int = WIDE) -> Table:
    """Names with count, total, self and mean time."""
    columns = [
        FitColumn("name", [_clip(row.name) for row in rows], shrink="middle", min_width=24),
        FitColumn("kind", [row.kind for row in rows], priority=3, shrink="tail", min_width=7),
        FitColumn("count", [f"{row.count:,}" for row in rows], priority=2, justify="right"),
        _time("total", [row.total_ns for row in rows]),
        _time("self", [row.self_ns for row in rows]),
        _time("mean", [row.mean_ns for row in rows], priority=4),
        FitColumn(
            "self %", [_share(row.self_ns, span_ns) for row in rows], priority=1, justify="right"
        ),
    ]
    return fit_table(columns, width, title=title, caption="self %: of the trace's span")


def device_table(title: str, rows: tuple[DeviceTime, ...], width: int = WIDE) -> Table:
    """Compute, communication, memory and idle time per device or stream."""
    columns = [_place("device", [row.device for row in rows])]
    if any(row.stream for row in rows):
        columns.append(_place("stream", [row.stream for row in rows]))
    hidden = [row.comm_hidden_fraction for row in rows]
    columns += [
        FitColumn("events", [f"{row.events:,}" for row in rows], priority=4, justify="right"),
        _time("window", [row.window_ns for row in rows]),
        _time("compute", [row.compute_ns for row in rows]),
        _time("comm", [row.communication_ns for row in rows], priority=1),
        FitColumn(
            "hidden",
            ["-" if share is None else f"{share:.0%}" for share in hidden],
            priority=3,
            justify="right",
        ),
        _time("memory", [row.memory_ns for row in rows], priority=2),
        _time("idle", [row.idle_ns for row in rows]),
        FitColumn("idle %", [_share(row.idle_ns, row.window_ns) for row in rows], justify="right"),
    ]
    caption = "hidden: communication under compute" if any(s is not None for s in hidden) else ""
    return fit_table(columns, width, title=title, caption=caption)


def step_table(rows: tuple[StepDeviceTime, ...], width: int = WIDE) -> Table:
    """Each device in each step: the step's wall time split like `exclusive_table`."""
    parts = [row.time.exclusive_ns() for row in rows]
    columns = [
        FitColumn("step", [str(row.step) for row in rows], justify="right"),
        _place("device", [row.time.device for row in rows]),
        _time("step time", [row.time.window_ns for row in rows]),
        _time("compute", [p["compute"] for p in parts]),
        _time("comm only", [p["communication"] for p in parts], priority=1),
        _time("memory only", [p["memory"] for p in parts], priority=2),
        _time("idle", [p["idle"] for p in parts]),
        FitColumn(
            "idle %",
            [_share(p["idle"], row.time.window_ns) for p, row in zip(parts, rows, strict=True)],
            justify="right",
        ),
    ]
    return fit_table(
        columns,
        width,
        title="Device time per step (work clipped to each step marker; parts sum to the step)",
    )


def exclusive_table(rows: tuple[DeviceTime, ...], width: int = WIDE) -> Table:
    """Each device's window split into parts that add up to it (compute first, then
    communication, then memory, then idle)."""
    parts = [row.exclusive_ns() for row in rows]
    # (part, title, priority of its time, priority of its share of the window)
    names = [("compute", "compute", 0, 2), ("communication", "comm only", 1, 4)]
    names += [("memory", "memory only", 1, 4), ("idle", "idle", 0, 1)]
    columns = [
        _place("device", [row.device for row in rows]),
        _time("window", [row.window_ns for row in rows]),
    ]
    columns += [_time(title, [p[name] for p in parts], prio) for name, title, prio, _ in names]
    columns += [
        FitColumn(
            f"{title.split()[0]} %",
            [_share(p[name], row.window_ns) for p, row in zip(parts, rows, strict=True)],
            priority=share_priority,
            justify="right",
        )
        for name, title, _, share_priority in names
    ]
    return fit_table(
        columns,
        width,
        title="Device time, exclusive (compute > comm > memory > idle; parts sum to the window)",
    )


def waits_table(rows: tuple[StreamWaits, ...], width: int = WIDE) -> Table:
    """Each stream's idle time by what it waited for, with launch delays and short kernels."""

    def delay(value: int | None) -> str:
        return "-" if value is None else format_ns(value)

    columns = [
        _place("device", [row.device for row in rows]),
        _place("stream", [row.stream for row in rows]),
        _time("idle", [row.idle_ns for row in rows]),
        _time("host wait", [row.host_wait_ns for row in rows]),
        _time("kernel wait", [row.kernel_wait_ns for row in rows]),
        _time("unexplained", [row.unexplained_ns for row in rows], priority=1),
        FitColumn(
            "launch p50",
            [delay(row.launch_delay_median_ns) for row in rows],
            priority=2,
            justify="right",
        ),
        FitColumn(
            "launch max",
            [delay(row.launch_delay_max_ns) for row in rows],
            priority=3,
            justify="right",
        ),
        FitColumn("queue max", [str(row.queue_max) for row in rows], priority=5, justify="right"),
        FitColumn(
            "queue mean", [f"{row.queue_mean:.1f}" for row in rows], priority=6, justify="right"
        ),
        FitColumn(
            f"< {format_ns(SHORT_KERNEL_NS)}",
            [f"{row.short_events:,} of {row.events:,}" for row in rows],
            priority=4,
            justify="right",
        ),
    ]
    return fit_table(
        columns,
        width,
        title="Idle time by cause (host wait: until the launch; kernel wait: launched, not run)",
        caption="launch: delay from the launch call to the kernel's start; queue: kernels "
        "launched and not finished",
    )


def summary_tables(summary: TraceSummary, width: int = WIDE) -> list[Table]:
    """Overview, device and stream time, top device work, top names by total and self time."""
    label = f" ({summary.format})"
    title = shorten_to(summary.source, max(width - len(label), 16), "head") + label
    overview = fit_table(
        [
            FitColumn("events", [f"{summary.events:,}"], justify="right"),
            FitColumn("tracks", [str(summary.tracks)], priority=2, justify="right"),
            FitColumn("flows", [f"{summary.flows:,}"], priority=1, justify="right"),
            FitColumn("span", [format_ns(summary.span_ns)], justify="right"),
            FitColumn(
                "by kind",
                [", ".join(f"{k} {n:,}" for k, n in summary.events_by_kind.items())],
                shrink="tail",
                min_width=16,
            ),
        ],
        width,
        title=title,
    )
    tables = [overview]
    if summary.devices:
        tables.append(device_table("Device time", summary.devices, width))
        tables.append(exclusive_table(summary.devices, width))
        if summary.steps:
            tables.append(step_table(summary.steps, width))
        tables.append(device_table("Stream time", summary.streams, width))
        tables.append(waits_table(summary.waits, width))
        tables.append(name_table("Top device work", summary.top_device, summary.span_ns, width))
    tables.append(
        name_table("Top names by total time", summary.top_by_total, summary.span_ns, width)
    )
    tables.append(name_table("Top names by self time", summary.top_by_self, summary.span_ns, width))
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
