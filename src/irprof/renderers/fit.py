"""Terminal tables that fit their width: one line per row, columns chosen by priority.

A column that does not fit is dropped, lowest priority first; then the shrinkable ones (names,
locations) give up characters, each shortened where it matters least: a scoped name keeps its
tail (the op's own part), a location keeps `file:line:col`, a list keeps its head. A token is
never split across lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich.table import Table
from rich.text import Text

# head: "…tail" (scoped names, locations); tail: "head…" (lists); middle: "head…tail" (kernels)
Shrink = Literal["head", "tail", "middle"]
ELLIPSIS = "…"


@dataclass(frozen=True)
class FitColumn:
    """One column: its cells as plain strings, how much it matters and how it may shrink."""

    title: str
    cells: Sequence[str]
    priority: int = 0  # 0: always shown; a higher number is dropped first
    justify: Literal["left", "right"] = "left"
    shrink: Shrink | None = None  # None: shown whole or not at all
    min_width: int = 8
    style: str = ""
    cell_styles: Sequence[str] = field(default_factory=tuple)

    @property
    def natural_width(self) -> int:
        """The width that shows every cell whole."""
        return max([len(self.title), *(len(cell) for cell in self.cells)])


def shorten_to(text: str, width: int, how: Shrink) -> str:
    """`text` in at most `width` characters, shortened as `how` says."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    if how == "tail":
        return text[: width - 1] + ELLIPSIS
    if how == "middle":
        head = (width - 1 + 1) // 2
        return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head) :]
    # `…_1/conv_1/convolution`, `…/tf_cnn.py:54:1`: the op's own name, the file and position.
    return ELLIPSIS + text[-(width - 1) :]


def table_width(widths: Sequence[int]) -> int:
    """Characters a boxed rich table with these column widths takes (padding 1 each side)."""
    return sum(widths) + 3 * len(widths) + 1


def _narrowest(column: FitColumn) -> int:
    """The least width a column can take: its shortened minimum, or all of it."""
    if column.shrink is None:
        return column.natural_width
    return min(column.natural_width, max(column.min_width, len(column.title)))


def fit_columns(columns: Sequence[FitColumn], width: int) -> list[tuple[FitColumn, int]]:
    """The columns that fit in `width`, each with the width it gets, in their original order:
    drop the least important while even the narrowest layout is too wide, then narrow the least
    important shrinkable column first."""
    kept = list(columns)
    while table_width([_narrowest(c) for c in kept]) > width:
        droppable = [column for column in kept if column.priority > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda column: (column.priority, kept.index(column))))
    widths = [column.natural_width for column in kept]
    while table_width(widths) > width:
        shrinkable = [
            index
            for index, column in enumerate(kept)
            if column.shrink is not None and widths[index] > _narrowest(column)
        ]
        if not shrinkable:
            break
        index = max(shrinkable, key=lambda i: (kept[i].priority, widths[i]))
        widths[index] = max(_narrowest(kept[index]), widths[index] - (table_width(widths) - width))
    return list(zip(kept, widths, strict=True))


def fit_table(
    columns: Sequence[FitColumn], width: int, *, title: str | None = None, caption: str = ""
) -> Table:
    """A rich Table of `columns` that fits `width` with one line per row."""
    fitted = fit_columns(columns, width)
    table = Table(title=title, title_justify="left", caption=caption or None)
    for column, column_width in fitted:
        table.add_column(
            column.title,
            justify=column.justify,
            no_wrap=True,
            overflow="ellipsis",
            min_width=column_width,
            max_width=column_width,
            style=column.style,
        )
    rows = len(fitted[0][0].cells) if fitted else 0
    for row in range(rows):
        cells = []
        for column, column_width in fitted:
            text = column.cells[row]
            if column.shrink is not None:
                text = shorten_to(text, column_width, column.shrink)
            style = column.cell_styles[row] if row < len(column.cell_styles) else ""
            cells.append(Text(text, style=style))
        table.add_row(*cells)
    return table
