"""Source ops no IREE compute op names: constant-derived, re-indexing, absorbed into a consumer."""

from __future__ import annotations

from iree.compiler import ir

from irprof.frameworks.iree.absorbed import (
    absorb_into_plans,
    absorbing_consumers,
    classify_missing,
    constant_positions,
    feeds_control_flow,
    source_work,
)
from irprof.frameworks.iree.dispatch import DispatchPlan
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import OpInfo, derive_op_infos

SOURCE = """func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = stablehlo.constant dense<2.0> : tensor<4x8xf32>
  %folded = stablehlo.multiply %c, %c : tensor<4x8xf32>
  %e = stablehlo.exponential %x : tensor<4x8xf32>
  %t = stablehlo.transpose %e, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = stablehlo.add %t, %folded : tensor<4x8xf32>
  %unused = stablehlo.negate %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
"""


def _infos() -> tuple[ir.Module, list[OpInfo], dict[str, int]]:
    module = parse_module(SOURCE, make_context())
    infos = derive_op_infos(module)
    return module, infos, {info.op_name: position for position, info in enumerate(infos)}


def test_ops_computed_from_constants_only() -> None:
    _module, infos, at = _infos()
    constant = constant_positions(infos)
    assert at["stablehlo.multiply"] in constant and at["stablehlo.constant"] in constant
    assert at["stablehlo.exponential"] not in constant  # reads the function's argument
    assert at["stablehlo.add"] not in constant


def test_a_missing_op_is_absorbed_into_the_measured_op_it_feeds() -> None:
    _module, infos, at = _infos()
    measured = {at["stablehlo.add"]}
    missing = classify_missing(infos, measured, set(), frozenset({at["func.func"]}))
    # exp reaches the measured add through a transpose (re-indexing: never missing itself)
    assert missing.absorbed == {at["stablehlo.exponential"]: [at["stablehlo.add"]]}
    assert at["stablehlo.negate"] not in missing.absorbed  # feeds nothing measured
    assert at["stablehlo.multiply"] in missing.constant
    assert absorbing_consumers(infos, [at["stablehlo.negate"]], measured) == {}


def test_absorbed_work_joins_the_consumers_plans_in_proportion() -> None:
    _module, infos, at = _infos()
    add, exp = at["stablehlo.add"], at["stablehlo.exponential"]
    first, second = DispatchPlan("d0"), DispatchPlan("d1")
    first.source_weights[add] = 30.0
    second.source_weights[add] = 10.0
    absorb_into_plans([first, second], {exp: [add]}, infos)
    work = source_work(infos[exp].op)
    assert work == 32.0  # 4x8 elements
    assert first.source_weights[exp] == 0.75 * work
    assert second.source_weights[exp] == 0.25 * work


BRANCH = """func.func @main(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %p = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %i = stablehlo.convert %p : (tensor<i1>) -> tensor<i32>
  %r = "stablehlo.case"(%i) ({
    stablehlo.return %a : tensor<f32>
  }, {
    stablehlo.return %b : tensor<f32>
  }) : (tensor<i32>) -> tensor<f32>
  %s = stablehlo.add %r, %a : tensor<f32>
  return %s : tensor<f32>
}
"""


def test_a_branch_predicate_feeds_control_flow() -> None:
    module = parse_module(BRANCH, make_context())
    infos = derive_op_infos(module)
    by_name = {info.op_name: info.op for info in infos}
    assert feeds_control_flow(by_name["stablehlo.compare"])  # through the convert
    assert not feeds_control_flow(by_name["stablehlo.add"])  # only reaches the return


LOOP = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %y = stablehlo.exponential %x : tensor<4xf32>
  %r:2 = stablehlo.while(%i = %zero, %v = %y) : tensor<i32>, tensor<4xf32>
  cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    %t = stablehlo.tanh %v : tensor<4xf32>
    stablehlo.return %next, %t : tensor<i32>, tensor<4xf32>
  }
  %out = stablehlo.negate %r#1 : tensor<4xf32>
  return %out : tensor<4xf32>
}
"""


def test_a_loop_condition_and_its_counter_feed_control_flow() -> None:
    """The condition's compare decides whether the loop goes on; the counter `i + 1` reaches
    it through the carried value; the carried tensor and the ops after the loop do not."""
    module = parse_module(LOOP, make_context())
    by_name = {info.op_name: info.op for info in derive_op_infos(module)}
    assert feeds_control_flow(by_name["stablehlo.compare"])
    assert feeds_control_flow(by_name["stablehlo.add"])
    assert not feeds_control_flow(by_name["stablehlo.tanh"])
    assert not feeds_control_flow(by_name["stablehlo.negate"])
    # the initial values: the counter's start decides, the carried tensor's does not
    infos = derive_op_infos(module)
    zero = next(info.op for info in infos if info.op_name == "stablehlo.constant")
    assert feeds_control_flow(zero)
    assert not feeds_control_flow(by_name["stablehlo.exponential"])  # the carried tensor's start
