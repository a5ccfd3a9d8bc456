"""Golden tests: each `tests/golden/*.mlir` holds `// RUN: irprof opt %s ...` and FileCheck lines.

The RUN line runs in-process through `irprof.cli.main.main`; its stdout is checked with
`filecheck` (a Python port of LLVM's FileCheck) against the same file. `%s` is the test file,
`%S` its folder.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import irprof.cli.main as cli_main

GOLDEN = Path(__file__).parents[1] / "golden"
FILECHECK = Path(sys.executable).parent / "filecheck"


def _run_line(path: Path) -> list[str]:
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            command = line.removeprefix("// RUN:").strip()
            command = command.replace("%s", str(path)).replace("%S", str(path.parent))
            argv = shlex.split(command)
            assert argv[:2] == ["irprof", "opt"], f"{path.name}: RUN must call irprof opt"
            return argv[1:]
    raise AssertionError(f"{path.name}: no // RUN: line")


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.mlir")), ids=lambda p: p.name)
def test_golden(
    path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only this area's commands: the test must not depend on other commands being importable.
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("irprof.cli.opt_cmd",))
    assert cli_main.main(_run_line(path)) == 0, capsys.readouterr().err
    output = tmp_path / "out.mlir"
    output.write_text(capsys.readouterr().out)
    checked = subprocess.run(
        [str(FILECHECK), str(path), "--input-file", str(output)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr + output.read_text()
