"""`irprof.cost` attributes: how many ops get one, one known number alone, the counts that
attach and strip return, and reading attributes with fields left out.

Written from the mutants of `mlir/cost_attrs.py` the pass test let through: it checks the
attributes of a real capture, but not the counts the pass reports, an op with only one known
number, the attribute's integer type, or a hand-written attribute missing fields.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from iree.compiler import ir

from irprof.mlir.context import make_context
from irprof.mlir.cost_attrs import COST_ATTR, attach_costs, read_cost, strip_costs
from irprof.mlir.cost_model import OpCost, op_cost
from irprof.mlir.op_index import walk_ops

# AddV2 on 2x3 values: both numbers known. StridedSlice into an unranked result: no FLOPs
# (0, known), bytes unknown. Conv2D and MatMul on an unranked operand: nothing known. Const: free.
BODY = """
func.func @f(%a: tensor<2x3xf32>, %u: tensor<*xf32>) -> () {
  %0 = "tf.AddV2"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "tf.StridedSlice"(%a) : (tensor<2x3xf32>) -> tensor<*xf32>
  %2 = "tf.Conv2D"(%u, %u) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  %3 = "tf.Const"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %4 = "tf.MatMul"(%u, %a) : (tensor<*xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
"""
WITH_WORK_AND_A_NUMBER = ("tf.AddV2", "tf.StridedSlice")


@pytest.fixture
def context() -> Iterator[ir.Context]:
    ctx = make_context()  # honours IRPROF_MLIR_THREADS=0 under mutation testing's forks
    with ctx, ir.Location.unknown():
        yield ctx


def by_name(module: ir.Module) -> dict[str, ir.Operation]:
    return {op.name: op for op in walk_ops(module)}


def test_attach_counts_the_ops_it_writes_and_keeps_a_lone_known_number(
    context: ir.Context,
) -> None:
    module = ir.Module.parse(BODY)
    assert attach_costs(module) == len(WITH_WORK_AND_A_NUMBER)
    ops = by_name(module)
    carrying = sorted(name for name, op in ops.items() if COST_ATTR in op.attributes)
    assert carrying == sorted(WITH_WORK_AND_A_NUMBER)
    add = read_cost(ops["tf.AddV2"])
    assert add is not None and add.flops == 2 * 3 and add.category == "elementwise"
    sliced = read_cost(ops["tf.StridedSlice"])
    assert sliced == op_cost(ops["tf.StridedSlice"])
    assert sliced is not None and sliced.flops == 0 and sliced.bytes is None
    # The numbers are 64-bit signless integers in the IR text.
    text = str(ops["tf.StridedSlice"].attributes[COST_ATTR])
    assert "flops = 0 : i64" in text and "bytes" not in text
    # Attaching again replaces: the count is of this call's ops, not a running total.
    assert attach_costs(module) == len(WITH_WORK_AND_A_NUMBER)


def test_strip_counts_what_it_removes(context: ir.Context) -> None:
    module = ir.Module.parse(BODY)
    assert strip_costs(module) == 0
    attach_costs(module)
    assert strip_costs(module) == len(WITH_WORK_AND_A_NUMBER)
    assert strip_costs(module) == 0
    assert all(COST_ATTR not in op.attributes for op in walk_ops(module))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("{bytes = 8 : i64}", OpCost(None, 8, "")),
        ('{flops = 3 : i64, category = "matmul"}', OpCost(3, None, "matmul")),
        ("{}", OpCost(None, None, "")),
    ],
)
def test_read_cost_leaves_out_what_the_attribute_leaves_out(
    context: ir.Context, fields: str, expected: OpCost
) -> None:
    module = ir.Module.parse(
        f'func.func @f() -> () {{\n  "tf.NoOp"() {{irprof.cost = {fields}}} : () -> ()\n'
        "  return\n}"
    )
    op = by_name(module)["tf.NoOp"]
    assert read_cost(op) == expected
    assert read_cost(by_name(module)["func.return"]) is None
