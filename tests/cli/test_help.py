"""`--help` reads like a conventional CLI at any width: no type on flags, no markup escapes, the
commands in the order of the loop, every line within the terminal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from irprof.cli.typer_app import COMMAND_ORDER

COMMANDS = [[], ["top"], ["diff"], ["annotate"], ["trace", "summary"], ["capture"], ["report"]]


def _help(argv: list[str], columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    done = subprocess.run(
        [sys.executable, "-m", "irprof", *argv, "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "irprof")
def test_help_fits_and_has_no_type_on_flags(argv: list[str], columns: int) -> None:
    text = _help(argv, columns)
    assert "<bool>" not in text
    assert "%%" not in text
    assert "\x1b[" not in text  # plain text, not a rendered panel
    assert "╭" not in text
    too_long = [line for line in text.splitlines() if len(line) > columns]
    assert not too_long, too_long


def test_commands_are_listed_in_loop_order() -> None:
    text = _help([], 100)
    listed = [
        line.split()[0]
        for line in text.split("Commands:", 1)[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert listed[0] == "capture"
    assert listed == [name for name in COMMAND_ORDER if name in listed]
    assert set(listed) == set(COMMAND_ORDER)


def test_a_flag_and_a_valued_option_are_told_apart() -> None:
    text = _help(["top"], 100)
    roofline = next(line for line in text.splitlines() if "--roofline" in line)
    limit = next(line for line in text.splitlines() if "--limit" in line)
    assert roofline.split()[0] == "--roofline" and roofline.split()[1] != "<bool>"
    assert "<int>" in limit
    assert "PCT%" in _help(["diff"], 100).replace("\n", " ")
