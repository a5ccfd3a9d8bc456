"""`irprof annotate` on broken bundles (exit 2, the file named, nothing written); export chrome."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from irprof.cli.main import main

MLP_RUN = Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_run"


@pytest.fixture(name="run_dir")
def fixture_run_dir(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(MLP_RUN, target)
    return target


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _annotate_fails(run_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    before = _files(run_dir)
    assert main(["annotate", str(run_dir), *extra]) == 2
    assert _files(run_dir) == before  # nothing written, nothing modified
    return capsys.readouterr().err


def test_corrupt_trace_names_the_trace(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xplane = run_dir / "trace" / "jax_mlp.xplane.pb"
    xplane.write_bytes(xplane.read_bytes()[: len(xplane.read_bytes()) // 3])
    err = _annotate_fails(run_dir, capsys)
    assert "jax_mlp.xplane.pb" in err


def test_unparsable_ir_names_file_line_and_column(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ir_path = run_dir / "ir" / "stablehlo.mlir"
    ir_path.write_text(ir_path.read_text().replace("stablehlo.add", "stablehlo.add %%%", 1))
    err = _annotate_fails(run_dir, capsys)
    assert "stablehlo.mlir:" in err


def test_unknown_attribute_layout_is_a_usage_error(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _annotate_fails(run_dir, capsys, "--attr", "bogus")
    assert "--attr" in err or "attr 'bogus'" in err


def test_export_chrome_is_json_a_trace_viewer_opens(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["annotate", str(run_dir)]) == 0
    output = tmp_path / "trace.json"
    assert main(["export", str(run_dir), "--to", "chrome", "-o", str(output)]) == 0
    document = json.loads(output.read_text())
    events = document["traceEvents"]
    slices = [event for event in events if event.get("ph") == "X"]
    assert slices and all(event["dur"] >= 0 for event in slices)
    # every kernel joined to ops is mirrored on an "IR level stablehlo" track of the IR process
    ir_slices = [event for event in slices if event["cat"] == "irprof.op"]
    kernels = [event for event in slices if "irprof" in event.get("args", {})]
    assert ir_slices and len(ir_slices) == sum(len(e["args"]["irprof"]) for e in kernels)
    assert {e["args"]["level"] for e in ir_slices} == {"stablehlo"}
    capsys.readouterr()
