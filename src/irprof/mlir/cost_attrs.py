"""`irprof.cost = {flops, bytes, category}` on ops: the cost model written into the IR, for
passes and learned models downstream that read attributes rather than call irprof.

One discardable attribute per op that does work; views, constants and ops inside a structured
op's body (counted by their parent) get none, and neither does an op whose cost the IR cannot
tell (a number left out is unknown, never zero).
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.mlir.cost_model import OpCost, op_cost
from irprof.mlir.op_index import walk_ops

COST_ATTR = "irprof.cost"
NO_WORK = frozenset({"free", "body"})


def cost_attribute(cost: OpCost) -> ir.Attribute:
    """The attribute of one cost (needs an active context)."""
    i64 = ir.IntegerType.get_signless(64)
    fields: dict[str, ir.Attribute] = {}
    if cost.flops is not None:
        fields["flops"] = ir.IntegerAttr.get(i64, cost.flops)
    if cost.bytes is not None:
        fields["bytes"] = ir.IntegerAttr.get(i64, cost.bytes)
    fields["category"] = ir.StringAttr.get(cost.category)
    return ir.DictAttr.get(fields)


def attach_costs(module: ir.Module | ir.Operation) -> int:
    """Write `irprof.cost` on every op with work and a known FLOP or byte count; returns how
    many ops got one (an existing attribute is replaced)."""
    attached = 0
    for op in walk_ops(module):
        cost = op_cost(op)
        if cost.category in NO_WORK or (cost.flops is None and cost.bytes is None):
            continue
        with op.context:
            op.attributes[COST_ATTR] = cost_attribute(cost)
        attached += 1
    return attached


def read_cost(op: ir.Operation) -> OpCost | None:
    """The `irprof.cost` an op carries (None without one)."""
    if COST_ATTR not in op.attributes:
        return None
    attr = ir.DictAttr(op.attributes[COST_ATTR])

    def number(key: str) -> int | None:
        return int(ir.IntegerAttr(attr[key]).value) if key in attr else None

    category = str(ir.StringAttr(attr["category"]).value) if "category" in attr else ""
    return OpCost(number("flops"), number("bytes"), category)


def strip_costs(module: ir.Module | ir.Operation) -> int:
    """Remove every `irprof.cost`; returns how many were removed."""
    removed = 0
    for op in walk_ops(module):
        if COST_ATTR in op.attributes:
            del op.attributes[COST_ATTR]
            removed += 1
    return removed
