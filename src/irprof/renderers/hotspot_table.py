"""Hotspot tables for the terminal (rich), with locations editors can open."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

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
from irprof.renderers.fit import FitColumn, fit_table
from irprof.renderers.units import format_ns, format_share, shorten

# TF names an op of a function body `node@function` (what its XPlane events carry as well).
_FUNCTION_SUFFIX = re.compile(r"@([A-Za-z_][\w.$-]*)")
_KEY_TITLE = {"op": "op (runtime name)", "type": "op kind", "scope": "name scope"}
WIDE = 160  # the width of a table printed to a file, where no terminal decides it


def editor_location(profiled: ProfiledModule, op_index: int, script: str) -> str:
    """`file:line:col` of the op's first user-code frame, the model script's path written as
    the manifest names it when the frame is in the script; else its compact location. An op of
    a called function known only by its primitive is placed at its (first) call site.

    The first user-code frame, not the script's: a model built by a library the script calls
    (a Hugging Face model under torch.export, whose frames read `transformers/models/...`)
    has every op under the script's one call line, which names no op."""
    op = profiled.ops[op_index]
    where = op.site_source
    if not where:
        return op.place
    file, line, col = where.rsplit(":", 2) if where.count(":") >= 2 else (where, "", "")
    if script and line and Path(file).name == Path(script).name:
        return f"{script}:{line}:{col}"
    return where


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
    width: int = WIDE,
) -> Table:
    """A rich Table of hotspot rows (with the roofline's columns when given) that fits `width`
    with one line per row (`renderers/fit.py`); untrusted names are plain Text, never markup."""
    rows = table.rows
    spread = any(row.steps for row in rows)
    kinds = [row.op_name for row in rows]
    dialect = shared_dialect(kinds) if table.by != "type" else ""
    keys = [row.key for row in rows]
    function = shared_function(keys) if table.by == "op" else ""
    key_title = _KEY_TITLE[table.by] + (f" in @{function}" if function else "")
    columns = [
        FitColumn("#", [str(rank) for rank in range(1, len(rows) + 1)], justify="right"),
        FitColumn(key_title, [without_function(key, function) for key in keys], shrink="head",
                  min_width=32),
    ]  # fmt: skip
    if table.by != "type":
        title_kind = f"kind ({dialect}.)" if dialect else "kind"
        cells = [without_dialect(kind, dialect) for kind in kinds]
        columns.append(FitColumn(title_kind, cells, priority=4, shrink="tail", min_width=10))
    # `~`: the time is an estimated share of an event several ops ran, not a measurement.
    figures = [
        ("~" if row.estimated_ns else "") + format_ns(row.stat_ns or row.total_ns) for row in rows
    ]
    # The sum stays out of a ranked table (it is `--stat sum`'s column and the caption's total).
    columns.append(FitColumn(stat_column_title(table), figures, justify="right"))
    columns.append(FitColumn("share", [format_share(row.share) for row in rows], justify="right"))
    columns.append(FitColumn("count", [str(row.count) for row in rows], 6, "right"))
    # With per-step samples the spread of the steps replaces the mean per event (still in
    # `to_arrow()`): a stall shows as a max far above the median.
    if spread:
        spreads = [spread_text(row) for row in rows]
        bold = ["bold" if row.unstable else "" for row in rows]
        columns.append(FitColumn("step min/med/max", spreads, 3, "right", cell_styles=bold))
    else:
        columns.append(FitColumn("mean", [format_ns(row.mean_ns) for row in rows], 5, "right"))
    if table.by != "op":
        columns.append(FitColumn("ops", [str(row.ops) for row in rows], 6, "right"))
    if roofline is not None:
        cells_by_row = [roofline_cells(point) for point in roofline.points[: len(rows)]]
        for index, name in enumerate(ROOFLINE_COLUMNS):
            values = [cells[index].plain for cells in cells_by_row]
            columns.append(FitColumn(name, values, 2, "right"))
    locations = [editor_location(profiled, row.op_index, script) for row in rows]
    location_title = "location (hottest op)" if table.by != "op" else "location"
    # Narrowest: `…/file.py:line:col`, the part an editor opens (the folders go first).
    file_width = max((len(location.rsplit("/", 1)[-1]) + 2 for location in locations), default=14)
    if any(locations):  # no row placed anywhere (an ONNX model's nodes): no column
        columns.append(
            FitColumn(
                location_title,
                locations,
                priority=1,
                shrink="head",
                min_width=min(file_width, 32),
                style="cyan",
            )
        )
    caption = (
        f"{len(rows)} rows · {format_ns(table.total_ns)} attributed"
        f" of {format_ns(table.profiled_ns)} profiled (sums) · ranked by {table.stat_label}"
        + (f" ({table.stat_note})" if table.stat_note else "")
    )
    if any(row.unstable for row in rows):
        caption += f" · ! unstable: slowest step > {UNSTABLE_RATIO:g}x the median step"
    if any(row.estimated_ns for row in rows):
        caption += " · ~ estimated share of a fused or decomposed event"
    if any(row.group for row in rows):
        caption += " · `+N ops`: one event group, measured (--expand-groups)"
    if roofline is not None:
        caption += "\n" + roofline_caption(roofline)
    return fit_table(columns, width, title=title or None, caption=caption)


def shared_dialect(kinds: Sequence[str]) -> str:
    """The dialect every op kind of the table shares (`tf` of `tf.Conv2D, tf.Relu`), or ""."""
    dialects = {
        part.strip().split(".", 1)[0] if "." in part else ""
        for kind in kinds
        for part in kind.split(",")
        if part.strip()
    }
    return next(iter(dialects)) if len(dialects) == 1 else ""


def shared_function(keys: Sequence[str]) -> str:
    """The function every row's name carries as TF writes it (`Relu@__inference_f_42`), or "".

    A Keras `fit` step runs every op in one function; its ~35-character suffix on every row
    left a narrow terminal `…veBackpropInput@__inference_one_step_on_data_30908` for each.
    """
    functions = {tuple(_FUNCTION_SUFFIX.findall(key)) for key in keys}
    if len(functions) != 1:
        return ""
    found = next(iter(functions))
    return found[0] if len(found) == 1 else ""


def without_function(key: str, function: str) -> str:
    """`key` without its `@function` when the column title names the function."""
    return key.replace(f"@{function}", "", 1) if function else key


def without_dialect(kind: str, dialect: str) -> str:
    """`tf.Conv2D, tf.Relu` -> `Conv2D, Relu` when the column title names the dialect."""
    if not dialect:
        return kind
    prefix = dialect + "."
    return ", ".join(part.strip().removeprefix(prefix) for part in kind.split(","))


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
# Op time only the untimed reference steps recorded, as a share of the profiled time, from which
# `top` says the shares leave out a sizeable part of the run.
UNTIMED_WARNING_SHARE = 0.05


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
    if table.oncpu_note and table.stat != "sum":
        lines.append(table.oncpu_note)
    if table.noise is not None:
        lines += [f"warning: {text}" for text in table.noise.warnings]
    if table.untimed_ns >= UNTIMED_WARNING_SHARE * table.profiled_ns > 0:
        lines.append(
            "warning: ops the timed steps did not record (seen only in the untimed reference "
            f"steps) took about {format_ns(table.untimed_ns)} over as many steps, "
            f"{format_share(table.untimed_ns / table.profiled_ns)} of the profiled time: the "
            "shares leave it out; capture with --reference-time to count it"
        )
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


def render_text(table: Table, *, width: int = WIDE) -> str:
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
