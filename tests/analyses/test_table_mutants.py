"""Results as tables: the columns of a dataclass row, Arrow cells (tuples as lists, records as
dicts), the notebook's HTML view (escaped, the first 30 rows and a count of the rest), the
`Tabular` mixin and rows of fields and properties.

Written for `analyses/table.py`. Each expected value is written out from the rows given here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import pytest

from irprof.analyses.table import (
    HTML_ROWS,
    Tabular,
    _cell,
    arrow_table,
    dataclass_rows,
    html_table,
    row_columns,
)
from irprof.errors import UsageError


@dataclass(frozen=True)
class Point:
    x: int
    y: int


@dataclass(frozen=True)
class Row:
    name: str
    ns: int
    where: Point
    kernels: tuple[str, ...]

    @property
    def us(self) -> float:
        return self.ns / 1000


def test_row_columns_leave_out_and_add() -> None:
    assert row_columns(Row) == ("name", "ns", "where", "kernels")
    assert row_columns(Row, properties=("us",)) == ("name", "ns", "where", "kernels", "us")
    assert row_columns(Row, exclude=("where", "ns"), properties=("us",)) == (
        "name",
        "kernels",
        "us",
    )


def test_dataclass_rows_read_fields_and_properties() -> None:
    rows = [Row("a", 1500, Point(1, 2), ("k",)), Row("b", 0, Point(0, 0), ())]
    assert dataclass_rows(rows, ("us", "name")) == [(1.5, "a"), (0.0, "b")]
    assert dataclass_rows([], ("name",)) == []


def test_arrow_cells() -> None:
    rows = [("a", (1, 2, 3), Point(1, 2)), ("b", (), Point(0, 5))]
    table = arrow_table(["name", "ids", "name"], [(r[0], r[1], r[2]) for r in rows])
    assert table.column_names == ["name", "ids", "name"]  # a name may repeat
    assert table.column(0).to_pylist() == ["a", "b"]
    assert table.column(1).to_pylist() == [[1, 2, 3], []]
    assert table.column(2).to_pylist() == [{"x": 1, "y": 2}, {"x": 0, "y": 5}]
    assert arrow_table([], []).num_columns == 0
    assert _cell(Point) is Point  # a record type is not a record


def test_arrow_tuples_of_tuples() -> None:
    table = arrow_table(["ids"], [(((1, 2), (3,)),), (((),),)])
    assert table.column(0).to_pylist() == [[[1, 2], [3]], [[]]]
    records = arrow_table(["at"], [((Point(1, 2), Point(3, 4)),)])
    assert records.column(0).to_pylist() == [[{"x": 1, "y": 2}, {"x": 3, "y": 4}]]


def test_html_escapes_and_shows_the_first_rows() -> None:
    rows = [(f"<op{i}>", i) for i in range(HTML_ROWS + 1)]
    text = html_table(["name & kind", "ns"], rows, caption="a <b> caption")
    assert HTML_ROWS == 30
    assert text.startswith(
        "<table><caption>a &lt;b&gt; caption</caption><thead><tr><th>name &amp; kind</th>"
        "<th>ns</th></tr></thead><tbody><tr><td>&lt;op0&gt;</td><td>0</td></tr>"
    )
    assert text.count("<tr>") == 1 + HTML_ROWS
    assert "<td>&lt;op29&gt;</td>" in text and "op30" not in text
    assert text.endswith("</tbody></table><p>1 more rows: to_pandas() or to_arrow() for all</p>")
    exact = html_table(["n"], [(i,) for i in range(HTML_ROWS)])
    assert exact == (
        "<table><thead><tr><th>n</th></tr></thead><tbody>"
        + "".join(f"<tr><td>{i}</td></tr>" for i in range(HTML_ROWS))
        + "</tbody></table>"
    )
    many = html_table(["n"], [(i,) for i in range(HTML_ROWS + 1234)])
    assert many.endswith("<p>1,234 more rows: to_pandas() or to_arrow() for all</p>")


@dataclass(frozen=True)
class Rows(Tabular):
    rows: tuple[Row, ...]

    def table_columns(self) -> tuple[str, ...]:
        return row_columns(Row, exclude=("where",), properties=("us",))

    def table_rows(self) -> list[tuple[Any, ...]]:
        return dataclass_rows(self.rows, self.table_columns())


def test_the_tabular_mixin() -> None:
    result = Rows((Row("<a>", 2000, Point(1, 2), ("k1", "k2")),))
    assert result.table_caption() == ""
    arrow = result.to_arrow()
    assert arrow.column_names == ["name", "ns", "kernels", "us"]
    assert arrow.to_pylist() == [{"name": "<a>", "ns": 2000, "kernels": ["k1", "k2"], "us": 2.0}]
    frame = result.to_pandas()
    assert list(frame.columns) == ["name", "ns", "kernels", "us"]
    assert frame["ns"].tolist() == [2000]
    assert result._repr_html_() == (
        "<table><thead><tr><th>name</th><th>ns</th><th>kernels</th><th>us</th></tr></thead>"
        "<tbody><tr><td>&lt;a&gt;</td><td>2000</td><td>(&#x27;k1&#x27;, &#x27;k2&#x27;)</td>"
        "<td>2.0</td></tr></tbody></table>"
    )
    with pytest.raises(NotImplementedError):
        Tabular().table_columns()
    with pytest.raises(NotImplementedError):
        Tabular().table_rows()


@dataclass(frozen=True)
class Captioned(Rows):
    def table_caption(self) -> str:
        return "rows <by> name"


def test_the_notebook_view_has_the_caption() -> None:
    result = Captioned((Row("a", 1, Point(0, 0), ()),))
    assert result._repr_html_().startswith(
        "<table><caption>rows &lt;by&gt; name</caption><thead><tr><th>name</th>"
    )


def test_to_pandas_without_pandas_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` fails as if absent
    with pytest.raises(UsageError) as error:
        Rows(()).to_pandas()
    assert str(error.value) == (
        "Rows.to_pandas() needs pandas: `pip install pandas` (to_arrow() needs only pyarrow)"
    )
