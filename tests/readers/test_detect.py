"""Format detection: whitespace, a BOM or an XSpace-looking first byte never fool it; `--format`
overrides it on every command that reads a trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.errors import TraceFormatError
from irprof.readers import detect_formats, read_trace
from irprof.readers.xplane import looks_like_xspace

EVENTS = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}
BODY = json.dumps(EVENTS, indent=2).encode()


@pytest.mark.parametrize(
    "prefix",
    [b"\n", b"\n\n", b"\r\n", b"\t ", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"],
    ids=["newline", "two-newlines", "crlf", "tab-space", "bom", "bom-newline"],
)
def test_json_after_whitespace_or_bom_is_read_as_chrome(tmp_path: Path, prefix: bytes) -> None:
    path = tmp_path / "kineto.json"
    path.write_bytes(prefix + BODY)
    assert [reader.name for reader in detect_formats(path, path.read_bytes())] == ["chrome"]
    trace = read_trace(path)
    assert trace.names() == ["a"] and trace.metadata["format"] == "chrome"


@pytest.mark.parametrize("tag", [0x12, 0x1A, 0x22])
def test_json_behind_another_xspace_tag_byte_is_refused_naming_the_file(
    tmp_path: Path, tag: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN JSON whose first byte is an XSpace field tag (0x0a, a newline, is read above)
    path = tmp_path / "tagged.json"
    path.write_bytes(bytes([tag]) + BODY)
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    assert str(caught.value).startswith(str(path))
    out = tmp_path / "out"
    out.mkdir()
    assert main(["trace", "convert", str(path), "-o", str(out / "events.json")]) == 2
    assert str(path) in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_real_xplane_is_still_detected(fixtures: Path) -> None:
    data = (fixtures / "traces" / "tf_matmul.xplane.pb").read_bytes()
    assert looks_like_xspace(data[:4096])
    assert [reader.name for reader in detect_formats(Path("x"), data)] == ["xplane"]


def test_xspace_sniff_checks_the_first_field() -> None:
    plane = b"\x12\x04host"  # XPlane.name = "host"
    assert looks_like_xspace(b"\x0a" + bytes([len(plane)]) + plane)
    # The plane's length runs past the end of a (short, hence whole) file.
    assert not looks_like_xspace(b"\x0a\x40" + plane)
    # Inside the plane, a newline is not an XPlane field (id is a varint, tag 0x08).
    assert not looks_like_xspace(b"\x0a\x7b\x0a" + b"\x01" * 200)
    # Text with no control byte is JSON, whatever its first byte says.
    assert not looks_like_xspace(b'\n{\n  "schemaVersion": 1,' + b" " * 200)


def test_format_option_overrides_detection(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a truncated XSpace: no sniff accepts it, `--format xplane` says what is wrong
    broken = tmp_path / "cut.xplane.pb"
    broken.write_bytes(b"\x0a\xc8\x01abc")
    with pytest.raises(TraceFormatError, match=r"unknown trace format.*--format"):
        read_trace(broken)
    with pytest.raises(TraceFormatError, match="corrupt XPlane protobuf"):
        read_trace(broken, "xplane")
    # AND a JSON trace forced through the XPlane reader fails naming the file, on every command
    path = tmp_path / "trace.json"
    path.write_bytes(b"\n" + BODY)
    out = tmp_path / "out"
    out.mkdir()
    for argv in (
        ["trace", "summary", str(path), "--format", "xplane"],
        ["trace", "convert", str(path), "-o", str(out / "e.json"), "--format", "xplane"],
        ["dag", str(path), "-o", str(out / "dag.json"), "--format", "xplane"],
    ):
        assert main(argv) == 2
        assert str(path) in capsys.readouterr().err
    assert list(out.iterdir()) == []
    assert main(["dag", str(path), "-o", str(out / "dag.json"), "--format", "chrome"]) == 0
    assert main(["dag", str(path), "-o", str(out / "dag.json"), "--format", "nope"]) == 2
