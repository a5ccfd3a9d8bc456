"""Bytes a group of ops moves, on small modules whose boundary traffic is counted by hand: ops
in a loop with and without the loop, values handed through chains of calls, results of calls
into the group, external functions, a call argument read partly outside, ops that call without
being `func.call`, a linalg body among the members and a member of unknown FLOPs.

Written from the survivors of `mlir/cost_groups.py`. Every tensor is `tensor<4xf32>` (16 bytes)
unless said otherwise; a value crossing the boundary twice (read by two members) counts once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from iree.compiler import ir

from irprof.mlir.context import make_context
from irprof.mlir.cost_groups import call_graph, group_cost
from irprof.mlir.op_index import walk_ops

T = "tensor<4xf32>"
TILE = 4 * 4  # bytes of one tensor<4xf32>
PARSED: list[ir.Module] = []  # keeps the parsed modules (and their ops) alive


@pytest.fixture(scope="module")
def context() -> Iterator[ir.Context]:
    with make_context() as ctx:
        yield ctx
    PARSED.clear()


def parse(text: str) -> tuple[ir.Module, list[ir.Operation]]:
    module = ir.Module.parse(text.replace("T", T))
    PARSED.append(module)
    return module, walk_ops(module)


def ops_named(ops: list[ir.Operation], name: str) -> list[ir.Operation]:
    return [op for op in ops if op.name == name]


LOOP = """
func.func @loop(%x: T, %lb: index, %ub: index, %st: index) -> T {
  %c = stablehlo.constant dense<1.0> : T
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (T) {
    %n = stablehlo.add %acc, %c : T
    scf.yield %n : T
  }
  return %r : T
}
"""


def test_an_op_in_a_loop_without_the_loop(context: ir.Context) -> None:
    # the loop's carried value and the constant come in, the sum goes out to the yield
    _, ops = parse(LOOP)
    (add,) = ops_named(ops, "stablehlo.add")
    cost = group_cost([add], call_graph(ops[0]))
    assert cost.bytes == 3 * TILE
    assert cost.flops == 4


def test_a_loop_with_the_op_in_it(context: ir.Context) -> None:
    # x in and the loop's result out (the index bounds are scalars: 0 bytes); inside, the
    # carried value is the loop's own and the yield is in the loop; the constant comes in
    module, ops = parse(LOOP)
    (loop,) = ops_named(ops, "scf.for")
    (add,) = ops_named(ops, "stablehlo.add")
    assert group_cost([loop, add], call_graph(module)).bytes == 3 * TILE


NOT_A_FUNC_CALL = """
module {
  func.func @main(%x: T, %b: T) -> T {
    %0 = stablehlo.add %x, %b : T
    %1 = "x.call"(%0) {callee = @relu} : (T) -> T
    return %1 : T
  }
  func.func private @relu(%a: T) -> T {
    %0 = stablehlo.maximum %a, %a : T
    return %0 : T
  }
}
"""


def test_an_op_that_names_a_callee_is_not_followed_unless_it_is_func_call(
    context: ir.Context,
) -> None:
    # x and b in; the sum goes out to `x.call`, @relu's argument comes in (no func.call reaches
    # it) and its result goes out: five tiles
    module, ops = parse(NOT_A_FUNC_CALL)
    members = [*ops_named(ops, "stablehlo.add"), *ops_named(ops, "stablehlo.maximum")]
    assert group_cost(members, call_graph(module)).bytes == 5 * TILE


CHAIN = """
module {
  func.func @main(%x: T, %b: T) -> T {
    %0 = stablehlo.add %x, %b : T
    %1 = func.call @outer(%0) : (T) -> T
    return %1 : T
  }
  func.func private @outer(%a: T) -> T {
    %0 = func.call @inner(%a) : (T) -> T
    return %0 : T
  }
  func.func private @inner(%a: T) -> T {
    %0 = stablehlo.maximum %a, %a : T
    return %0 : T
  }
}
"""


def test_a_value_handed_through_two_calls(context: ir.Context) -> None:
    # the sum reaches the maximum through @outer and @inner: inside; the maximum's result is
    # returned through both calls and by @main, which nothing calls: out. x, b and that result
    module, ops = parse(CHAIN)
    members = [*ops_named(ops, "stablehlo.add"), *ops_named(ops, "stablehlo.maximum")]
    assert group_cost(members, call_graph(module)).bytes == 3 * TILE
    # without the call graph the calls are boundaries: the sum out, @inner's argument in
    assert group_cost(members).bytes == 5 * TILE


CALL_RESULT = """
module {
  func.func @main(%x: T, %b: T) -> T {
    %0 = func.call @ident(%x) : (T) -> T
    %1 = stablehlo.add %0, %b : T
    return %1 : T
  }
  func.func private @ident(%a: T) -> T {
    %0 = stablehlo.negate %a : T
    %1 = stablehlo.abs %0 : T
    return %a : T
  }
}
"""


def test_a_call_result_is_what_the_callee_returns(context: ir.Context) -> None:
    # @ident returns its argument (x, from outside), not the negation (a member): the call's
    # result comes in, b comes in, the sum goes out; the negation reads @ident's argument
    # (in) and its result goes to `abs` (out)
    module, ops = parse(CALL_RESULT)
    members = [*ops_named(ops, "stablehlo.add"), *ops_named(ops, "stablehlo.negate")]
    assert group_cost(members, call_graph(module)).bytes == 5 * TILE


EXTERNAL = """
module {
  func.func @main(%x: T, %b: T) -> T {
    %0 = stablehlo.add %x, %b : T
    %1 = func.call @ext(%0) : (T) -> T
    %2 = stablehlo.multiply %1, %b : T
    return %2 : T
  }
  func.func private @ext(T) -> T
}
"""


def test_a_call_to_an_external_function_is_a_boundary(context: ir.Context) -> None:
    # x and b in, the sum out to @ext, @ext's result in, the product out
    module, ops = parse(EXTERNAL)
    members = [*ops_named(ops, "stablehlo.add"), *ops_named(ops, "stablehlo.multiply")]
    assert group_cost(members, call_graph(module)).bytes == 5 * TILE


SPLIT = """
module {
  func.func @main(%x: T, %b: T) -> T {
    %0 = stablehlo.add %x, %b : T
    %1 = func.call @half(%0) : (T) -> T
    %2 = func.call @unused(%0) : (T) -> T
    return %1 : T
  }
  func.func private @half(%a: T) -> T {
    %0 = stablehlo.maximum %a, %a : T
    %1 = stablehlo.negate %a : T
    %2 = stablehlo.add %0, %1 : T
    return %2 : T
  }
  func.func private @unused(%a: T) -> T {
    %0 = stablehlo.constant dense<0.0> : T
    return %0 : T
  }
}
"""


def test_a_call_argument_read_outside_the_group_is_written(context: ir.Context) -> None:
    # the sum is read by the maximum (a member) and by `negate` (not one), and passed to
    # @unused, which never reads it: it goes out. x and b in, the maximum's result out.
    module, ops = parse(SPLIT)
    first_add = ops_named(ops, "stablehlo.add")[0]
    members = [first_add, *ops_named(ops, "stablehlo.maximum")]
    assert group_cost(members, call_graph(module)).bytes == 4 * TILE
    only_unused = SPLIT.replace("%1 = func.call @half(%0) : (T) -> T", "%1 = stablehlo.abs %x : T")
    module, ops = parse(only_unused)
    # the sum goes only to @unused, whose argument has no use: it is still written
    assert group_cost([ops_named(ops, "stablehlo.add")[0]], call_graph(module)).bytes == 3 * TILE


BODIES = """
func.func @f(%x: T, %b: T) -> T {
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : T) outs(%b : T) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    %t = arith.addf %s, %out : f32
    linalg.yield %t : f32
  } -> T
  %h = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%g : T) outs(%b : T) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    %t = arith.addf %s, %out : f32
    linalg.yield %t : f32
  } -> T
  return %h : T
}
"""


def test_linalg_bodies_among_the_members(context: ir.Context) -> None:
    # a kernel listed with the ops of its bodies: x and b in, h out; g stays inside. (Which
    # member comes first is up to a set: the body ops are skipped, never the end of the count.)
    module, ops = parse(BODIES)
    members = [op for op in ops if op.name not in ("func.func", "func.return")]
    assert len(members) == 2 + 2 * 3
    cost = group_cost(members, call_graph(module))
    assert cost.bytes == 3 * TILE
    assert cost.flops == 2 * 2 * 4  # a multiply and an add per element, twice


def test_a_member_of_unknown_flops_makes_the_group_unknown(context: ir.Context) -> None:
    _, ops = parse(
        "func.func @f(%x: T, %u: tensor<*xf32>) -> tensor<*xf32> {\n"
        "  %0 = stablehlo.add %x, %x : T\n"
        '  %1 = "tf.Relu"(%u) : (tensor<*xf32>) -> tensor<*xf32>\n'
        "  return %1 : tensor<*xf32>\n}"
    )
    (known,), (unknown,) = ops_named(ops, "stablehlo.add"), ops_named(ops, "tf.Relu")
    assert group_cost([known]).flops == 4
    assert group_cost([known, unknown]).flops is None
