"""`--format csv|json`: the format names, every column and row as JSON objects, CSV cells with
lists and records as JSON and nothing for a missing value.

Written for `renderers/tabular_text.py`, which only the CLI's tests reached. The rows are
written out here and each expected text is spelled out from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from irprof.analyses.table import Tabular
from irprof.errors import UsageError
from irprof.renderers.tabular_text import (
    TEXT_FORMATS,
    parse_text_format,
    tabular_csv,
    tabular_json,
)


@dataclass(frozen=True)
class Rows(Tabular):
    """A result of three columns whose cells are given as they are."""

    rows: tuple[tuple[Any, ...], ...]

    def table_columns(self) -> tuple[str, ...]:
        return ("name", "ns", "kernels")

    def table_rows(self) -> list[tuple[Any, ...]]:
        return list(self.rows)


def test_format_names() -> None:
    assert TEXT_FORMATS == ("table", "csv", "json")
    for name in TEXT_FORMATS:
        assert parse_text_format(name) == name
    for wrong in ("CSV", "", "tables", "js"):
        with pytest.raises(UsageError) as error:
            parse_text_format(wrong)
        assert str(error.value) == f"--format {wrong!r}: expected one of table|csv|json"


ROWS = Rows(
    (
        ("conv, relu", 12_345_678_901, ("k1", ("a", "b"))),
        ("none", None, ()),
        ("rec", 0, {"x": 1}),
        ("list", -5, [1, 2]),
    )
)


def test_json_has_one_object_per_row_keyed_by_column() -> None:
    text = tabular_json(ROWS)
    assert text.endswith(b"]\n") and not text.endswith(b"\n\n")
    assert json.loads(text) == [
        {"name": "conv, relu", "ns": 12_345_678_901, "kernels": ["k1", ["a", "b"]]},
        {"name": "none", "ns": None, "kernels": []},
        {"name": "rec", "ns": 0, "kernels": {"x": 1}},
        {"name": "list", "ns": -5, "kernels": [1, 2]},
    ]
    # indented by two spaces, one key a line
    assert text.splitlines()[:3] == [b"[", b"  {", b'    "name": "conv, relu",']
    assert tabular_json(Rows(())) == b"[]\n"


def test_csv_writes_lists_and_records_as_json_and_none_as_nothing() -> None:
    assert tabular_csv(ROWS).splitlines() == [
        "name,ns,kernels",
        '"conv, relu",12345678901,"[""k1"",[""a"",""b""]]"',
        "none,,[]",
        'rec,0,"{""x"":1}"',
        'list,-5,"[1,2]"',
    ]
    assert tabular_csv(ROWS).endswith(']"\n')
    assert tabular_csv(Rows(())) == "name,ns,kernels\n"


def test_json_refuses_a_row_whose_cells_do_not_match_the_columns() -> None:
    # a result whose rows and columns disagree (a field left out of `table_columns` but not of
    # its rows) fails, rather than writing objects with the extra cell silently dropped
    for row in (("a", 1, (), "extra"), ("a", 1)):
        with pytest.raises(ValueError, match="zip"):
            tabular_json(Rows((row,)))
