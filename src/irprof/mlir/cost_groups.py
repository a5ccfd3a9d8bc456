"""The cost of ops that ran as one kernel (a fused kernel, an XLA fusion, a decomposed call):
FLOPs summed, bytes only of the tensors crossing the group's boundary.

An intermediate produced and consumed inside the group stays in registers or cache. A value
handed through a `func.call` counts as inside when both of its ends are members: XLA inlines
JAX's private functions (`jax.nn.relu`) before it fuses across them, so the call boundary in
the StableHLO is not a trip to memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from iree.compiler import ir

from irprof.mlir.cost_model import OpCost, dominant_category, is_payload, op_cost
from irprof.mlir.cost_shapes import sum_bytes
from irprof.mlir.op_index import walk_ops


@dataclass(frozen=True)
class CallGraph:
    """Functions by symbol and the call ops of each (to follow values through calls)."""

    functions: dict[str, ir.Operation] = field(default_factory=dict)
    callers: dict[str, list[ir.Operation]] = field(default_factory=dict)


def call_graph(module: ir.Module | ir.Operation) -> CallGraph:
    """Every function of `module` and the calls that reach it."""
    graph = CallGraph()
    for op in walk_ops(module):
        attributes = op.attributes
        if "sym_name" in attributes and op.regions and op.name.endswith("func"):
            graph.functions[str(ir.StringAttr(attributes["sym_name"]).value)] = op
        if op.name == "func.call" and "callee" in attributes:
            callee = str(ir.FlatSymbolRefAttr(attributes["callee"]).value)
            graph.callers.setdefault(callee, []).append(op)
    return graph


def _inside(op: ir.Operation | None, members: set[ir.Operation]) -> bool:
    while op is not None:
        if op in members:
            return True
        op = op.parent
    return False


def _function_argument(value: ir.Value) -> tuple[str, int] | None:
    """(function symbol, argument number) when `value` is a function's entry argument."""
    if not isinstance(value, ir.BlockArgument):
        return None
    parent = value.owner.owner
    if parent is None or "sym_name" not in parent.attributes:
        return None
    return str(ir.StringAttr(parent.attributes["sym_name"]).value), value.arg_number


def _produced_inside(value: ir.Value, members: set[ir.Operation], graph: CallGraph) -> bool:
    """The value comes from a member, directly or through the argument of a called function."""
    if isinstance(value, ir.BlockArgument):
        owner = value.owner.owner
        if owner is not None and _inside(owner.operation, members):
            return True
        argument = _function_argument(value)
        if argument is None:
            return False
        name, number = argument
        return any(
            number < len(call.operands) and _produced_inside(call.operands[number], members, graph)
            for call in graph.callers.get(name, ())
        )
    producer = value.owner.operation
    if _inside(producer, members):
        return True
    # The result of a call: what the callee returns at that position.
    returned = _returned(producer, graph)
    number = ir.OpResult(value).result_number
    return number < len(returned) and _produced_inside(returned[number], members, graph)


def _callee(call: ir.Operation, graph: CallGraph) -> ir.Operation | None:
    if call.name != "func.call" or "callee" not in call.attributes:
        return None
    return graph.functions.get(str(ir.FlatSymbolRefAttr(call.attributes["callee"]).value))


def _returned(call: ir.Operation, graph: CallGraph) -> list[ir.Value]:
    """The operands of the callee's return, when `call` calls a function with one block."""
    callee = _callee(call, graph)
    if callee is None or not callee.regions or len(callee.regions[0].blocks) != 1:
        return []
    operations = list(callee.regions[0].blocks[0].operations)
    return list(operations[-1].operands) if operations else []


def _enclosing_function(op: ir.Operation) -> str:
    parent = op.parent
    if parent is None or "sym_name" not in parent.attributes:
        return ""
    return str(ir.StringAttr(parent.attributes["sym_name"]).value)


def _consumed_inside(
    user: ir.Operation, position: int, members: set[ir.Operation], graph: CallGraph
) -> bool:
    """The use reads the value inside the group, directly or through a called function."""
    if _inside(user, members):
        return True
    if user.name == "func.return":
        # Returned: read where the callers use the call's result.
        calls = graph.callers.get(_enclosing_function(user), [])
        return bool(calls) and all(
            _consumed_inside(use.owner.operation, use.operand_number, members, graph)
            for call in calls
            if position < len(call.results)
            for use in call.results[position].uses
        )
    callee = _callee(user, graph)
    if callee is None or not callee.regions or not len(callee.regions[0].blocks):
        return False
    arguments = list(callee.regions[0].blocks[0].arguments)
    if position >= len(arguments):
        return False
    uses = list(arguments[position].uses)
    return bool(uses) and all(
        _consumed_inside(use.owner.operation, use.operand_number, members, graph) for use in uses
    )


def group_cost(ops: Iterable[ir.Operation | ir.OpView], graph: CallGraph | None = None) -> OpCost:
    """FLOPs of the members summed; bytes of the tensors read from outside the group and of
    the results used outside it (or by nothing). `graph` lets values pass through calls."""
    graph = graph or CallGraph()
    members = {op.operation for op in ops}
    costs = [op_cost(op) for op in members]
    flops = None if any(c.flops is None for c in costs) else sum(c.flops or 0 for c in costs)
    crossing: list[ir.Value] = []
    for op in members:
        if is_payload(op) and _inside(op.parent, members):
            continue
        crossing += [v for v in op.operands if not _produced_inside(v, members, graph)]
        for result in op.results:
            uses = list(result.uses)
            if not uses or not all(
                _consumed_inside(use.owner.operation, use.operand_number, members, graph)
                for use in uses
            ):
                crossing.append(result)
    return OpCost(flops, sum_bytes(crossing), dominant_category(c.category for c in costs))
