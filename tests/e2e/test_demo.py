"""`irprof demo`: the whole loop on a bundled example writes every output it announces."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from irprof.cli.main import main
from irprof.coverage import load_coverages


def test_demo_runs_the_whole_loop_on_the_jax_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--framework", "jax", "-o", str(out), "-n", "5"]) == 0
    printed = capsys.readouterr().out
    for name in (
        "annotated/stablehlo.mlir",
        "opprofile.stablehlo.json",
        "coverage.json",
        "dag.json",
    ):
        assert (out / name).is_file(), name
    assert (out / "dag.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    page = (out / "report.html").read_text()
    assert "<html" in page[:500].lower()
    # The demo's report has the roofline's roofs, as `irprof report` by hand does.
    assert '"peaks":{"version":1,"gflops":' in page and '"peaks":null' not in page
    coverage = load_coverages(out / "coverage.json")["stablehlo"]
    assert coverage.time_coverage > 0.95
    dag = orjson.loads((out / "dag.json").read_bytes())
    assert dag["nodes"] and "edges" in dag
    assert "level stablehlo:" in printed and "HTML report" in printed
    assert "jit(mlp)/" in printed  # the hottest ops are listed by their IR names


def test_demo_never_deletes_a_directory_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    assert main(["demo", "--framework", "jax", "-o", str(precious)]) == 2
    assert "not a run bundle" in capsys.readouterr().err
    assert (precious / "notes.txt").read_text() == "keep me"


def test_demo_rejects_an_unknown_framework(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--framework", "mxnet"]) == 2
    assert "unknown framework 'mxnet'; known: iree, jax, onnx, tf, torch" in capsys.readouterr().err


def test_coverage_line_counts_ops_seen_running_without_time() -> None:
    from irprof.cli.demo_cmd import coverage_line
    from irprof.coverage import Coverage

    coverage = Coverage("tf", 1000, 1000, 26, 19, 12, 10, ops_untimed=9)
    line = coverage_line(coverage)
    assert "10/19 non-trivial ops annotated" in line
    assert "+9 seen running with no time of their own" in line
