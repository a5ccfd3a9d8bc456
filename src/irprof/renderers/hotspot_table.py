"""Hotspot tables for the terminal (rich), with locations editors can open."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from irprof.analyses.hotspots import HotspotRow, HotspotTable
from irprof.analyses.profiled_ops import ProfiledModule
from irprof.analyses.roofline import Roofline, RooflinePoint
from irprof.analyses.step_stats import OUTLIER_FLOOR_NS, OUTLIER_MADS, UNSTABLE_RATIO
from irprof.analyses.top_view import TopView
from irprof.bundle import Manifest
from irprof.renderers.coverage_table import capture_overhead_text
from irprof.renderers.units import format_ns, format_share, shorten

_KEY_TITLE = {"op": "op (runtime name)", "type": "op kind", "scope": "name scope"}


def editor_location(profiled: ProfiledModule, op_index: int, script: str) -> str:
    """`file:line:col` of the op's frame in the model script (as the manifest names the
    script), else its first user-code position, else its compact location. An op of a called
    function known only by its primitive is placed at its (first) call site."""
    op = profiled.ops[op_index]
    frame = op.frame_in(script, at_call_site=True) if script else ""
    if frame:
        _, line, col = frame.rsplit(":", 2)
        return f"{script}:{line}:{col}"
    return op.site_source or op.location


ROOFLINE_COLUMNS = ("FLOP/B", "GFLOP/s", "GB/s", "roof", "bound")


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def roofline_cells(point: RooflinePoint) -> list[Text]:
    """Intensity, achieved GFLOP/s and GB/s, fraction of the roof and the bound of a row."""
    fraction = point.roof_fraction
    return [
        Text(_figure(point.intensity)),
        Text(_figure(point.achieved_gflops)),
        Text(_figure(point.achieved_gbps)),
        Text("-" if fraction is None else f"{fraction * 100:.1f}%"),
        Text(point.bound if point.known else "-"),
    ]


def hotspot_rich_table(
    table: HotspotTable,
    profiled: ProfiledModule,
    *,
    script: str = "",
    title: str = "",
    roofline: Roofline | None = None,
) -> Table:
    """A rich Table of hotspot rows (with the roofline's columns when given); untrusted names
    are plain Text, never markup."""
    rich_table = Table(title=title or None, title_justify="left", expand=False)
    rich_table.add_column("#", justify="right", style="dim")
    rich_table.add_column(_KEY_TITLE[table.by], overflow="fold")
    if table.by != "type":
        rich_table.add_column("kind")
    spread = any(row.steps for row in table.rows)
    # The sum stays out of a ranked table (it is `--stat sum`'s column and the caption's total).
    rich_table.add_column(stat_column_title(table), justify="right")
    # With per-step samples the spread of the steps replaces the mean per event (still in
    # `to_arrow()`): a stall shows as a max far above the median.
    for column in ("share", "count", "step min/med/max" if spread else "mean"):
        rich_table.add_column(column, justify="right")
    if table.by != "op":
        rich_table.add_column("ops", justify="right")
    for column in ROOFLINE_COLUMNS if roofline is not None else ():
        rich_table.add_column(column, justify="right")
    # Locations fold instead of being cut: an editor needs the whole `file:line:col`.
    rich_table.add_column(
        "location (hottest op)" if table.by != "op" else "location", overflow="fold"
    )
    for rank, row in enumerate(table.rows, start=1):
        cells: list[Text] = [Text(str(rank)), Text(shorten(row.key, 70))]
        if table.by != "type":
            cells.append(Text(shorten(row.op_name, 40)))
        # `~`: the time is an estimated share of an event several ops ran, not a measurement.
        mark = "~" if row.estimated_ns else ""
        cells.append(Text(mark + format_ns(row.stat_ns or row.total_ns)))
        cells += [Text(format_share(row.share)), Text(str(row.count))]
        if spread:
            cells.append(Text(spread_text(row), style="bold" if row.unstable else ""))
        else:
            cells.append(Text(format_ns(row.mean_ns)))
        if table.by != "op":
            cells.append(Text(str(row.ops)))
        if roofline is not None:
            cells += roofline_cells(roofline.points[rank - 1])
        cells.append(Text(editor_location(profiled, row.op_index, script), style="cyan"))
        rich_table.add_row(*cells)
    rich_table.caption = (
        f"{len(table.rows)} rows · {format_ns(table.total_ns)} attributed"
        f" of {format_ns(table.profiled_ns)} profiled (sums) · ranked by {table.stat_label}"
        + (f" ({table.stat_note})" if table.stat_note else "")
    )
    if any(row.unstable for row in table.rows):
        rich_table.caption += f" · ! unstable: slowest step > {UNSTABLE_RATIO:g}x the median step"
    if any(row.estimated_ns for row in table.rows):
        rich_table.caption += " · ~ estimated share of a fused or decomposed event"
    if any(row.group for row in table.rows):
        rich_table.caption += " · `+N ops`: one event group, measured (--expand-groups)"
    if roofline is not None:
        rich_table.caption += "\n" + roofline_caption(roofline)
    return rich_table


def stat_column_title(table: HotspotTable) -> str:
    """The ranked time column's title: `time` for sums, else the statistic (`median x5`)."""
    if table.stat == "sum":
        return "time"
    steps = max((row.steps for row in table.rows), default=0)
    return f"{table.stat} x{steps}" if steps else table.stat


def spread_text(row: HotspotRow) -> str:
    """`min/median/max` of a row's per-step times, `!` first when the row is unstable."""
    text = "/".join(format_ns(v) for v in (row.step_min_ns, row.step_median_ns, row.step_max_ns))
    return ("! " + text) if row.unstable else text if row.steps else "-"


OUTLIERS_SHOWN = 10


def step_notes(table: HotspotTable) -> str:
    """What `top` prints after its table: the outlier op-steps (kept out of the ranking) and
    the run's noise warnings; "" when there is nothing to say."""
    lines: list[str] = []
    if table.outliers:
        lines.append(
            f"outliers: {len(table.outliers)} op-step(s) above the op's median step by more "
            f"than {OUTLIER_MADS:g} MADs and {format_ns(OUTLIER_FLOOR_NS)}"
            + (" (not used for ranking)" if table.stat in ("median", "min") else "")
        )
        for item in table.outliers[:OUTLIERS_SHOWN]:
            ratio = f"{item.ratio:.1f}x" if item.median_ns else "from 0"
            lines.append(
                f"  {shorten(item.key, 70)}  step {item.step}  {format_ns(item.value_ns)}"
                f"  (+{format_ns(item.excess_ns)}, {ratio} its median {format_ns(item.median_ns)})"
            )
        if len(table.outliers) > OUTLIERS_SHOWN:
            lines.append(f"  ... {len(table.outliers) - OUTLIERS_SHOWN} more")
    if table.noise is not None:
        lines += [f"warning: {text}" for text in table.noise.warnings]
    return "\n".join(lines)


def roofline_caption(roofline: Roofline) -> str:
    """What the roofline columns rest on: the peaks and how much time has a known cost."""
    peaks = roofline.peaks.describe() if roofline.peaks else "no peaks: no roof or bound"
    costed = format_share(roofline.costed_ns / roofline.total_ns) if roofline.total_ns else "-"
    text = (
        f"roofline: {peaks} · FLOPs and bytes from the IR's types for {costed} of these rows' "
        "time (`-`: a shape the IR does not know)"
    )
    if any(point.estimated for point in roofline.points):
        # An estimated share of a fused kernel set against the op's unfused traffic can
        # exceed the roof; the group's own row holds its measured time and boundary bytes.
        text += " · `~` rows: an estimated share, read the group's row for its roofline"
    return text


def render_text(table: Table, *, width: int = 160) -> str:
    """Plain text of a rich table (for files, demos and tests)."""
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(table)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def top_title(view: TopView, manifest: Manifest) -> str:
    """`irprof top`'s title: framework, script, level, grouping and what profiling cost."""
    title = (
        f"{manifest.framework} · {view.script} · level {view.level} · by {view.table.by}"
        f" · ranked by {view.table.stat_label}"
    )
    overhead = capture_overhead_text(manifest.options, brief=True)
    return f"{title} · {overhead}" if overhead else title
