"""`readers/__init__.py` (the `irprof.readers` package): which file of a directory is read, the
errors for a missing, empty or eventless trace and an unknown format name, and the message when
every reader that accepted the bytes fails."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import irprof.readers
from irprof.errors import TraceFormatError, UsageError
from irprof.progress import listen
from irprof.readers import (
    detect_format,
    detect_formats,
    read_trace,
    read_trace_bytes,
    resolve_trace_file,
)
from irprof.trace.io import EVENTS_FORMAT
from irprof.trace.model import Trace

EVENTS = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}
BODY = json.dumps(EVENTS).encode()


def test_a_file_is_its_own_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(BODY)
    assert resolve_trace_file(path) == path


def test_the_first_pattern_with_files_decides_before_later_ones(tmp_path: Path) -> None:
    """One xplane.pb beside two JSON files is the one read; JSON alone is read when there is
    no xplane; a directory named like a trace is not one."""
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "a.json").write_bytes(BODY)
    (tmp_path / "b.json").write_bytes(BODY)
    (tmp_path / "deep" / "er" / "host.xplane.pb").write_bytes(b"")
    assert resolve_trace_file(tmp_path) == tmp_path / "deep" / "er" / "host.xplane.pb"
    only_json = tmp_path / "only_json"
    only_json.mkdir()
    (only_json / "dir.xplane.pb").mkdir()  # a directory, not a file
    (only_json / "t.pt.trace.json").write_bytes(BODY)
    assert resolve_trace_file(only_json) == only_json / "t.pt.trace.json"


def test_several_files_of_one_pattern_are_listed_five_at_most(tmp_path: Path) -> None:
    for number in range(7):
        (tmp_path / f"r{number}.json.gz").write_bytes(b"")
    with pytest.raises(TraceFormatError) as raised:
        resolve_trace_file(tmp_path)
    listing = ", ".join(f"r{number}.json.gz" for number in range(5))
    assert str(raised.value) == (
        f"{tmp_path}: holds 7 *.json.gz files ({listing}); pass one of them"
    )


def test_a_directory_without_a_trace_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no trace")
    with pytest.raises(TraceFormatError) as raised:
        resolve_trace_file(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path}: directory holds no trace file (*.xplane.pb or *.json[.gz])"
    )
    with pytest.raises(TraceFormatError) as missing:
        resolve_trace_file(tmp_path / "absent")
    assert str(missing.value) == f"{tmp_path / 'absent'}: no such file or directory"


@pytest.mark.parametrize("data", [b"", b" \n\t\r\n"])
def test_empty_or_blank_bytes_are_an_empty_file(data: bytes) -> None:
    with pytest.raises(TraceFormatError) as raised:
        read_trace_bytes(Path("t.json"), data)
    assert str(raised.value) == "t.json: file is empty"


def test_a_trace_without_events_names_the_reader() -> None:
    with pytest.raises(TraceFormatError) as raised:
        read_trace_bytes(Path("t.json"), b'{"traceEvents": []}')
    assert str(raised.value) == "t.json: chrome trace contains no events"


def test_an_unknown_format_name_is_a_usage_error_naming_the_file() -> None:
    with pytest.raises(UsageError) as raised:
        read_trace_bytes(Path("t.json"), BODY, "nope")
    assert str(raised.value).startswith(
        "t.json: unknown trace format 'nope'; known: chrome, events, "
    )


def test_a_named_format_is_read_without_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, data: bytes) -> None:
        raise AssertionError("detected although a format was named")

    monkeypatch.setattr(irprof.readers, "detect_formats", refuse)
    assert read_trace_bytes(Path("t.json"), BODY, "chrome").names() == ["a"]


@pytest.mark.parametrize(
    ("error", "told"),
    [(PermissionError(13, "Permission denied"), "Permission denied"), (OSError("odd"), "odd")],
)
def test_a_file_that_cannot_be_read_is_a_trace_format_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, told: str
) -> None:
    """The OS's reason (or the error itself when it has none) follows `cannot read:`."""
    path = tmp_path / "t.json"
    path.write_bytes(BODY)

    def refuse(self: Path) -> bytes:
        raise error

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(TraceFormatError) as raised:
        read_trace(path)
    assert str(raised.value) == f"{path}: cannot read: {told}"
    assert raised.value.__cause__ is error


@dataclass(frozen=True)
class _Failing:
    name: str
    problem: str
    where: str | None = None

    def sniff(self, head: bytes) -> bool:
        return True

    def read(self, path: Path, data: bytes) -> Trace:
        raise TraceFormatError(path, self.problem, where=self.where)


def test_when_every_reader_fails_the_first_error_leads_and_the_others_follow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readers = [_Failing("one", "bad tag", "byte 3"), _Failing("two", "not JSON"),
               _Failing("three", "no rows")]  # fmt: skip
    monkeypatch.setattr(irprof.readers, "detect_formats", lambda path, data: readers)
    with pytest.raises(TraceFormatError) as raised:
        read_trace_bytes(Path("t.bin"), b"\x0a\x01")
    error = raised.value
    assert str(error) == (
        "t.bin at byte 3: bad tag (read as one; also tried as two: not JSON; as three: no rows)"
    )
    assert isinstance(error.__cause__, TraceFormatError) and error.__cause__.problem == "bad tag"


def test_a_single_failing_reader_raises_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        irprof.readers, "detect_formats", lambda path, data: [_Failing("one", "bad", "row 2")]
    )
    with pytest.raises(TraceFormatError) as raised:
        read_trace_bytes(Path("t.bin"), b"\x0a\x01")
    assert str(raised.value) == "t.bin at row 2: bad"


def test_the_first_reader_that_accepts_the_bytes_is_the_format() -> None:
    """An irprof events.json is JSON too: both accept it, registration order picks `events`."""
    data = b'{"format": "' + EVENTS_FORMAT.encode() + b'", "events": []}'
    assert [reader.name for reader in detect_formats(Path("e.json"), data)] == ["events", "chrome"]
    assert detect_format(Path("e.json"), data).name == "events"
    assert detect_format(Path("t.json"), BODY).name == "chrome"


def test_bytes_no_reader_accepts_are_an_unknown_format_naming_the_formats() -> None:
    with pytest.raises(TraceFormatError) as raised:
        detect_format(Path("t.bin"), b"\x89PNG\r\n")
    assert str(raised.value) == (
        "t.bin: unknown trace format: not an XPlane protobuf (*.xplane.pb), Chrome trace JSON "
        "or an irprof events.json/events.parquet (known formats: chrome, events, iree-profile, "
        "onnxruntime, parquet, xplane); pass --format to choose one"
    )


def test_reading_is_told_as_a_stage_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(BODY)
    told: list[str] = []
    with listen(told.append):
        read_trace(path)
    assert told == ["reading t.json"]
