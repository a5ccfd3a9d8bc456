"""A `Tabular` result as CSV or JSON for scripts (`top --format csv|json`, `diff --format ...`):
every row and column, exact integers (nanoseconds), nothing shortened, no terminal width."""

from __future__ import annotations

import csv
import io
from typing import Any, Literal

import orjson

from irprof.analyses.table import Tabular
from irprof.errors import UsageError

TextFormat = Literal["table", "csv", "json"]
TEXT_FORMATS: tuple[TextFormat, ...] = ("table", "csv", "json")


def parse_text_format(text: str) -> TextFormat:
    """`text` as an output format (a UsageError naming `--format` otherwise)."""
    for name in TEXT_FORMATS:
        if text == name:
            return name
    raise UsageError(f"--format {text!r}: expected one of {'|'.join(TEXT_FORMATS)}")


def _plain(value: Any) -> Any:
    """JSON-ready: tuples as lists, records as dicts (orjson serializes dataclasses)."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def tabular_json(result: Tabular) -> bytes:
    """One JSON object per row, keyed by column, in a list (with a trailing newline)."""
    columns = result.table_columns()
    rows = [
        {name: _plain(value) for name, value in zip(columns, row, strict=True)}
        for row in result.table_rows()
    ]
    return orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\n"


def tabular_csv(result: Tabular) -> str:
    """A header line, then one line per row; a list or record cell is written as JSON."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.table_columns())
    for row in result.table_rows():
        writer.writerow(
            [
                orjson.dumps(_plain(value)).decode()
                if isinstance(value, tuple | list | dict)
                else ("" if value is None else value)
                for value in row
            ]
        )
    return out.getvalue()
