"""A forged `annotated/<level>.mlir` is refused by the views: no negative time, and no more time
attributed than the module's `irprof.summary` says was profiled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from irprof.cli.main import main
from tests.robustness.test_bundle_hostile import annotated_copy

INT64_MAX = 2**63 - 1


def forge(run: Path, pattern: str, replacement: str, count: int = 1) -> Path:
    path = run / "annotated" / "stablehlo.mlir"
    text, done = re.subn(pattern, replacement, path.read_text(), count=count)
    assert done, pattern
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("pattern", "replacement", "expected"),
    [
        (r"total_ns = \d+", f"total_ns = {INT64_MAX}", "more than the"),
        (r"total_ns = \d+", "total_ns = -5000", "'total_ns' = -5000 is negative"),
        (r"irprof.profile = \{count = \d+", "irprof.profile = {count = -1", "'count' = -1"),
        (r"profiled_ns = \d+", "profiled_ns = -7", "'profiled_ns' = -7"),
        (r"total_ns = \d+", 'total_ns = "lots"', "profile attribute is malformed"),
    ],
)
def test_forged_annotation_is_refused_naming_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pattern: str,
    replacement: str,
    expected: str,
) -> None:
    # GIVEN an annotated bundle whose annotated IR was edited by hand
    run = annotated_copy("jax", tmp_path)
    capsys.readouterr()
    path = forge(run, pattern, replacement, count=2)
    # WHEN `top` shows it THEN it exits 2 naming the file and the field, printing no table
    assert main(["top", str(run)]) == 2
    captured = capsys.readouterr()
    assert str(path) in captured.err and expected in captured.err
    assert "Traceback" not in captured.err and "attributed of" not in captured.out


def test_an_untouched_annotation_still_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = annotated_copy("jax", tmp_path)
    assert main(["top", str(run)]) == 0
    assert "attributed of" in capsys.readouterr().out
