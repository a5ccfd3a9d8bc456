"""The trace file's bytes reach the reader with no other reference, and it frees them early.

The check is structural: when the reader releases the box, the bytes it held must be referred to
by nothing else (no caller's local, no view left by the decode), or the release freed nothing.
Under mutation testing every call goes through mutmut's trampoline, which holds the call's
arguments itself, so those checks cannot hold there and are skipped (`MUTANT_UNDER_TEST` is set
only by mutmut).
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path
from typing import ClassVar

import pytest

import irprof.readers
from irprof.errors import TraceFormatError
from irprof.readers import read_trace, read_trace_bytes
from irprof.readers.chrome.reader import read_chrome
from irprof.readers.trace_bytes import TraceBytes
from irprof.trace.model import Trace

EVENTS = [
    {"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 2, "args": {"n": ts}}
    for ts, name in enumerate(["a", "b", "c"] * 20)
]


class _Recording(TraceBytes):
    """A box that records, at each release, how many references its bytes had besides it."""

    released: ClassVar[list[int]] = []

    def release(self) -> None:
        if self.releasable and self._data is not None:  # two: the box's, getrefcount's argument
            _Recording.released.append(sys.getrefcount(self._data) - 2)
        super().release()


UNDER_MUTMUT = pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ, reason="mutmut's trampolines hold every call's arguments"
)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    _Recording.released = []
    monkeypatch.setattr(irprof.readers, "TraceBytes", _Recording)
    return _Recording.released


def _document(**extra: object) -> bytes:
    return json.dumps({"traceEvents": EVENTS, **extra}).encode()


@UNDER_MUTMUT
@pytest.mark.parametrize("gzipped", [False, True])
def test_read_trace_leaves_the_reader_the_only_reference(
    tmp_path: Path, recording: list[int], gzipped: bool
) -> None:
    path = tmp_path / ("t.json.gz" if gzipped else "t.json")
    path.write_bytes(gzip.compress(_document()) if gzipped else _document())
    trace = read_trace(path)
    assert trace.names() == [event["name"] for event in EVENTS]
    assert trace.arg_column("n") == list(range(len(EVENTS)))  # args read before the release
    assert recording == [0]


@UNDER_MUTMUT
def test_bytes_passed_without_a_reference_are_freed_too(recording: list[int]) -> None:
    trace = read_trace_bytes(Path("t.json"), _document(displayTimeUnit="ns"))
    assert trace.metadata["display_time_unit"] == "ns"  # top-level fields outlive the text
    assert recording == [0]


@UNDER_MUTMUT
def test_given_bytes_are_freed_as_soon_as_a_repaired_copy_replaces_them(
    recording: list[int],
) -> None:
    trace = read_trace_bytes(Path("t.json"), _with_bom_and_invalid_utf8(), "chrome")
    assert "\ufffd" in trace.names() and len(trace) == len(EVENTS)
    assert recording == [0]  # the given bytes; the repaired copy's box is the reader's own


def _with_bom_and_invalid_utf8() -> bytes:
    return b"\xef\xbb\xbf" + _document().replace(b'"a"', b'"\xff"')


def test_a_reader_tried_before_another_cannot_release(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    class _Releasing:
        def __init__(self, name: str) -> None:
            self.name = name

        def sniff(self, head: bytes) -> bool:
            return True

        def read(self, path: Path, data: TraceBytes) -> Trace:
            seen.append(data.releasable)
            if self.name == "first":
                data.release()  # not releasable: the bytes stay for the next reader
                raise TraceFormatError(path, "not mine")
            return read_chrome(path, data)

    readers = [_Releasing("first"), _Releasing("second")]
    monkeypatch.setattr(irprof.readers, "detect_formats", lambda path, data: readers)
    trace = read_trace_bytes(Path("t.json"), _document())
    assert seen == [False, True] and len(trace) == len(EVENTS)


def test_released_bytes_cannot_be_read() -> None:
    box = TraceBytes(b"{}")
    box.release()
    with pytest.raises(RuntimeError, match="after the reader released them"):
        _ = box.data
    kept = TraceBytes(b"{}", releasable=False)
    kept.release()
    assert kept.data == b"{}"
