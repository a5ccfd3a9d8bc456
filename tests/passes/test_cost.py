"""`irprof opt -p 'builtin.module(irprof-cost)'`: the cost model as `irprof.cost` attributes on
the real JAX capture's StableHLO, and `irprof-cost{remove=true}` giving the input back."""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from irprof.cli.main import main
from irprof.mlir.context import make_context
from irprof.mlir.cost_attrs import COST_ATTR, read_cost
from irprof.mlir.load import load_module
from irprof.mlir.op_index import walk_ops

F32 = 4


def opt(source: Path, pipeline: str, out: Path) -> ir.Module:
    argv = ["opt", str(source), "--pass-pipeline", pipeline, "-o", str(out)]
    assert main(argv) == 0
    return load_module(out, make_context())


def test_cost_pass_writes_flops_and_bytes_and_remove_restores_the_input(
    fixtures: Path, tmp_path: Path
) -> None:
    source = fixtures / "jax" / "mlp_run" / "ir" / "stablehlo.mlir"
    costed = opt(source, "builtin.module(irprof-cost)", tmp_path / "costed.mlir")
    ops = walk_ops(costed)
    dots = {
        tuple(ir.RankedTensorType(op.operands[0].type).shape): read_cost(op)
        for op in ops
        if op.name == "stablehlo.dot_general"
    }
    dense = dots[(16, 6272)]
    assert dense is not None and dense.category == "matmul"
    assert dense.flops == 2 * 16 * 128 * 6272
    assert dense.bytes == (16 * 6272 + 6272 * 128 + 16 * 128) * F32
    broadcast = next(read_cost(op) for op in ops if op.name == "stablehlo.broadcast_in_dim")
    assert broadcast is not None and broadcast.flops == 0 and broadcast.category == "copy"
    # No work, no attribute: constants, calls (their callee's ops carry it), a reduce's body.
    for op in ops:
        if op.name in ("stablehlo.constant", "func.call", "func.func") or (
            op.parent is not None and op.parent.name == "stablehlo.reduce"
        ):
            assert COST_ATTR not in op.attributes, op.name
    restored = tmp_path / "restored.mlir"
    opt(tmp_path / "costed.mlir", "builtin.module(irprof-cost{remove=true})", restored)
    plain = tmp_path / "plain.mlir"
    assert main(["opt", str(source), "-o", str(plain)]) == 0
    assert restored.read_text() == plain.read_text()
    assert COST_ATTR in (tmp_path / "costed.mlir").read_text()


def test_unranked_ops_get_no_cost(fixtures: Path, tmp_path: Path) -> None:
    source = fixtures / "tf" / "cnn-infer" / "ir" / "tf.mlir"
    costed = opt(source, "builtin.module(irprof-cost)", tmp_path / "tf.mlir")
    convs = [op for op in walk_ops(costed) if op.name == "tf.Conv2D"]
    assert convs and all(read_cost(op) is None for op in convs)  # `tensor<*xf32>`: unknown
