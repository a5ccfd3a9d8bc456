"""Results as tables for notebooks: Arrow, pandas and HTML from one conversion.

A result mixes in `Tabular` and says what its rows are (`table_columns`, `table_rows`); the
conversion is written here once. pyarrow is a dependency; pandas is optional and imported by
`to_pandas` only. See docs/api.md.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from irprof.errors import UsageError

if TYPE_CHECKING:
    import pyarrow as pa

HTML_ROWS = 30  # a notebook shows the head of a table; to_pandas() gives the rest


def row_columns(
    row_type: type[Any], *, properties: Sequence[str] = (), exclude: Sequence[str] = ()
) -> tuple[str, ...]:
    """The columns of a dataclass row: its fields but `exclude` (records repeated on every row,
    such as a roofline point's peaks), then `properties` (derived figures)."""
    fields = tuple(field.name for field in dataclasses.fields(row_type))
    return tuple(name for name in fields if name not in exclude) + tuple(properties)


def _cell(value: Any) -> Any:
    """A value Arrow can hold: tuples as lists, nested records as dicts."""
    if isinstance(value, tuple):
        return [_cell(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def arrow_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """An Arrow table of `rows` (one sequence of values per row, in `columns` order)."""
    import pyarrow as pa

    arrays = [pa.array([_cell(row[index]) for row in rows]) for index in range(len(columns))]
    # from_arrays, not a dict: an SQL result may repeat a column name.
    return pa.Table.from_arrays(arrays, names=list(columns))


def html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    """A plain HTML table of the first `HTML_ROWS` rows, every value escaped (names are
    untrusted: they come from traces and IR)."""
    head = "".join(f"<th>{html.escape(name)}</th>" for name in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(value))}</td>" for value in row) + "</tr>"
        for row in rows[:HTML_ROWS]
    )
    more = len(rows) - HTML_ROWS
    note = f"<p>{more:,} more rows: to_pandas() or to_arrow() for all</p>" if more > 0 else ""
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


class Tabular:
    """Mixin for a result with rows: `to_arrow()`, `to_pandas()` and a notebook view."""

    def table_columns(self) -> tuple[str, ...]:
        """The column names."""
        raise NotImplementedError

    def table_rows(self) -> list[tuple[Any, ...]]:
        """One tuple of values per row, in `table_columns` order."""
        raise NotImplementedError

    def table_caption(self) -> str:
        """A line above the notebook view."""
        return ""

    def to_arrow(self) -> pa.Table:
        """The rows as a pyarrow Table."""
        return arrow_table(self.table_columns(), self.table_rows())

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas installed)."""
        try:
            importlib.import_module("pandas")
        except ImportError as exc:
            raise UsageError(
                f"{type(self).__name__}.to_pandas() needs pandas: `pip install pandas` "
                "(to_arrow() needs only pyarrow)"
            ) from exc
        return self.to_arrow().to_pandas()

    def _repr_html_(self) -> str:
        return html_table(self.table_columns(), self.table_rows(), self.table_caption())


def dataclass_rows(rows: Sequence[Any], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each row's values of `columns` (fields or properties)."""
    return [tuple(getattr(row, name) for name in columns) for row in rows]
