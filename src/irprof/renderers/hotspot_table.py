"""Hotspot tables for the terminal (rich), with locations editors can open."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from irprof.analyses.hotspots import HotspotTable
from irprof.analyses.profiled_ops import ProfiledModule
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


def hotspot_rich_table(
    table: HotspotTable, profiled: ProfiledModule, *, script: str = "", title: str = ""
) -> Table:
    """A rich Table of hotspot rows; untrusted names are plain Text, never markup."""
    rich_table = Table(title=title or None, title_justify="left", expand=False)
    rich_table.add_column("#", justify="right", style="dim")
    rich_table.add_column(_KEY_TITLE[table.by], overflow="fold")
    if table.by != "type":
        rich_table.add_column("kind")
    for column in ("time", "share", "count", "mean"):
        rich_table.add_column(column, justify="right")
    if table.by != "op":
        rich_table.add_column("ops", justify="right")
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
        cells += [
            Text(mark + format_ns(row.total_ns)),
            Text(format_share(row.share)),
            Text(str(row.count)),
            Text(format_ns(row.mean_ns)),
        ]
        if table.by != "op":
            cells.append(Text(str(row.ops)))
        cells.append(Text(editor_location(profiled, row.op_index, script), style="cyan"))
        rich_table.add_row(*cells)
    rich_table.caption = (
        f"{len(table.rows)} rows · {format_ns(table.total_ns)} attributed"
        f" of {format_ns(table.profiled_ns)} profiled"
    )
    if any(row.estimated_ns for row in table.rows):
        rich_table.caption += " · ~ estimated share of a fused or decomposed event"
    if any(row.group for row in table.rows):
        rich_table.caption += " · `+N ops`: one event group, measured (--expand-groups)"
    return rich_table


def render_text(table: Table, *, width: int = 160) -> str:
    """Plain text of a rich table (for files, demos and tests)."""
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(table)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()
