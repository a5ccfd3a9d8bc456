"""Checks on a saved trace (`events.json`, Parquet) before it becomes a `Trace`.

irprof's own files are inputs like any other: a forged or damaged one must end in a
TraceFormatError naming the file and the field, never in an IndexError deep in an analysis or a
wrong number. Every column is checked to be integers that int64 holds, every index (kind, name,
track, flow end) to point inside its table, parallel lists to have one length, and the time
columns go through the rule every reader shares (`columns.check_time_columns`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError

I64 = npt.NDArray[np.int64]
INT64_LIMIT = 1 << 63


def int_column(path: Path, field: str, values: Any) -> I64:
    """`values` as int64, or a TraceFormatError when they are not integers int64 holds."""
    array = np.asarray(values)
    if len(array) == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind == "i" or (array.dtype.kind == "u" and int(array.max()) < INT64_LIMIT):
        return array.astype(np.int64, copy=False)
    # numpy stores Python ints past int64 as float64 (up to 2**64) or objects: judge the values.
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if all(type(value) is int for value in items):
        if all(-INT64_LIMIT <= value < INT64_LIMIT for value in items):
            return np.asarray(items, dtype=np.int64)
        kind = "beyond int64"
    else:
        kind = f"not integers (stored as {array.dtype})"
    bad = next(
        (
            row
            for row, value in enumerate(items)
            if type(value) is not int or not -INT64_LIMIT <= value < INT64_LIMIT
        ),
        0,
    )
    raise TraceFormatError(
        path,
        f"values are {kind}: row {bad} holds {str(items[bad])[:40]!r}",
        where=f"field '{field}'",
    )


def index_column(path: Path, field: str, values: Any, size: int, table: str) -> I64:
    """`values` as int64 indexes into a table of `size` entries, each checked to be inside."""
    indexes = int_column(path, field, values)
    bad = np.nonzero((indexes < 0) | (indexes >= size))[0]
    if len(bad):
        row = int(bad[0])
        raise TraceFormatError(
            path,
            f"row {row} holds {int(indexes[row])}, outside the {size} entries of {table}"
            + (f" ({len(bad) - 1} more like it)" if len(bad) > 1 else ""),
            where=f"field '{field}'",
        )
    return indexes


def same_lengths(path: Path, where: str, lists: dict[str, Sequence[Any]]) -> int:
    """The common length of parallel lists, or a TraceFormatError naming the ragged ones."""
    lengths = {name: len(values) for name, values in lists.items()}
    if len(set(lengths.values())) > 1:
        listing = ", ".join(f"{name}: {length}" for name, length in lengths.items())
        raise TraceFormatError(path, f"parallel lists differ in length ({listing})", where=where)
    return next(iter(lengths.values()), 0)


def decode_base64(path: Path, text: str, where: str) -> bytes:
    """Strict base64 (no stray characters), or a TraceFormatError naming `where`."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise TraceFormatError(path, f"invalid base64 ({exc})", where=where) from exc
