"""Exact nanoseconds from the decimal text of JSON microseconds, with no Python code per value.

`ts` and `dur` are decoded as `msgspec.Raw` (the number's source text, a view into the chunk);
a chunk's values are joined by `,` in C and parsed here by numpy over the bytes: the integer
digits before the decimal point (or the end) are read 8 at a time as one word (`_integer_part`),
the first three fraction digits give the nanoseconds, the fourth and any non-zero digit after
it round half to even, as `Decimal(text) * 1000` does. No float is involved, so
`1700000000123456.789` us is 1700000000123456789 ns and the tie `0.5015` us is 502 ns (through a
float64 it was 501: 0.5015 is stored as 0.50149999999999994; one tie in five came out wrong that
way). Values outside that shape (an exponent, more than 16 integer digits or 24 fraction
digits, a string or any other JSON value) are few, and each is converted or refused on its own
(`_exact_ns`). Values are parsed in batches of about `BATCH_VALUES` across chunks, so numpy's
per-call cost is paid a few times per file, not per chunk. Chunks whose times are JSON integers,
or floats proven to give the same ns (`int_ns`, `float_ns`), skip the text altogether.
"""

from __future__ import annotations

import decimal
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError
from irprof.trace.columns import MAX_ABS_NS

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

BATCH_VALUES = 1 << 16
SEPARATOR = ord(",")  # never inside a JSON number; a value holding one is parsed on its own
MAX_INT_DIGITS = 16  # 10**16 us is past 2**62 ns: longer integer parts are refused anyway
MAX_FRACTION_DIGITS = 24
_PAD = b"," * (MAX_FRACTION_DIGITS + 8)  # lets fraction digits be gathered past the last value
_LEAD = b"," * 16  # lets the 16 bytes before the first value's point be read as two words
_POW10 = np.array([10**power for power in range(19)], dtype=np.int64)
WHY = {
    "ts": "is not a finite time within int64 nanoseconds (|ts| < 4.6e15 us with the base)",
    "dur": "is not a finite duration within int64 nanoseconds (< 4.6e15 us)",
}


def _is_number(text: bytes) -> bool:
    """Whether a JSON value's text is a number (the alternatives all start otherwise: a string,
    true, false, null, an object or an array)."""
    return text[:1].isdigit() or text[:1] == b"-"


def _exact_ns(text: bytes) -> int | None:
    """Decimal microseconds text -> integer ns, rounded half to even, exactly (any precision,
    whatever the caller's `decimal` context); None when the text is not a JSON number or is
    beyond int64 nanoseconds."""
    if not _is_number(text):
        return None
    value = decimal.Decimal(text.decode())
    if (
        value.adjusted() > 15
    ):  # |value| >= 1e16 us: past 2**62 ns (and no 10**(10**9) for 1e999999999)
        return None
    sign, digits, exponent = value.as_tuple()
    scaled = decimal.Decimal((sign, digits, cast(int, exponent) + 3))  # x 1000: no rounding
    ns = int(scaled.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return ns if -MAX_ABS_NS < ns < MAX_ABS_NS else None


def _refuse(path: Path, field: str, row: int, text: bytes) -> TraceFormatError:
    """The error for the value `text` of `field` at `row` of `traceEvents`."""
    where = f"traceEvents[{row}] field '{field}'"
    shown = text[:40].decode(errors="replace")
    if _is_number(text):
        return TraceFormatError(path, f"{field} = {shown} us {WHY[field]}", where=where)
    return TraceFormatError(
        path,
        f"{field} = {shown} is not a number of microseconds (see the Chrome trace event format)",
        where=where,
    )


def parse_ns(text: bytes) -> tuple[I64, dict[int, bytes]]:
    """ns of the JSON values in `text` (one or more), each followed by `,` (a `,` nowhere
    else), and the text of the rows the fast path leaves to `_exact_ns` (their ns here are
    meaningless): the values not of the shape `-?D{1,16}(.D{1,24})?`, and those at or beyond
    2**62 ns."""
    data = np.frombuffer(_LEAD + text + _PAD, dtype=np.uint8)
    body = data[len(_LEAD) : len(_LEAD) + len(text)]
    separator = body == SEPARATOR
    ends = np.flatnonzero(separator)
    starts = np.concatenate(([0], ends[:-1] + 1))
    negative = body[starts] == ord("-")
    digit = (body - np.uint8(ord("0"))) < 10
    dot = body == ord(".")
    point = _points(body, starts, ends, dot)
    odd_bytes = np.flatnonzero(~(digit | separator | dot))
    odd = np.zeros(len(ends), dtype=np.bool_)
    if len(odd_bytes):
        odd_rows = np.searchsorted(ends, odd_bytes)
        leading_minus = (odd_bytes == starts[odd_rows]) & (body[odd_bytes] == ord("-"))
        odd[odd_rows[~leading_minus]] = True
    first_digit = starts + negative
    int_digits = point - first_digit
    fraction_digits = np.maximum(ends - point - 1, 0)
    odd |= (
        (int_digits < 1) | (int_digits > MAX_INT_DIGITS) | (fraction_digits > MAX_FRACTION_DIGITS)
    )
    # Below 5e15 us, 16 integer digits cannot overflow int64 ns (the range check follows).
    odd |= (int_digits == MAX_INT_DIGITS) & (body[first_digit] > ord("4"))
    fraction_digits = np.where(odd, 0, fraction_digits)  # gathers stay within the padding
    point += len(_LEAD)  # positions in `data` from here on
    total = _integer_part(data, point, int_digits) * 1000
    for place in range(min(3, int(fraction_digits.max()))):
        value = data[point + 1 + place].astype(np.int64) - ord("0")
        total += np.where(place < fraction_digits, value, 0) * _POW10[2 - place]
    if int(fraction_digits.max()) > 3:
        total += _round_half_even(data, point, fraction_digits, total)
    odd |= total >= MAX_ABS_NS
    total[negative] *= -1
    rows = np.flatnonzero(odd).tolist()
    return total, {row: text[int(starts[row]) : int(ends[row])] for row in rows}


def _points(body: U8, starts: I64, ends: I64, dot: npt.NDArray[np.bool_]) -> I64:
    """Each value's decimal point, or its end when it has none. A number holds at most one dot
    (JSON), so each dot is its value's point: looked for first where Kineto puts it (3 fraction
    digits), and when that misses a dot, by a search of every dot's value."""
    point = ends.copy()
    candidate = ends - 4
    hit = (body[np.maximum(candidate, 0)] == ord(".")) & (
        candidate > starts
    )  # within the value, after a digit
    point[hit] = candidate[hit]
    if np.count_nonzero(hit) != np.count_nonzero(dot):
        positions = np.flatnonzero(dot)
        point[np.searchsorted(ends, positions)] = positions
    return point


def _integer_part(data: U8, point: I64, int_digits: I64) -> I64:
    """The integer before each point (up to 16 digits), 8 digits at a time: the 8 bytes before
    the point read as one little-endian uint64 (an unaligned, overlapping view of the bytes),
    the bytes before the number set to "0", and the digits combined pairwise in 3 steps (SWAR:
    b0*10+b1 per 16-bit lane, then *100 per 32-bit lane, then *10000)."""
    words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    value = _eight_digits(words[point - 8], np.maximum(8 - int_digits, 0))
    if int(int_digits.max()) > 8:
        high = _eight_digits(words[point - 16], np.clip(16 - int_digits, 0, 8))
        value += high * np.uint64(10**8)
    return value.astype(np.int64)


_ZEROS = np.uint64(0x3030303030303030)
# Per count of leading bytes that are not the number's: the mask of those (low-order) bytes.
_LEADING_MASK = np.array([(1 << (8 * count)) - 1 for count in range(9)], dtype=np.uint64)


def _eight_digits(words: npt.NDArray[np.uint64], outside: I64) -> npt.NDArray[np.uint64]:
    """The 8-digit numbers in `words` whose first `outside` bytes are not digits of theirs."""
    mask = _LEADING_MASK[outside]
    words = ((words & ~mask) | (_ZEROS & mask)) - _ZEROS
    words = (words * np.uint64(10) + (words >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    words = (words * np.uint64(100) + (words >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    words = (words * np.uint64(10000) + (words >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return words


def _round_half_even(data: U8, point: I64, fraction_digits: I64, total: I64) -> I64:
    """1 where the digits past the nanosecond round |ns| up (half to even), else 0."""
    first = np.where(fraction_digits > 3, data[point + 4], ord("0"))
    beyond = np.zeros(len(total), dtype=np.bool_)
    for place in range(4, int(fraction_digits.max())):
        beyond |= (place < fraction_digits) & (data[point + 1 + place] != ord("0"))
    half = first == ord("5")
    up: npt.NDArray[np.bool_] = (first > ord("5")) | (half & (beyond | (total % 2 == 1)))
    return up.astype(np.int64)


# Largest |us| a JSON integer may have for `value * 1000` to be kept (larger: the text path
# refuses it with its message).
MAX_INT_US = (MAX_ABS_NS - 1) // 1000
# Floats are used only below 2**40 us (12.7 days: relative times, never epoch ones), where a
# double's spacing is at most 2**-13 us. msgspec parses a number to the nearest double (error
# <= 2**-14 us = 0.061 ns) and `f * 1000` rounds once more (|product| < 2**50: error <= 2**-4 =
# 0.0625 ns), so when that product is within FLOAT_MARGIN_NS of an integer n, the text's exact
# ns are within 0.061 + 0.0625 + 0.25 < 0.5 of n: they round to n, whatever digits were lost.
# Anything nearer a half (a tie such as 0.5015 us, which the float cannot tell from 0.50149..)
# goes to the text path.
MAX_FLOAT_US = float(2**40)
FLOAT_MARGIN_NS = 0.25


def int_ns(values: Iterable[int], count: int) -> I64 | None:
    """ns of the `count` JSON integer microseconds (exact: `* 1000`), or None when one is out
    of range."""
    try:
        micros = np.fromiter(values, np.int64, count)
    except OverflowError:
        return None
    if len(micros) and int(np.abs(micros).max()) > MAX_INT_US:
        return None
    return micros * 1000


def float_ns(values: Iterable[int | float], count: int) -> I64 | None:
    """ns of the `count` JSON numbers decoded to doubles, when each is proven to round to the
    same ns as its decimal text (see `FLOAT_MARGIN_NS`); None otherwise (the caller reads the
    text)."""
    try:
        micros = np.fromiter(values, np.float64, count)
    except OverflowError:
        return None
    if not bool(np.all(np.abs(micros) < MAX_FLOAT_US)):  # also False for nan and inf
        return None
    scaled = micros * 1000.0
    nearest = np.rint(scaled)
    if bool(np.any(np.abs(scaled - nearest) > FLOAT_MARGIN_NS)):
        return None
    return nearest.astype(np.int64)


class NanosecondColumn:
    """Exact ns of one field (`ts` or `dur`) of every event added, from their raw JSON values.

    A value that is not a number, or is beyond int64 nanoseconds, raises a TraceFormatError
    naming `path`, the event's index in `traceEvents` (`first_row` + its row) and the field.
    """

    def __init__(self, path: Path, field: str, first_row: int = 0) -> None:
        self.path, self.field, self.first_row = path, field, first_row
        self.parts: list[I64] = []
        self.rows = 0
        self._pending = io.BytesIO()
        self._pending_count = 0

    def add(self, values: Sequence[msgspec.Raw]) -> None:
        """Take one chunk's values (copied out: the chunk's text may be freed afterwards)."""
        if not values:
            return
        joined = b",".join(values)
        if joined.count(b",") != len(values) - 1:  # a value holding a comma is a string
            self._flush()
            texts = [bytes(value) for value in values]
            row = next(row for row, text in enumerate(texts) if not _is_number(text))
            raise self._refuse(row, texts[row])
        self._pending.write(joined)
        self._pending.write(b",")
        self._pending_count += len(values)
        if self._pending_count >= BATCH_VALUES:
            self._flush()

    def add_ns(self, values: I64) -> None:
        """Take one chunk's values already in exact ns (`int_ns`, `float_ns`)."""
        self._flush()
        self._append(values)

    def array(self) -> I64:
        """Every value added, in ns (parsing what is pending)."""
        self._flush()
        if len(self.parts) != 1:
            self.parts = [np.concatenate(self.parts) if self.parts else np.zeros(0, np.int64)]
        return self.parts[0]

    def _flush(self) -> None:
        if not self._pending_count:
            return
        values, left = parse_ns(self._pending.getvalue())
        self._pending, self._pending_count = io.BytesIO(), 0
        for row, text in left.items():
            ns = _exact_ns(text)
            if ns is None:
                raise self._refuse(row, text)
            values[row] = ns
        self._append(values)

    def _append(self, values: I64) -> None:
        self.parts.append(values)
        self.rows += len(values)

    def _refuse(self, row: int, text: bytes) -> TraceFormatError:
        """The error for `text`, the value at `row` of the values not appended yet."""
        return _refuse(self.path, self.field, self.first_row + self.rows + row, text)
