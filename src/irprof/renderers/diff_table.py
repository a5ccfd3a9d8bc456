"""Run diff for the terminal: the total, ops, scopes and kinds by |delta|, and fusion changes."""

from __future__ import annotations

import io
from dataclasses import dataclass

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from irprof.analyses.run_diff import DiffRow, RunDiff
from irprof.renderers.fit import FitColumn, fit_table
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


def _interval_style(row: DiffRow) -> str:
    if row.interval is None or not row.significant:
        return "dim"
    return "red" if row.interval[0] > 0 else "green"


def _table(title: str, rows: tuple[DiffRow, ...], *, ops: bool, limit: int, width: int) -> Table:
    """One ranked table that fits `width`: the delta first, then what explains it."""
    shown = rows[:limit]
    delta_styles = [
        "" if not row.significant else ("red" if row.delta_ns > 0 else "green") for row in shown
    ]
    columns = [
        FitColumn("#", [str(rank) for rank in range(1, len(shown) + 1)], justify="right"),
        FitColumn(
            "op (runtime name)" if ops else "key",
            [row.key for row in shown],
            shrink="head",
            min_width=24,
        ),
    ]
    if ops:
        columns.append(FitColumn("kind", [row.kind for row in shown], 5, "left", "tail", 10))
        columns.append(FitColumn("match", [row.match for row in shown], 6, style="dim"))
    columns += [
        FitColumn("A / step", [_ns(row.a_ns) for row in shown], 2, "right"),
        FitColumn("B / step", [_ns(row.b_ns) for row in shown], 2, "right"),
        FitColumn("delta", [_signed(row.delta_ns) for row in shown], justify="right",
                  cell_styles=delta_styles),
        FitColumn("delta %", [_pct(row) for row in shown], justify="right",
                  cell_styles=delta_styles),
        FitColumn("interval of delta", [_interval(row).plain for row in shown], 1, "right",
                  cell_styles=[_interval_style(row) for row in shown]),
    ]  # fmt: skip
    if ops:
        # Rows that share a runtime name (a layer's ops called in a loop) differ by location
        # alone: then it stays however narrow the terminal.
        repeated = len({row.key for row in shown}) < len(shown)
        columns.append(
            FitColumn("location", [row.location for row in shown], 0 if repeated else 3, "left",
                      "head", 16, style="cyan")
        )  # fmt: skip
    caption = (
        f"{len(rows) - limit} more rows (--limit, or --json for all)" if len(rows) > limit else ""
    )
    return fit_table(columns, width, title=title, caption=caption)


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


def diff_renderables(diff: RunDiff, limit: int = 20, width: int = 160) -> Group:
    """The rich renderables of a diff, in reading order, its tables fitting `width`."""
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
    parts.append(_table("ops by |delta|", diff.ops, ops=True, limit=limit, width=width))
    parts.append(_table("name scopes by |delta|", diff.scopes, ops=False, limit=limit, width=width))
    parts.append(_table("op kinds by |delta|", diff.kinds, ops=False, limit=limit, width=width))
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
        console.print(diff_renderables(data, self.limit, self.width))
        return buffer.getvalue().encode("utf-8")


RENDERER = DiffTableRenderer()
