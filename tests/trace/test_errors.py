"""Bad trace input: one clear message naming the file, exit code 2, no output file left."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.errors import TraceFormatError
from irprof.readers import read_trace

GOOD_EVENTS = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]


def truncated_gzip(path: Path) -> None:
    path.write_bytes(gzip.compress(json.dumps(GOOD_EVENTS * 50).encode())[:40])


def corrupt_protobuf(path: Path) -> None:
    # Field 1 (planes) claims 200 bytes of payload but only 3 follow.
    path.write_bytes(b"\x0a\xc8\x01abc")


def not_a_trace(path: Path) -> None:
    path.write_text(json.dumps({"name": "package.json", "version": "1.0"}))


def empty_file(path: Path) -> None:
    path.write_bytes(b"")


def empty_trace(path: Path) -> None:
    path.write_text(json.dumps({"traceEvents": []}))


def unknown_format(path: Path) -> None:
    path.write_bytes(b"\x89PNG\r\n\x1a\n not a trace")


def wrong_event_types(path: Path) -> None:
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "ts": "soon"}]}))


def broken_json(path: Path) -> None:
    path.write_text('{"traceEvents": [{"ph": "X", "name": ')


BAD_INPUTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated gzip": (truncated_gzip, "gzip"),
    # Its first field overruns the file, so no reader claims it; `--format xplane` says more.
    "corrupt protobuf": (corrupt_protobuf, "unknown trace format"),
    "json not a trace": (not_a_trace, "no 'traceEvents'"),
    "empty file": (empty_file, "empty"),
    "empty trace": (empty_trace, "no events"),
    "unknown format": (unknown_format, "unknown trace format"),
    "wrong event types": (wrong_event_types, "traceEvents[0] field 'ts'"),
    "broken json": (broken_json, "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_reader_raises_trace_format_error_naming_file(tmp_path: Path, case: str) -> None:
    make, problem = BAD_INPUTS[case]
    path = tmp_path / "input.trace"
    make(path)
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
@pytest.mark.parametrize(
    "command",
    [
        ["trace", "convert", "{input}", "-o", "{out}/events.json"],
        ["trace", "convert", "{input}", "-o", "{out}/events.parquet"],
        ["trace", "summary", "{input}"],
        ["dag", "{input}", "-o", "{out}/dag.json", "--svg", "{out}/dag.svg"],
    ],
    ids=["convert-json", "convert-parquet", "summary", "dag"],
)
def test_cli_exits_2_names_the_file_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: list[str]
) -> None:
    make, _problem = BAD_INPUTS[case]
    path = tmp_path / "input.trace"
    make(path)
    out = tmp_path / "out"
    out.mkdir()
    before = path.read_bytes()
    argv = [part.format(input=path, out=out) for part in command]
    assert main(argv) == 2
    assert str(path) in capsys.readouterr().err
    assert list(out.iterdir()) == []
    assert path.read_bytes() == before  # inputs are never modified


def test_missing_file_and_ambiguous_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        read_trace(tmp_path / "absent.json")
    for name in ("a.xplane.pb", "b.xplane.pb"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(TraceFormatError, match="pass one of them"):
        read_trace(tmp_path)


def test_directory_with_one_trace_is_read(tmp_path: Path, fixtures: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "2026_01_01"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes((fixtures / "traces" / "tf_matmul.xplane.pb").read_bytes())
    assert len(read_trace(tmp_path)) > 0


def test_unknown_output_suffix_and_reader_name_are_usage_errors(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = fixtures / "traces" / "torch_mlp.trace.json.gz"
    assert main(["trace", "convert", str(trace), "-o", str(tmp_path / "x.csv")]) == 2
    assert ".json or .parquet" in capsys.readouterr().err
    assert main(["trace", "summary", str(trace), "--format", "nope"]) == 2
    assert "chrome" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
