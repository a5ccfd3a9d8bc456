"""`irprof capture iree` end to end, and its refusals (exit 2, IREE's diagnostic, no bundle)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from irprof.cli.main import main

pytestmark = [pytest.mark.iree, pytest.mark.slow]

EXAMPLE = Path(__file__).parents[3] / "examples" / "iree_mlp.stablehlo.mlir"
SMALL = """func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
       : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %1 = stablehlo.tanh %0 : tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}
"""


def test_capture_then_annotate_the_example(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["capture", "iree", str(EXAMPLE), "-o", str(run), "--steps", "3"]) == 0
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    assert manifest["ir_levels"] == ["stablehlo", "flow"]
    assert (run / "trace" / "model.ireeprof").stat().st_size > 0
    assert len(manifest["options"]["executable_sources"]) == 5
    assert main(["annotate", str(run), "--level", "stablehlo"]) == 0
    coverage = orjson.loads((run / "coverage.json").read_bytes())
    record = coverage["levels"]["stablehlo"]
    assert record["attributed_ns"] >= 0.99 * record["profiled_ns"] > 0
    assert "irprof.profile" in (run / "annotated" / "stablehlo.mlir").read_text()


def _refused(tmp_path: Path, source: str, *extra: str) -> str:
    model = tmp_path / "model.mlir"
    model.write_text(source)
    run = tmp_path / "run"
    return_code = main(["capture", "iree", str(model), "-o", str(run), *extra])
    assert return_code == 2
    assert not run.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.mlir"]  # no staging left either
    return str(model)


def test_ir_iree_cannot_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = SMALL.replace("stablehlo.tanh %0", "stablehlo.custom_call @nope(%0)").replace(
        "%1 = stablehlo.custom_call @nope(%0) : tensor<4x2xf32>",
        "%1 = stablehlo.custom_call @nope(%0) : (tensor<4x2xf32>) -> tensor<4x2xf32>",
    )
    model = _refused(tmp_path, bad)
    err = capsys.readouterr().err
    assert model in err and "iree-compile" in err and "error" in err


def test_missing_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _refused(tmp_path, SMALL, "--function", "forward")
    err = capsys.readouterr().err
    assert model in err and "no public function 'forward'" in err and "main" in err


def test_wrong_input_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _refused(tmp_path, SMALL, "--input", "3x8xf32=1", "--input", "8x2xf32=1")
    err = capsys.readouterr().err
    assert model in err and "iree-benchmark-module" in err and "4x8" in err


SORT = """func.func @main(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = "stablehlo.sort"(%a) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %lt = stablehlo.compare LT, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("lt")
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<8x16xf32>) -> tensor<8x16xf32> loc("sort")
  return %0 : tensor<8x16xf32>
}
"""


def test_a_sort_gets_its_comparators_work(tmp_path: Path) -> None:
    """The sort's dispatch computes only the comparator's ops, which keep their own origin; the
    time is the sort's (it applies the comparator per element), not the compare's."""
    model = tmp_path / "sort.mlir"
    model.write_text(SORT)
    run = tmp_path / "run"
    assert main(["capture", "iree", str(model), "-o", str(run), "--steps", "2"]) == 0
    assert main(["annotate", str(run), "--level", "stablehlo"]) == 0
    profile = orjson.loads((run / "opprofile.stablehlo.json").read_bytes())
    timed = {entry["op"]: entry["profile"]["total_ns"] for entry in profile["entries"]}
    assert set(timed) == {"stablehlo.sort"} and timed["stablehlo.sort"] > 0
    record = orjson.loads((run / "coverage.json").read_bytes())["levels"]["stablehlo"]
    assert record["attributed_ns"] == record["profiled_ns"]
    assert [(op["op_name"], op["reason"]) for op in record["unmatched_ops"]] == [
        ("stablehlo.compare", "in a region stablehlo.sort applies, run in its kernel: its time "
         "is the parent's")
    ]  # fmt: skip
    assert record["ops_nontrivial"] == record["ops_nontrivial_annotated"] == 1
