"""Run diff for the terminal: the total, ops, scopes and kinds by |delta|, and fusion changes."""

from __future__ import annotations

import io
from dataclasses import dataclass

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from irprof.analyses.run_diff import DiffRow, RunDiff
from irprof.renderers.units import format_ns, shorten


def _ns(value: float) -> str:
    return format_ns(round(value))


def _signed(value: float) -> str:
    text = _ns(value)
    return text if value < 0 else f"+{text}"


def _pct(row: DiffRow) -> str:
    pct = row.delta_pct
    if pct is None:
        return "new" if row.b_ns > 0 else "-"
    return f"{pct:+.1f}%"


def _interval(row: DiffRow) -> Text:
    if row.interval is None:
        return Text("n/a", style="dim")
    low, high = row.interval
    text = f"[{_signed(low)}, {_signed(high)}]"
    if not row.significant:
        return Text(text, style="dim")
    return Text(text, style="red" if low > 0 else "green")


def _table(title: str, rows: tuple[DiffRow, ...], *, ops: bool, limit: int) -> Table:
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("op (runtime name)" if ops else "key", overflow="fold", min_width=30)
    if ops:
        table.add_column("kind", max_width=24, overflow="ellipsis", no_wrap=True)
        table.add_column("match", style="dim", no_wrap=True)
    for column in ("A / step", "B / step", "delta", "delta %"):
        table.add_column(column, justify="right")
    table.add_column("interval of delta", justify="right")
    if ops:
        table.add_column("location", overflow="fold", style="cyan")
    for rank, row in enumerate(rows[:limit], start=1):
        delta_style = "" if not row.significant else ("red" if row.delta_ns > 0 else "green")
        cells: list[Text] = [Text(str(rank)), Text(shorten(row.key, 60))]
        if ops:
            cells += [Text(shorten(row.kind, 32)), Text(row.match)]
        cells += [
            Text(_ns(row.a_ns)),
            Text(_ns(row.b_ns)),
            Text(_signed(row.delta_ns), style=delta_style),
            Text(_pct(row), style=delta_style),
            _interval(row),
        ]
        if ops:
            cells.append(Text(row.location))
        table.add_row(*cells)
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more rows (--limit, or --json for all)"
    return table


def _fusion_table(diff: RunDiff) -> Table:
    table = Table(title="fusion changes", title_justify="left", expand=False)
    table.add_column("change")
    table.add_column("ops", overflow="fold")
    table.add_column("kernels in A", overflow="fold")
    table.add_column("kernels in B", overflow="fold")
    for change in diff.fusion:
        table.add_row(
            Text(change.change),
            Text("\n".join(shorten(name, 60) for name in change.members)),
            Text("\n".join(shorten(k, 50) for k in change.kernels_a) or "-"),
            Text("\n".join(shorten(k, 50) for k in change.kernels_b) or "-"),
        )
    return table


def diff_renderables(diff: RunDiff, limit: int = 20) -> Group:
    """The rich renderables of a diff, in reading order."""
    confidence = f"{diff.options.confidence:.0%}"
    header = Text()
    header.append(f"A: {diff.run_a} (level {diff.level_a}, {diff.steps_a} steps, ")
    header.append(f"samples: {diff.method_a})\n")
    header.append(f"B: {diff.run_b} (level {diff.level_b}, {diff.steps_b} steps, ")
    header.append(f"samples: {diff.method_b})\n")
    matches = ", ".join(f"{count} {kind}" for kind, count in diff.match_counts.items())
    header.append(f"ops: {matches or 'none'}\n")
    total = diff.total
    header.append("all ops per step: ")
    header.append(f"{_ns(total.a_ns)} -> {_ns(total.b_ns)} ({_pct(total)}), ")
    header.append("interval of delta ")
    header.append_text(_interval(total))
    header.append(f"; times are per step, intervals {confidence} bootstrap")
    parts: list[Table | Text] = [header]
    parts.append(_table("ops by |delta|", diff.ops, ops=True, limit=limit))
    parts.append(_table("name scopes by |delta|", diff.scopes, ops=False, limit=limit))
    parts.append(_table("op kinds by |delta|", diff.kinds, ops=False, limit=limit))
    if diff.fusion:
        parts.append(_fusion_table(diff))
    else:
        parts.append(Text("fusion changes: none (the same ops ran together in both runs)"))
    parts += [Text(f"note: {note}", style="yellow") for note in diff.notes]
    return Group(*parts)


@dataclass(frozen=True)
class DiffTableRenderer:
    """The diff as terminal text (plain when written to a file)."""

    name: str = "diff-table"
    extension: str = ".txt"
    limit: int = 20
    width: int = 160

    def render(self, data: RunDiff) -> bytes:
        """Plain text of the tables."""
        buffer = io.StringIO()
        console = Console(file=buffer, width=self.width, highlight=False, color_system=None)
        console.print(diff_renderables(data, self.limit))
        return buffer.getvalue().encode("utf-8")


RENDERER = DiffTableRenderer()
