"""Checks on saved traces at int64's edges, with the exact texts of their errors.

Written for the mutants of `trace/validate.py`: the readers' tests reach these checks through
whole files, so a bound moved by one or an error naming the wrong row passed. Each error text
is written out from the rule: the file, `at field '...'`, the kind of problem, the first bad
row and its value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.trace.validate import decode_base64, index_column, int_column, same_lengths

FILE = Path("run/events.json")
LIMIT = 2**63


def error_of(call: object) -> str:
    assert callable(call)
    with pytest.raises(TraceFormatError) as caught:
        call()
    return str(caught.value)


def test_integers_int64_holds_pass_at_both_ends() -> None:
    values = [-LIMIT, -1, 0, LIMIT - 1]
    column = int_column(FILE, "ts", values)
    assert column.dtype == np.int64 and column.tolist() == values
    unsigned = int_column(FILE, "ts", np.asarray([0, LIMIT - 1], dtype=np.uint64))
    assert unsigned.dtype == np.int64 and unsigned.tolist() == [0, LIMIT - 1]
    small = int_column(FILE, "ts", np.asarray([3, -4], dtype=np.int32))
    assert small.dtype == np.int64 and small.tolist() == [3, -4]
    empty = int_column(FILE, "ts", [])
    assert empty.dtype == np.int64 and len(empty) == 0


def test_unsigned_values_past_int64_name_the_first_bad_row() -> None:
    values = np.asarray([1, LIMIT - 1, LIMIT, LIMIT + 5], dtype=np.uint64)
    assert error_of(lambda: int_column(FILE, "dur", values)) == (
        f"{FILE} at field 'dur': values are beyond int64: row 2 holds '{LIMIT}'"
    )


def test_python_ints_past_int64_on_either_side() -> None:
    assert error_of(lambda: int_column(FILE, "ts", [0, -LIMIT - 1])) == (
        f"{FILE} at field 'ts': values are beyond int64: row 1 holds '{-LIMIT - 1}'"
    )
    as_objects = np.asarray([LIMIT, 0], dtype=object)  # as a JSON reader's ints arrive
    assert error_of(lambda: int_column(FILE, "ts", as_objects)) == (
        f"{FILE} at field 'ts': values are beyond int64: row 0 holds '{LIMIT}'"
    )


def test_values_that_are_not_integers_say_how_they_are_stored() -> None:
    assert error_of(lambda: int_column(FILE, "ts", [1.0, 2.5])) == (
        f"{FILE} at field 'ts': values are not integers (stored as float64): row 0 holds '1.0'"
    )
    # numpy stores the ints as text beside a string; the value named is the string itself.
    assert error_of(lambda: int_column(FILE, "kind", [1, 2, "x" * 50])) == (
        f"{FILE} at field 'kind': values are not integers (stored as <U50): "
        f"row 2 holds '{'x' * 40}'"
    )
    # A mixed object column: the first value that is not an int is named.
    assert error_of(lambda: int_column(FILE, "kind", [1, None, 2])) == (
        f"{FILE} at field 'kind': values are not integers (stored as object): row 1 holds 'None'"
    )
    long = "y" * 60
    mixed = np.asarray([1, long], dtype=object)
    assert error_of(lambda: int_column(FILE, "kind", mixed)).endswith(f"row 1 holds '{long[:40]}'")


def test_indexes_inside_the_table_pass_and_the_first_outside_is_named() -> None:
    assert index_column(FILE, "kind", [0, 3], 4, "kinds").tolist() == [0, 3]
    assert error_of(lambda: index_column(FILE, "kind", [0, 4], 4, "kinds")) == (
        f"{FILE} at field 'kind': row 1 holds 4, outside the 4 entries of kinds"
    )
    assert error_of(lambda: index_column(FILE, "track", [-1, 0, 9, 7], 4, "tracks")) == (
        f"{FILE} at field 'track': row 0 holds -1, outside the 4 entries of tracks (2 more like it)"
    )


def test_parallel_lists_must_have_one_length() -> None:
    assert same_lengths(FILE, "flows", {"a": [1, 2], "b": [3, 4]}) == 2
    assert same_lengths(FILE, "flows", {}) == 0
    assert same_lengths(FILE, "flows", {"a": []}) == 0
    assert error_of(lambda: same_lengths(FILE, "flows", {"a": [1, 2], "b": [3]})) == (
        f"{FILE} at flows: parallel lists differ in length (a: 2, b: 1)"
    )


def test_base64_is_strict() -> None:
    assert decode_base64(FILE, "aGk=", "args") == b"hi"
    message = error_of(lambda: decode_base64(FILE, "aGk=!", "args"))
    assert message.startswith(f"{FILE} at args: invalid base64 (")


def test_the_first_value_past_int64_is_named_at_exactly_two_to_the_63() -> None:
    unsigned = np.asarray([0, LIMIT], dtype=np.uint64)
    assert error_of(lambda: int_column(FILE, "ts", unsigned)) == (
        f"{FILE} at field 'ts': values are beyond int64: row 1 holds '{LIMIT}'"
    )
    # -2**63 is the smallest int64: the value after it is the bad one.
    both_ends = np.asarray([-LIMIT, LIMIT], dtype=object)
    assert error_of(lambda: int_column(FILE, "ts", both_ends)) == (
        f"{FILE} at field 'ts': values are beyond int64: row 1 holds '{LIMIT}'"
    )


def test_index_columns_that_are_not_integers_name_the_file_and_field() -> None:
    assert error_of(lambda: index_column(FILE, "name", [0.5, 1.0], 4, "strings")) == (
        f"{FILE} at field 'name': values are not integers (stored as float64): row 0 holds '0.5'"
    )


def test_two_indexes_outside_say_one_more() -> None:
    assert error_of(lambda: index_column(FILE, "kind", [0, 5, 6], 4, "kinds")) == (
        f"{FILE} at field 'kind': row 1 holds 5, outside the 4 entries of kinds (1 more like it)"
    )


def test_python_ints_numpy_would_store_as_floats_or_objects() -> None:
    """numpy keeps [2**63, 0] as float64 and [-1, 2**63] too; the error still says the values
    are integers past int64, naming the exact value. Object arrays of in-range ints convert."""
    assert error_of(lambda: int_column(FILE, "ts", [LIMIT, 0])) == (
        f"{FILE} at field 'ts': values are beyond int64: row 0 holds '{LIMIT}'"
    )
    assert error_of(lambda: int_column(FILE, "ts", [-1, LIMIT])) == (
        f"{FILE} at field 'ts': values are beyond int64: row 1 holds '{LIMIT}'"
    )
    in_range = int_column(FILE, "ts", np.asarray([1, -LIMIT, LIMIT - 1], dtype=object))
    assert in_range.dtype == np.int64 and in_range.tolist() == [1, -LIMIT, LIMIT - 1]
    assert error_of(lambda: int_column(FILE, "ts", [True, False])) == (
        f"{FILE} at field 'ts': values are not integers (stored as bool): row 0 holds 'True'"
    )


def test_an_int64_column_is_returned_without_a_copy() -> None:
    """A saved trace's time columns hold one value per event (millions): an int64 column, as
    Parquet and numpy give it, becomes the trace's column as it is, not a copy through Python
    ints."""
    column = np.asarray([5, -LIMIT, LIMIT - 1], dtype=np.int64)
    checked = int_column(FILE, "ts", column)
    assert checked.dtype == np.int64 and checked.tolist() == [5, -LIMIT, LIMIT - 1]
    assert np.shares_memory(checked, column)
