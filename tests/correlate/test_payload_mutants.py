"""Payload ops (a linalg body, a reduce's combiner, nested regions of either) and the op that
applies them: `payload_owner` climbs past payload ancestors, `payload_reason` says why such
an op has no time, `payload_owners` maps positions in a module's op list.

Written for `correlate/payload.py`, which only the framework correlators' tests reached. The
owners are read off the module text below.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from iree.compiler import ir

from irprof.correlate.payload import (
    PAYLOAD_REASON,
    payload_owner,
    payload_owners,
    payload_reason,
)
from irprof.mlir.context import make_context
from irprof.mlir.op_index import derive_op_infos, walk_ops

MODULE = """
func.func @f(%x: tensor<4xf32>, %b: tensor<4xf32>, %r: tensor<f32>) -> tensor<f32> {
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<4xf32>)
                       outs(%b : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %0 = stablehlo.reduce(%g init: %r) across dimensions = [0]
      : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
   reducer(%a: tensor<f32>, %c: tensor<f32>) {
    %m = stablehlo.maximum %a, %c : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }
  return %0 : tensor<f32>
}
"""

NESTED = """
func.func @f(%x: tensor<4xf32>, %r: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%x init: %r) across dimensions = [0]
      : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
   reducer(%a: tensor<f32>, %c: tensor<f32>) {
    %s = "stablehlo.map"(%a, %c) ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %m = stablehlo.maximum %p, %q : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) {dimensions = array<i64>} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    stablehlo.return %s : tensor<f32>
  }
  return %0 : tensor<f32>
}
"""


@pytest.fixture(scope="module")
def context() -> Iterator[ir.Context]:
    with make_context() as ctx:
        yield ctx


def named(ops: list[ir.Operation], name: str) -> ir.Operation:
    return next(op for op in ops if op.name == name)


def test_the_owner_of_a_body_and_of_a_combiner(context: ir.Context) -> None:
    module = ir.Module.parse(MODULE)
    ops = walk_ops(module)
    generic, reduce = named(ops, "linalg.generic"), named(ops, "stablehlo.reduce")
    assert payload_owner(named(ops, "arith.mulf")) == generic
    assert payload_owner(named(ops, "linalg.yield")) == generic
    assert payload_owner(named(ops, "stablehlo.maximum")) == reduce
    for top in (generic, reduce, named(ops, "func.return"), named(ops, "func.func")):
        assert payload_owner(top) is None
        assert payload_reason(top) is None
    assert payload_reason(named(ops, "arith.mulf")) == (
        "in a region linalg.generic applies, run in its kernel: its time is the parent's"
    )
    reason = payload_reason(named(ops, "stablehlo.maximum"))
    assert reason is not None and reason.startswith(PAYLOAD_REASON + " ")
    assert PAYLOAD_REASON == "in a region"


def test_a_region_inside_a_region_belongs_to_the_outer_op(context: ir.Context) -> None:
    module = ir.Module.parse(NESTED)
    ops = walk_ops(module)
    reduce = named(ops, "stablehlo.reduce")
    # the maximum is in the map's region, the map in the reduce's: the reduce runs both
    assert payload_owner(named(ops, "stablehlo.maximum")) == reduce
    assert payload_owner(named(ops, "stablehlo.map")) == reduce
    assert payload_reason(named(ops, "stablehlo.maximum")) == (
        "in a region stablehlo.reduce applies, run in its kernel: its time is the parent's"
    )


def test_owners_by_position(context: ir.Context) -> None:
    module = ir.Module.parse(MODULE)
    infos = derive_op_infos(module)
    names = [info.op_name for info in infos]
    position = {name: names.index(name) for name in names}
    assert payload_owners(infos) == {
        position["arith.mulf"]: position["linalg.generic"],
        position["linalg.yield"]: position["linalg.generic"],
        position["stablehlo.maximum"]: position["stablehlo.reduce"],
        position["stablehlo.return"]: position["stablehlo.reduce"],
    }
    # an owner left out of the list is no position: its payload is left out too
    without_generic = [info for info in infos if info.op_name != "linalg.generic"]
    names = [info.op_name for info in without_generic]
    assert payload_owners(without_generic) == {
        names.index("stablehlo.maximum"): names.index("stablehlo.reduce"),
        names.index("stablehlo.return"): names.index("stablehlo.reduce"),
    }
