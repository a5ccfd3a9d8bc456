"""Origins survive real lowering; the lowered IR is re-annotated from the upper level's profile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, write_module
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.mlir.profile_attrs import get_profile
from irprof.mlir.reattach import reattach
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData
from irprof.passes.pipeline import run_pipeline

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"
IREE_COMPILE = Path(sys.executable).parent / "iree-compile"

MATMUL_RELU = """
func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
       outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32> loc("model.py":3:5)
  %1 = tensor.empty() : tensor<4x16xf32> loc("model.py":4:5)
  %2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%0 : tensor<4x16xf32>) outs(%1 : tensor<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32 loc("model.py":4:9)
    %r = arith.maximumf %in, %zero : f32 loc("model.py":4:9)
    linalg.yield %r : f32 loc("model.py":4:9)
  } -> tensor<4x16xf32> loc("model.py":4:5)
  return %2 : tensor<4x16xf32> loc("model.py":5:3)
} loc("model.py":1:1)
"""


def _upper_profile(module_infos: list[OpInfo], level: str, op_names: set[str]) -> OpProfile:
    """An origin-keyed profile of the named upper ops, as a correlator would write it."""
    entries = []
    for number, info in enumerate(i for i in module_infos if i.op_name in op_names):
        data = ProfileData.from_durations(
            [1000 * (number + 1)], 50 + number, 100_000, kernels=[f"kernel{number}"]
        )
        entries.append(OpProfileEntry(OpKey(origin=info.key.origin), data, info.op_name))
    return OpProfile(level=level, framework="test", entries=tuple(entries))


def test_linalg_origins_survive_bufferize_and_loops() -> None:
    context = make_context()
    module = load_module(MATMUL_RELU, context)
    run_pipeline(
        module, "builtin.module(irprof-stamp-origin{level=linalg}, irprof-copy-loc-to-body)"
    )
    upper_infos = derive_op_infos(module)
    upper = _upper_profile(upper_infos, "linalg", {"linalg.matmul", "linalg.generic"})
    matmul_origin = next(i.key.origin for i in upper_infos if i.op_name == "linalg.matmul")
    run_pipeline(
        module,
        "builtin.module(one-shot-bufferize{bufferize-function-boundaries}, "
        "func.func(convert-linalg-to-loops), canonicalize)",
    )
    lowered = derive_op_infos(module)
    assert not any(i.op_name.startswith("linalg.") for i in lowered)
    lower = reattach(module, upper, level="loops")
    mulf = next(i for i in lowered if i.op_name == "arith.mulf")
    data = get_profile(mulf.op)
    assert data is not None and data.total_ns == 1000 and data.kernels == ("kernel0",)
    assert data.source.startswith(f"reattach:{matmul_origin} split ")
    maximum = next(i for i in lowered if i.op_name == "arith.maximumf")
    max_data = get_profile(maximum.op)
    assert max_data is not None and max_data.total_ns == 2000
    loads = [i for i in lowered if i.op_name == "memref.load" and get_profile(i.op) is not None]
    assert len(loads) == 4  # three in the matmul nest, one in the relu nest
    assert len(lower.entries) == sum(1 for i in lowered if get_profile(i.op) is not None)
    assert lower.level == "loops" and lower.totals["reattached_from"] == "linalg"


def _lowered_to_loops() -> tuple[ir.Module, OpProfile]:
    """MATMUL_RELU stamped at linalg, its linalg profile, then lowered to loops."""
    module = load_module(MATMUL_RELU, make_context())
    run_pipeline(
        module, "builtin.module(irprof-stamp-origin{level=linalg}, irprof-copy-loc-to-body)"
    )
    upper = _upper_profile(derive_op_infos(module), "linalg", {"linalg.matmul", "linalg.generic"})
    run_pipeline(
        module,
        "builtin.module(one-shot-bufferize{bufferize-function-boundaries}, "
        "func.func(convert-linalg-to-loops), canonicalize)",
    )
    return module, upper


def test_reattach_in_the_compact_layout_reads_back_as_the_per_op_layout() -> None:
    per_op, upper = _lowered_to_loops()
    compact, _ = _lowered_to_loops()
    expected = reattach(per_op, upper, level="loops")
    written = reattach(compact, upper, level="loops", layout="compact")
    assert written.entries == expected.entries
    text = str(compact)
    assert text.count("irprof.profile_table") == 1 and "irprof.profile =" not in text
    pairs = list(zip(derive_op_infos(per_op), derive_op_infos(compact), strict=True))
    assert [get_profile(a.op) for a, _ in pairs] == [get_profile(b.op) for _, b in pairs]
    assert sum(get_profile(b.op) is not None for _, b in pairs) == len(expected.entries) > 0


@pytest.mark.skipif(not IREE_COMPILE.exists(), reason="iree-compile is part of iree-base-compiler")
def test_stablehlo_origins_survive_iree_compile_to_flow(tmp_path: Path) -> None:
    context = make_context()
    module = load_module(FIXTURES / "jax.stablehlo.mlir", context)
    run_pipeline(module, "builtin.module(irprof-stamp-origin{level=stablehlo})")
    upper_infos = derive_op_infos(module)
    compute = {"stablehlo.dot_general", "stablehlo.maximum", "stablehlo.tanh"}
    upper = _upper_profile(upper_infos, "stablehlo", compute)
    stamped = tmp_path / "stamped.mlir"
    write_module(stamped, module)
    flow = tmp_path / "flow.mlir"
    subprocess.run(
        [str(IREE_COMPILE), str(stamped), "--compile-to=flow", "--mlir-print-debuginfo",
         "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "-o", str(flow)],
        check=True, capture_output=True,
    )  # fmt: skip
    lowered = load_module(flow, context)
    reattach(lowered, upper, level="flow")
    by_origin = {e.key.origin: e.data for e in upper.entries}
    infos = derive_op_infos(lowered)
    matmuls = [i for i in infos if i.op_name == "linalg.matmul"]
    assert len(matmuls) == 2
    for matmul in matmuls:
        data = get_profile(matmul.op)
        assert data is not None
        origin = matmul.keys.origins[0]
        assert data.total_ns == by_origin[origin].total_ns
        assert data.source.startswith(f"reattach:{origin}")
    tanh = next(i for i in infos if i.op_name == "math.tanh")
    tanh_data = get_profile(tanh.op)
    assert tanh_data is not None and tanh_data.kernels == by_origin[tanh.keys.origins[0]].kernels
    dispatches = [i for i in infos if i.op_name == "flow.dispatch"]
    assert len(dispatches) == 2 and all(get_profile(d.op) is not None for d in dispatches)
