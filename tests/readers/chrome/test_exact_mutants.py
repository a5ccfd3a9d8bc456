"""Exact nanoseconds at the edges the property tests do not reach: JSON integer times near the
largest kept, empty chunks, the error's text for a value that is not a number, and the proofs
`int_ns`/`float_ns` give (or refuse) on their own.

Written from the survivors of `readers/chrome/exact.py`. Expected values are worked out here
with Python integers and `decimal`, never by the reader.
"""

from __future__ import annotations

import decimal
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
    # 1e20 us is far past int64 ns: refused by the text path with its value as a float
    error = refusal([b"1", b"2", b"1e20"], field="dur", first_row=3)
    assert error.path == str(Path("dir/trace.json"))
    assert error.where == "traceEvents[5] field 'dur'"
    assert error.problem == f"dur = {float(decimal.Decimal('1e20'))!r} us " + exact.WHY["dur"]


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
