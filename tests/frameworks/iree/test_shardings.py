"""XLA's `@Sharding` annotations are dropped before IREE compiles a framework's StableHLO.

JAX's GSPMD lowering writes a sharding constraint (Flax NNX puts one on its RNG keys) as
`stablehlo.custom_call @Sharding`, which IREE's input conversion refuses; on one device it is
an identity, so its users read its operand instead.
"""

from __future__ import annotations

import pytest
from iree.compiler import compile_str, ir

from irprof.frameworks.iree.shardings import drop_sharding_annotations, is_sharding_annotation
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module

NEEDS_FRAMEWORK = False  # IREE's compiler bindings only, no capture: tests/frameworks/conftest.py

MODULE = """
func.func @main(%w: tensor<4x4xf32>, %x: tensor<2x4xf32>, %key: tensor<2xui32>)
    -> (tensor<2x4xf32>, tensor<2xui32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{replicated}"}
      : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = stablehlo.tanh %1 : tensor<2x4xf32>
  %3 = stablehlo.custom_call @Sharding(%key) {backend_config = "", mhlo.sharding = "{replicated}"}
      : (tensor<2xui32>) -> tensor<2xui32>
  %4 = stablehlo.custom_call @other_target(%2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4, %3 : tensor<2x4xf32>, tensor<2xui32>
}
"""


def ops_named(module: ir.Module, name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def test_annotations_are_replaced_by_their_operands() -> None:
    module = parse_module(MODULE, make_context())
    calls = ops_named(module, "stablehlo.custom_call")
    assert [is_sharding_annotation(op) for op in calls] == [True, True, False]

    assert drop_sharding_annotations(module) == 2

    assert module.operation.verify()
    (other,) = ops_named(module, "stablehlo.custom_call")  # another target stays
    (tanh,) = ops_named(module, "stablehlo.tanh")
    (dot,) = ops_named(module, "stablehlo.dot_general")
    assert tanh.operands[0] == dot.results[0]
    (ret,) = ops_named(module, "func.return")
    assert ret.operands[0] == other.results[0]
    key = ret.operands[1]  # the key, read directly from the argument
    assert isinstance(key, ir.BlockArgument) and key.arg_number == 2
    assert drop_sharding_annotations(module) == 0


def test_iree_compiles_the_module_only_without_them() -> None:
    without_other = MODULE.replace(
        "%4 = stablehlo.custom_call @other_target(%2) : (tensor<2x4xf32>) -> tensor<2x4xf32>",
        "%4 = stablehlo.negate %2 : tensor<2x4xf32>",
    )
    module = parse_module(without_other, make_context())
    with pytest.raises(Exception, match="custom_call"):
        compile_str(str(module), target_backends=["llvm-cpu"], input_type="stablehlo")
    drop_sharding_annotations(module)
    assert compile_str(str(module), target_backends=["llvm-cpu"], input_type="stablehlo")
