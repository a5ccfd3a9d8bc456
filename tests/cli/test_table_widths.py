"""`trace summary` and `dag --critical-path` fit the terminal on real public traces: every line
within the width, one line per row (each row's first cell on its own line), names kept whole or
visibly shortened, never split across lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PUBLIC = Path(__file__).parents[1] / "fixtures" / "traces" / "public"
TRACES = [
    "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
    "trace_filter__sampled_rank-0.json.gz",
]


def _run(argv: list[str], columns: int, tmp_path: Path) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    done = subprocess.run(
        [sys.executable, "-m", "irprof", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )
    return done.stdout


def _body_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


def _assert_fits(text: str, columns: int) -> None:
    too_long = [line for line in text.splitlines() if len(line) > columns]
    assert not too_long, too_long
    # A row that wrapped leaves a continuation line whose first cell is blank.
    wrapped = [row for row in _body_rows(text) if row.split("│")[1].strip() == ""]
    assert not wrapped, wrapped


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
@pytest.mark.parametrize("name", TRACES)
def test_trace_summary_fits(name: str, columns: int, tmp_path: Path) -> None:
    text = _run(["trace", "summary", str(PUBLIC / name)], columns, tmp_path)
    _assert_fits(text, columns)
    # What matters survives every width: each device's window, compute and idle.
    assert "window" in text and "compute" in text and "idle" in text


def test_wide_terminal_shows_every_column(tmp_path: Path) -> None:
    text = _run(["trace", "summary", str(PUBLIC / TRACES[0])], 200, tmp_path)
    for title in ("events", "hidden", "memory only", "idle %", "launch p50", "launch max"):
        assert title in text, title
    assert "ampere_sgemm_128x64_nn" in text  # whole when there is room


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_critical_path_fits(columns: int, tmp_path: Path) -> None:
    name = "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz"
    argv = ["dag", str(PUBLIC / name), "-o", str(tmp_path / "dag.json"), "--critical-path"]
    text = _run(argv, columns, tmp_path)
    _assert_fits(text, columns)
    assert "work on path" in text
