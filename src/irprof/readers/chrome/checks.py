"""What the Chrome reader refuses or repairs: bad UTF-8, times beyond int64, wrong field types.

Real profilers write invalid UTF-8 inside strings (PyTorch's profiler has put raw bytes into a
"Call stack" argument), so such bytes are replaced by U+FFFD and counted in `Trace.warnings`
instead of failing the read. Everything that would silently give a wrong number is refused with
the file, the event's index in `traceEvents` and the field: a `ts`, `dur` or end time outside
int64 nanoseconds, a non-finite value, a `baseTimeNanoseconds` that is not an integer. A negative
`dur` is set to 0 and counted, since summing it would subtract time.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError
from irprof.trace.columns import MAX_ABS_NS

I64 = npt.NDArray[np.int64]

REPLACEMENT = "\ufffd"
_REPLACEMENT_BYTES = REPLACEMENT.encode("utf-8")
_REPAIR_CHUNK = 1 << 22


def repair_utf8(data: bytes) -> tuple[bytes, int]:
    """`data` with every invalid UTF-8 sequence replaced by U+FFFD, and how many there were.

    ASCII files (nearly all traces) return at once without a copy; others are checked in
    chunks, so no str of the whole file is ever built.
    """
    if data.isascii():
        return data, 0
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        for start in range(0, len(data), _REPAIR_CHUNK):
            decoder.decode(data[start : start + _REPAIR_CHUNK])
        decoder.decode(b"", final=True)
        return data, 0
    except UnicodeDecodeError:
        pass
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    parts: list[bytes] = []
    for start in range(0, len(data), _REPAIR_CHUNK):
        parts.append(decoder.decode(data[start : start + _REPAIR_CHUNK]).encode("utf-8"))
    parts.append(decoder.decode(b"", final=True).encode("utf-8"))
    repaired = b"".join(parts)
    return repaired, repaired.count(_REPLACEMENT_BYTES) - data.count(_REPLACEMENT_BYTES)


def base_time_ns(path: Path, value: object) -> int:
    """Kineto's `baseTimeNanoseconds` as an int, or a TraceFormatError naming the field."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(
            path,
            f"expected an integer number of nanoseconds, got {type(value).__name__} "
            f"{str(value)[:40]!r}",
            where="top-level field 'baseTimeNanoseconds'",
        )
    if abs(value) >= MAX_ABS_NS:
        raise TraceFormatError(
            path,
            f"{value} is beyond the int64 nanosecond range (|value| < 2**62 expected)",
            where="top-level field 'baseTimeNanoseconds'",
        )
    return value


def _first_bad(
    path: Path, bad: npt.NDArray[np.bool_], values: I64, field: str, why: str, first_row: int
) -> None:
    rows = np.nonzero(bad)[0]
    if len(rows):
        row = int(rows[0])
        more = f" ({len(rows) - 1} more event(s) like it)" if len(rows) > 1 else ""
        raise TraceFormatError(
            path,
            f"{field} = {int(values[row]) / 1000!r} us {why}{more}",
            where=f"traceEvents[{row + first_row}] field '{field}'",
        )


def check_times(path: Path, ts_ns: I64, dur_ns: I64, base_ns: int, first_row: int = 0) -> None:
    """Refuse a start or an end (`ts + dur`) that int64 nanoseconds cannot hold once the base is
    added; `first_row` is the index in `traceEvents` of the first value (a streamed part's
    offset). Each value is already below 2**62 ns in magnitude (`chrome_exact` refuses the
    others), and so is the base, so neither sum wraps before it is checked."""
    start = ts_ns + base_ns
    _first_bad(
        path,
        (start >= MAX_ABS_NS) | (start <= -MAX_ABS_NS),
        ts_ns,
        "ts",
        "is not a finite time within int64 nanoseconds (|ts| < 4.6e15 us with the base)",
        first_row,
    )
    end = start + dur_ns
    _first_bad(
        path,
        (end >= MAX_ABS_NS) | (end <= -MAX_ABS_NS),
        dur_ns,
        "dur",
        "makes the event end beyond int64 nanoseconds",
        first_row,
    )
