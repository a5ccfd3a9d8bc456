"""The CLI shell: help, version, and that no framework is imported to show them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from irprof import __version__
from irprof.cli.main import main

BLOCK_FRAMEWORKS = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"tensorflow", "jax", "jaxlib", "torch", "xprof", "keras"}:
            raise ImportError(f"blocked framework import: {name}")
        return None
sys.meta_path.insert(0, Block())
import irprof
from irprof.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--help"], ["capture", "--help"]])
def test_help_works_with_no_framework_importable(argv: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_FRAMEWORKS, *argv], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert "no-such-command" in capsys.readouterr().err
