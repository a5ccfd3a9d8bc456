"""Exact nanoseconds at the edges the property tests do not reach: JSON integer times near the
largest kept, empty chunks, the error's text for a value that is not a number, and the proofs
`int_ns`/`float_ns` give (or refuse) on their own.

Written from the survivors of `readers/chrome/exact.py`. Expected values are worked out here
with Python integers and `decimal`, never by the reader.
"""

from __future__ import annotations

import decimal
import re
from pathlib import Path

import msgspec
import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.chrome import exact
from irprof.trace.columns import MAX_ABS_NS

LARGEST_US = (MAX_ABS_NS - 1) // 1000  # the largest integer microseconds kept: 4611686018427387


def column_of(texts: list[bytes], field: str = "ts") -> list[int]:
    column = exact.NanosecondColumn(Path("trace.json"), field)
    column.add([msgspec.Raw(text) for text in texts])
    return [int(value) for value in column.array()]


def refusal(texts: list[bytes], field: str = "ts", first_row: int = 0) -> TraceFormatError:
    column = exact.NanosecondColumn(Path("dir/trace.json"), field, first_row)
    column.add([msgspec.Raw(text) for text in texts])
    with pytest.raises(TraceFormatError) as caught:
        column.array()
    return caught.value


def test_integer_microseconds_are_kept_exactly_up_to_the_largest() -> None:
    # GIVEN JSON integers whose ns (x 1000) are beyond a double's 53 bits
    micros = [LARGEST_US, -LARGEST_US, 2**52 + 1, 9007199254741, 0, 1]
    found = exact.int_ns(iter(micros), len(micros))
    # THEN each is exactly x 1000, as int64
    assert found is not None and found.dtype == np.int64
    assert found.tolist() == [value * 1000 for value in micros]
    # one past the largest: not proven, the caller reads the text (which refuses it)
    assert exact.int_ns(iter([LARGEST_US + 1]), 1) is None
    assert exact.int_ns(iter([0, -(LARGEST_US + 1)]), 2) is None
    assert exact.int_ns(iter([2**63]), 1) is None  # beyond int64 itself


def test_an_empty_chunk_of_numbers_is_empty() -> None:
    for convert in (exact.int_ns, exact.float_ns):
        found = convert(iter([]), 0)
        assert found is not None and found.dtype == np.int64 and len(found) == 0


def test_a_trace_of_integer_times_keeps_the_largest_start(tmp_path: Path) -> None:
    # GIVEN integer starts read as numbers (no text), the largest one int64 ns keeps
    path = tmp_path / "ints.json"
    events = [(LARGEST_US, 0), (-LARGEST_US, 0), (5, 7)]
    path.write_text(
        '{"traceEvents": ['
        + ",".join(
            f'{{"ph": "X", "name": "e{i}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}'
            for i, (ts, dur) in enumerate(events)
        )
        + "]}"
    )
    trace = read_trace(path)
    found = {trace.name_of(row): int(trace.ts_ns[row]) for row in range(len(trace))}
    assert found == {f"e{i}": ts * 1000 for i, (ts, _) in enumerate(events)}


def test_floats_are_proven_exact_or_left_to_the_text() -> None:
    # GIVEN relative times as doubles: 3-digit ones are exact, a tie is not
    values = [0.125, 1.5, 1234567.875, -2.001]
    found = exact.float_ns(iter(values), len(values))
    assert found is not None and found.dtype == np.int64
    assert found.tolist() == [125, 1500, 1234567875, -2001]
    assert exact.float_ns(iter([0.5015]), 1) is None  # 501.4999.. ns: too near the half
    assert exact.float_ns(iter([float(2**40)]), 1) is None  # epoch-like: the text decides
    assert exact.float_ns(iter([float("nan")]), 1) is None
    assert exact.float_ns(iter([float("inf")]), 1) is None


def test_a_value_that_is_not_a_number_is_shown_up_to_40_bytes() -> None:
    text = b'"' + b"abcdefghij" * 5 + b'"'
    error = refusal([b"1", text], first_row=10)
    assert error.path == str(Path("dir/trace.json"))
    assert error.where == "traceEvents[11] field 'ts'"
    shown = text[:40].decode()
    assert error.problem == (
        f"ts = {shown} is not a number of microseconds (see the Chrome trace event format)"
    )
    assert str(error).startswith(str(Path("dir/trace.json")) + " at traceEvents[11]")


def test_bytes_that_are_not_utf8_are_shown_replaced() -> None:
    error = refusal([b'"\xff\xfeok"'], field="dur")
    assert error.problem.startswith('dur = "\ufffd\ufffdok" is not a number')


def test_a_number_out_of_range_is_named_with_its_file_and_value() -> None:
    # 1e20 us is far past int64 ns: refused by the text path, quoting the value as written
    error = refusal([b"1", b"2", b"1e20"], field="dur", first_row=3)
    assert error.path == str(Path("dir/trace.json"))
    assert error.where == "traceEvents[5] field 'dur'"
    assert error.problem == "dur = 1e20 us " + exact.WHY["dur"]


def test_the_exact_text_path_rounds_and_bounds_like_decimal() -> None:
    limit_us = decimal.Decimal(MAX_ABS_NS) / 1000  # 4611686018427387.904
    texts = [
        b"4611686018427387.903",  # the last ns below the limit
        b"-4611686018427387.903",
        b"1.0005",  # a tie: even
        b"1.0015",
        b"0.0004999",
    ]
    expected = []
    for text in texts:
        value = decimal.Decimal(text.decode()) * 1000
        expected.append(int(value.quantize(decimal.Decimal(1), decimal.ROUND_HALF_EVEN)))
    assert column_of(texts) == expected
    assert abs(expected[0]) < MAX_ABS_NS == int(limit_us * 1000)
    # the limit itself is refused
    assert "is not a finite time" in refusal([b"4611686018427387.904"]).problem


def exact_ns(text: bytes) -> int:
    """`text` microseconds in ns, rounded half to even, with Python's `decimal` at a precision
    that holds every digit."""
    with decimal.localcontext(decimal.Context(prec=200)):
        scaled = decimal.Decimal(text.decode()) * 1000
        return int(scaled.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_EVEN))


PLAIN = re.compile(rb"-?[0-9]{1,16}(\.[0-9]{1,24})?")

# Plain numbers at each bound of the fast path, ties and digits past the rounding digit, and
# the other JSON values (exponents, longer numbers, strings, literals, containers).
TEXTS = [
    b"0", b"7", b"-7", b"1.5", b"-1.5", b"12.25", b"12345678", b"123456789", b"-123456789.5",
    b"1234567890123456", b"4611686018427387.903", b"-4611686018427387.903",
    b"4611686018427387.904", b"-4611686018427387.904", b"4999999999999999", b"5000000000000000",
    b"12345678901234567", b"0.123456789012345678901234", b"0.1234567890123456789012345",
    b"0.0006", b"0.00051", b"0.000500", b"1000.000500", b"0.00250", b"0.00050", b"1.0015",
    b"-0.0005", b"-0.0015", b"1e5", b"1E-3", b"true", b"null", b'"x"', b"[1]", b'{"a":1}',
    b"1" * 30, b"0." + b"1" * 40, b"1",
]  # fmt: skip


def test_the_fast_path_takes_every_plain_number_in_range_and_leaves_the_rest() -> None:
    """`parse_ns` converts every number of at most 16 integer and 24 fraction digits below
    2**62 ns with numpy (no Python object per value: the reader's speed) and hands every other
    value to the exact path, by row and text; the ns it gives are exact."""
    values, left = exact.parse_ns(b",".join(TEXTS) + b",")
    assert len(values) == len(TEXTS) and values.dtype == np.int64

    def plain(text: bytes) -> bool:
        return PLAIN.fullmatch(text) is not None and abs(exact_ns(text)) < MAX_ABS_NS

    assert left == {row: text for row, text in enumerate(TEXTS) if not plain(text)}
    taken = {row: int(values[row]) for row, text in enumerate(TEXTS) if plain(text)}
    assert taken == {row: exact_ns(text) for row, text in enumerate(TEXTS) if plain(text)}


@pytest.mark.parametrize("texts", [[b"123456789", b"1"], [b"-123456789.25"], [b"12345678"]])
def test_integer_parts_of_8_and_9_digits(texts: list[bytes]) -> None:
    values, left = exact.parse_ns(b",".join(texts) + b",")
    assert left == {} and values.tolist() == [exact_ns(text) for text in texts]


@pytest.mark.parametrize("count", [1, 2, 3, 9, 17])
def test_short_values_back_to_back_each_read_from_their_own_digits(count: int) -> None:
    texts = [str(row % 10).encode() for row in range(count)]
    values, left = exact.parse_ns(b",".join(texts) + b",")
    assert left == {}
    assert values.tolist() == [row % 10 * 1000 for row in range(count)]


@pytest.mark.parametrize(
    "texts",
    [
        [b"1.5"] * 3 + [b"2.25", b"3.125"],  # all found where a 3-digit fraction's point is
        [b"1.125", b"2.5", b"7", b"3.25"],  # some not: the search finds the rest
        [b"-1", b"12.5"],
    ],
)
def test_each_point_is_found_whatever_the_mix_of_fraction_lengths(texts: list[bytes]) -> None:
    values, left = exact.parse_ns(b",".join(texts) + b",")
    assert left == {} and values.tolist() == [exact_ns(text) for text in texts]


@pytest.mark.timeout(60)
def test_the_exact_path_is_exact_whatever_the_callers_decimal_context() -> None:
    # GIVEN values only the exact path takes: exponents, digits past any default precision
    texts = [
        b"1.5e15", b"4.611686018427387903e15", b"-4.611686018427387903e15", b"5e-4", b"1.5e-3",
        b"2.5e-3", b"-2.5e-3", b"0.0005" + b"0" * 30 + b"1", b"1" * 12 + b"." + b"0005" + b"0" * 30,
        b"1e-999999999", b"12.3456789e2",
    ]  # fmt: skip
    expected = [exact_ns(text) for text in texts]
    # WHEN the caller's decimal context keeps 3 digits and rounds down
    with decimal.localcontext(decimal.Context(prec=3, rounding=decimal.ROUND_DOWN)):
        found = column_of(texts)
    # THEN every digit still counts, and ties still go to even
    assert found == expected


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "text",
    [
        b"4.611686018427387904e15",  # 2**62 ns: the first refused
        b"-4.611686018427387904e15",
        b"4611686018427387.904",  # the same through the fast path
        b"-4611686018427387.904",
        b"9.3e15",  # past int64 itself
        b"1e999999999",  # refused at once, not after computing 10**(10**9)
        b"-" + b"9" * 30,
    ],
)
def test_a_time_at_or_past_2_62_ns_is_refused_quoting_its_text(text: bytes) -> None:
    error = refusal([b"1", text], field="ts")
    assert error.where == "traceEvents[1] field 'ts'"
    assert error.problem == f"ts = {text[:40].decode()} us {exact.WHY['ts']}"


def test_refused_rows_count_every_value_added_before() -> None:
    column = exact.NanosecondColumn(Path("t.json"), "dur", first_row=100)
    column.add([msgspec.Raw(b"1"), msgspec.Raw(b"2")])
    assert column.array().tolist() == [1000, 2000]
    column.add_ns(np.array([5], np.int64))
    column.add([msgspec.Raw(b"3"), msgspec.Raw(b'"late"')])
    with pytest.raises(TraceFormatError) as caught:
        column.array()
    assert caught.value.where == "traceEvents[104] field 'dur'"


@pytest.mark.parametrize(
    ("chunks", "where"),
    [
        ([[b"1"], [b"2", b'"a,b"']], "traceEvents[2]"),  # the pending value counts
        ([[b'"x"', b'"a,b"']], "traceEvents[0]"),  # the first value that is not a number
        ([[b"-1", b"2.5", b'{"a": 1, "b": 2}']], "traceEvents[2]"),
    ],
)
def test_a_chunk_holding_a_comma_names_its_first_value_that_is_not_a_number(
    chunks: list[list[bytes]], where: str
) -> None:
    column = exact.NanosecondColumn(Path("t.json"), "ts")
    with pytest.raises(TraceFormatError) as caught:
        for chunk in chunks:
            column.add([msgspec.Raw(text) for text in chunk])
        column.array()
    assert caught.value.where == f"{where} field 'ts'"
    assert "is not a number of microseconds" in caught.value.problem


def test_values_added_after_a_read_are_appended_in_order() -> None:
    column = exact.NanosecondColumn(Path("t.json"), "ts")
    assert column.array().dtype == np.int64 and len(column.array()) == 0
    column.add([msgspec.Raw(b"1.5")])
    assert column.array().tolist() == [1500]
    column.add([msgspec.Raw(b"2"), msgspec.Raw(b"-3")])
    column.add_ns(np.array([7, 8], np.int64))
    column.add([msgspec.Raw(b"0.0025")])
    assert column.array().tolist() == [1500, 2000, -3000, 7, 8, 2]
    assert column.array().tolist() == [1500, 2000, -3000, 7, 8, 2]


@pytest.mark.timeout(30)
def test_a_trace_with_a_huge_exponent_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(
        '{"traceEvents": [{"ph": "X", "name": "e", "pid": 1, "tid": 1, "ts": 1, "dur": 2},'
        '{"ph": "X", "name": "f", "pid": 1, "tid": 1, "ts": 1e999999999, "dur": 2}]}'
    )
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    assert caught.value.where == "traceEvents[1] field 'ts'"
