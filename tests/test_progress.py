"""Stages of long work: told to a listener in order, nested stages restore the outer one, nothing
without a listener; the CLI shows them on stderr (forced here: tests have no terminal)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from irprof.progress import listen, stage

FIXTURES = Path(__file__).parent / "fixtures"


def test_stages_reach_the_listener_in_order_and_nest() -> None:
    seen: list[str] = []
    with listen(seen.append), stage("reading"):
        with stage("correlating"):
            pass
        with stage("writing"):
            pass
    assert seen == ["reading", "correlating", "reading", "writing", "reading"]


def test_no_listener_no_report_and_the_block_still_runs() -> None:
    ran = []
    with stage("alone"):
        ran.append(1)
    assert ran == [1]


def test_an_exception_leaves_the_stage_and_propagates() -> None:
    seen: list[str] = []
    try:
        with listen(seen.append), stage("outer"), stage("inner"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert seen == ["outer", "inner", "outer"]
    with stage("after"):  # the stack was unwound: nothing is left over
        pass


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "irprof", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )


def test_annotate_shows_its_stages_on_stderr_only_when_asked(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "jax" / "mlp_run", run)
    shown = _run(["annotate", str(run)], {"IRPROF_PROGRESS": "1"})
    assert shown.returncode == 0, shown.stderr
    assert "correlating level stablehlo" in shown.stderr
    assert "annotating stablehlo.mlir" in shown.stderr
    assert "correlating" not in shown.stdout  # the table on stdout stays clean

    quiet = _run(["annotate", str(run)], {"IRPROF_PROGRESS": ""})
    assert quiet.returncode == 0, quiet.stderr
    assert "correlating" not in quiet.stderr  # not a terminal: no spinner


def test_trace_summary_tells_which_file_it_reads() -> None:
    trace = FIXTURES / "traces" / "public" / "trace_filter__sampled_rank-0.json.gz"
    shown = _run(["trace", "summary", str(trace)], {"IRPROF_PROGRESS": "1"})
    assert shown.returncode == 0, shown.stderr
    assert f"reading {trace.name}" in shown.stderr
