"""An SQL query's result as a terminal table (rich) or its text.

Values are shown as DuckDB returns them: integers with thousands separators (nanoseconds read
better so), floats to four significant digits, lists and JSON as text; long strings are cut in
the middle like the trace summary's names. Untrusted text never becomes markup.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from irprof.analyses.sql_views import SqlResult
from irprof.renderers.trace_summary_tables import cell_name

_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "UINTEGER",
            "DOUBLE", "FLOAT", "DECIMAL", "REAL")  # fmt: skip


def _is_numeric(kind: str) -> bool:
    return kind.upper().startswith(_NUMERIC)


def _cell(value: Any) -> Text:
    if value is None:
        return Text("NULL", style="dim")
    if isinstance(value, bool):
        return Text(str(value).lower())
    if isinstance(value, int):
        return Text(f"{value:,}")
    if isinstance(value, float):
        return Text(f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}")
    return cell_name(str(value))


def sql_rich_table(result: SqlResult, title: str = "") -> Table:
    """A rich Table of the result's rows, numbers right-aligned; a caption when cut short."""
    caption = f"first {len(result.rows):,} rows; use --limit, --csv or -o for all" if (
        result.truncated
    ) else f"{len(result.rows):,} row(s)"  # fmt: skip
    table = Table(title=title or None, title_justify="left", caption=caption,
                  caption_justify="left")  # fmt: skip
    for column, kind in zip(result.columns, result.types, strict=True):
        numeric = _is_numeric(kind)
        table.add_column(column, justify="right" if numeric else "left",
                         overflow="fold", no_wrap=numeric)  # fmt: skip
    for row in result.rows:
        table.add_row(*(_cell(value) for value in row))
    return table


@dataclass(frozen=True)
class SqlTableRenderer:
    """`SqlResult` -> the text of its terminal table."""

    name: str = "sql-table"
    extension: str = ".txt"
    width: int = 160

    def render(self, data: SqlResult) -> bytes:
        """The table as plain text."""
        out = io.StringIO()
        Console(file=out, width=self.width, no_color=True, highlight=False).print(
            sql_rich_table(data)
        )
        return out.getvalue().encode("utf-8")


RENDERER = SqlTableRenderer()
