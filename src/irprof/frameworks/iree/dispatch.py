"""What each IREE dispatch ran: its flow ops, their estimated work, the source ops behind them.

Design notes: docs/iree.md, "Module notes", `frameworks/iree/dispatch.py`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from iree.compiler import ir

from irprof.coverage import is_trivial_op
from irprof.mlir.keys import ORIGIN_PREFIX, parse_origin
from irprof.mlir.op_index import OpInfo

# Ops that move or name data inside a dispatch; they run but are not where its time goes.
NON_COMPUTE_PREFIXES = ("iree_tensor_ext.", "flow.dispatch.", "hal.", "util.")
NON_COMPUTE_OPS = frozenset({"tensor.empty", "arith.constant", "func.func", "builtin.module"})
# Ops whose region is a whole dispatch body: an executable's function, or (before outlining) a
# dispatch region of the dispatch-creation IR. Their direct children are the dispatch's ops.
DISPATCH_BODIES = frozenset({"func.func", "flow.dispatch.workgroups"})


@dataclass
class DispatchPlan:
    """One dispatch key: flow op position -> weight, and its weighted source/call origins."""

    key: str
    flow_weights: dict[int, float] = field(default_factory=dict)  # every non-trivial op: >= 0
    source_weights: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    call_weights: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    unresolved_weight: float = 0.0

    @property
    def total_weight(self) -> float:
        """All weighed work, resolved to a source op or not."""
        return sum(self.source_weights.values()) + self.unresolved_weight


def origins(location: ir.Location, level: str) -> list[int]:
    """Source-op indices stamped in `location`, innermost (the op itself) first, then callers."""
    found: list[int] = []
    _collect(location, level, found)
    return found


def _collect(location: ir.Location, level: str, found: list[int]) -> None:
    if isinstance(location, ir.NameLoc):
        name = location.name_str
        if name.startswith(ORIGIN_PREFIX):
            parsed = parse_origin(name[len(ORIGIN_PREFIX) :])
            if parsed is not None and parsed[0] == level:
                found.append(parsed[1])
        _collect(location.child_loc, level, found)
    elif isinstance(location, ir.CallSiteLoc):
        _collect(location.callee, level, found)
        _collect(location.caller, level, found)
    elif isinstance(location, ir.FusedLoc):
        for member in location.locations:
            _collect(member, level, found)


def _elements(value_type: ir.Type) -> int:
    if isinstance(value_type, ir.ShapedType) and value_type.has_static_shape:
        return math.prod(value_type.shape)
    return 1


def _shape(value_type: ir.Type) -> list[int]:
    if isinstance(value_type, ir.ShapedType) and value_type.has_static_shape:
        return list(value_type.shape)
    return []


def domain_size(op: ir.Operation) -> float:
    """Iteration points of `op`: from its indexing maps, else estimated from its shapes."""
    operands = [operand.type for operand in op.operands]
    results = [result.type for result in op.results]
    out = _elements(results[0]) if results else (_elements(operands[-1]) if operands else 1)
    if "indexing_maps" in op.attributes:
        bounds: dict[int, int] = {}
        maps = [ir.AffineMapAttr(attr).value for attr in op.attributes["indexing_maps"]]
        for affine_map, operand_type in zip(maps, operands, strict=False):
            shape = _shape(operand_type)
            for axis, expr in enumerate(affine_map.results):
                if isinstance(expr, ir.AffineDimExpr) and axis < len(shape):
                    bounds[expr.position] = shape[axis]
        if maps:
            return float(math.prod(bounds.get(d, 1) for d in range(maps[0].n_dims)))
    name = op.name
    if "matmul" in name and operands and _shape(operands[0]):
        return float(out * _shape(operands[0])[-1])
    if "conv" in name and len(operands) > 1 and _shape(operands[1]):
        window = _shape(operands[1])
        return float(out * math.prod(window) / max(window[-1], 1))
    return float(out)


def _is_compute(op_name: str) -> bool:
    return not (
        is_trivial_op(op_name)
        or op_name in NON_COMPUTE_OPS
        or op_name.startswith(NON_COMPUTE_PREFIXES)
    )


def _body_compute_count(op: ir.Operation) -> int:
    count = 0
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if _is_compute(inner.operation.name):
                    count += 1
    return count


def plan_dispatches(
    flow_infos: list[OpInfo], level: str, functions: frozenset[int] = frozenset()
) -> dict[str, DispatchPlan]:
    """Dispatch key -> its plan, for every export of every `flow.executable` in the flow IR.

    `functions`: source positions of function ops. IREE wraps ops it generates (the bodies of
    named linalg ops) in the enclosing function's stamp, which says nothing about the op: such
    an origin is skipped and the op takes its parent's.
    """
    function_of_export: dict[str, str] = {}
    export_location: dict[str, ir.Location] = {}
    for info in flow_infos:
        if info.op_name == "flow.executable.export":
            attributes = info.op.attributes
            export = ir.StringAttr(attributes["sym_name"]).value
            target = export
            if "function_ref" in attributes:
                target = ir.FlatSymbolRefAttr(attributes["function_ref"]).value
            function_of_export[target] = export
            export_location[export] = info.location
    plans: dict[str, DispatchPlan] = {}
    current: DispatchPlan | None = None
    for position, info in enumerate(flow_infos):
        if info.op_name == "func.func":
            name = ir.StringAttr(info.op.attributes["sym_name"]).value
            export = function_of_export.get(name)
            current = None
            if export is not None and _inside_executable(info.op):
                current = plans.setdefault(export, DispatchPlan(export))
            continue
        if info.op_name in ("flow.executable", "util.func") or current is None:
            if info.op_name in ("flow.executable", "util.func"):
                current = None
            continue
        if _in_function(info.op):  # not the executable's own ops after it (`*_end`)
            add_to_plan(current, position, info, level, functions)
    for key, plan in plans.items():
        if key in export_location:
            attribute_copy(plan, export_location[key], level, functions)
    return plans


def attribute_copy(
    plan: DispatchPlan, launch: ir.Location, level: str, functions: frozenset[int]
) -> None:
    """A dispatch with no arithmetic (`slow_memcpy`: binding loads and stores only) moves the
    data of the source op its launch is located at (a slice, a concatenation, a pad): that op
    gets its whole time."""
    if plan.total_weight > 0:
        return
    stamped = _op_origins(launch, level, functions)
    if stamped:
        plan.source_weights[stamped[0]] += 1.0
        for call in stamped[1:]:
            plan.call_weights[call] += 1.0


def add_to_plan(
    plan: DispatchPlan, position: int, info: OpInfo, level: str, functions: frozenset[int]
) -> None:
    """Weigh one op of a dispatch body into `plan` (its own work, its source and call origins)."""
    if is_trivial_op(info.op_name):
        return
    weight = _weight(info.op) if _is_compute(info.op_name) else 0.0
    plan.flow_weights[position] = weight
    if weight <= 0:
        return
    stamped = (
        _init_origins(info.op, level, functions)
        or _op_origins(info.location, level, functions)
        or _parent_origins(info.op, level, functions)
    )
    if not stamped:
        plan.unresolved_weight += weight
        return
    plan.source_weights[stamped[0]] += weight
    for call in stamped[1:]:
        plan.call_weights[call] += weight


def _init_origins(op: ir.Operation, level: str, functions: frozenset[int]) -> list[int]:
    """The origins of the op a `linalg.fill` initialises (a matmul's zeroed accumulator).

    CSE merges the identical zero fills of every matmul before dispatches form and keeps the
    first one's location, so the fill in the second layer's dispatch names the first layer:
    its work belongs to the op that consumes it."""
    if op.name != "linalg.fill":
        return []
    for result in op.results:
        for use in result.uses:
            user = use.owner
            stamped = _op_origins(user.location, level, functions) or _parent_origins(
                user, level, functions
            )
            if stamped:
                return stamped
    return []


def _in_function(op: ir.Operation) -> bool:
    """Inside a `func.func` (a dispatch body), not an executable's terminator after it: a pure
    copy's time is shared evenly by its ops, and `flow.executable_end` took a third of
    GPT-2's `slow_memcpy` dispatches."""
    parent = op.parent
    while parent is not None:
        if parent.name == "func.func":
            return True
        if parent.name == "flow.executable":
            return False
        parent = parent.parent
    return False


def _inside_executable(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == "flow.executable":
            return True
        if parent.name == "builtin.module" and parent.parent is None:
            return False
        parent = parent.parent
    return False


def _weight(op: ir.Operation) -> float:
    results = list(op.results)
    if results and all(isinstance(result.type, ir.IndexType) for result in results):
        return 0.0  # index arithmetic: addressing and workgroup counts, not the data's work
    parent = op.parent
    if parent is not None and parent.name not in DISPATCH_BODIES:
        return domain_size(parent)  # a body op: one operation per iteration point
    if _body_compute_count(op) > 0:
        return 0.0  # its body ops carry the work
    return domain_size(op)


def _op_origins(location: ir.Location, level: str, functions: frozenset[int]) -> list[int]:
    stamped = origins(location, level)
    return stamped if stamped and stamped[0] not in functions else []


def _parent_origins(op: ir.Operation, level: str, functions: frozenset[int]) -> list[int]:
    parent = op.parent
    while parent is not None and parent.name not in DISPATCH_BODIES:
        stamped = _op_origins(parent.location, level, functions)
        if stamped:
            return stamped
        parent = parent.parent
    return []
