"""Source ops no compute op of any IREE dispatch names: free, or absorbed into a consumer.

Design notes: docs/iree.md, "Module notes", `frameworks/iree/absorbed.py`.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from iree.compiler import ir

from irprof.coverage import is_trivial_op
from irprof.frameworks.iree.dispatch import DispatchPlan
from irprof.mlir.op_index import OpInfo

# Ops that move or re-view data without arithmetic, per input dialect.
REINDEX_OPS = frozenset(
    {
        "stablehlo.broadcast_in_dim",
        "stablehlo.broadcast",
        "stablehlo.dynamic_broadcast_in_dim",
        "stablehlo.reshape",
        "stablehlo.dynamic_reshape",
        "stablehlo.transpose",
        "stablehlo.slice",
        "stablehlo.dynamic_slice",
        "stablehlo.concatenate",
        "stablehlo.reverse",
        "stablehlo.bitcast_convert",
        "torch.aten.view",
        "torch.aten.reshape",
        "torch.aten._unsafe_view",
        "torch.aten.permute",
        "torch.aten.transpose.int",
        "torch.aten.t",
        "torch.aten.expand",
        "torch.aten.unsqueeze",
        "torch.aten.squeeze",
        "torch.aten.squeeze.dim",
        "torch.aten.squeeze.dims",
        "torch.prims.squeeze",
        "torch.aten.slice.Tensor",
        "torch.aten.select.int",
        "torch.aten.split_with_sizes",
        "torch.aten.split.Tensor",
        "torch.aten.unbind.int",
        "torch.aten.flatten.using_ints",
        "torch.aten.contiguous",
        "torch.aten.clone",
        "torch.aten.alias",
        "torch.aten.detach",
        "torch.aten.cat",
        "torch.prim.ListUnpack",
        "torch.prim.ListConstruct",
        "tosa.reshape",
        "tosa.transpose",
        "tosa.slice",
        "tosa.concat",
        "tosa.tile",
        "linalg.transpose",
        "linalg.broadcast",
        "tensor.expand_shape",
        "tensor.collapse_shape",
        "tensor.extract_slice",
        "tensor.insert_slice",
        "tensor.reshape",
        "tensor.concat",
    }
)
# Ops that must not count as constants even without operands.
NOT_CONSTANT_WORDS = ("rand", "normal", "bernoulli", "empty")
CONTAINERS = ("func.func", "util.func", "builtin.module")
TERMINATORS = (".return", ".yield", ".terminator")


def is_reindexing(op_name: str) -> bool:
    """Whether the op only moves or re-views data (no arithmetic)."""
    return op_name in REINDEX_OPS


def constant_positions(infos: Sequence[OpInfo]) -> set[int]:
    """Positions of ops computed from constants only (every operand, transitively, a constant)."""
    position_of = {info.op: position for position, info in enumerate(infos)}
    constant: set[int] = set()
    for position, info in enumerate(infos):
        op = info.op
        if info.op_name in CONTAINERS or info.op_name.endswith(TERMINATORS):
            continue
        if len(op.regions) or any(word in info.op_name for word in NOT_CONSTANT_WORDS):
            continue
        producers = [_producer(operand, position_of) for operand in op.operands]
        if all(producer is not None and producer in constant for producer in producers):
            constant.add(position)
    return constant


def _producer(value: ir.Value, position_of: dict[ir.Operation, int]) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None  # a block argument: a function input, not a constant
    return position_of.get(owner)


def absorbing_consumers(
    infos: Sequence[OpInfo], missing: Iterable[int], measured: set[int]
) -> dict[int, list[int]]:
    """For each op of `missing` (no IREE op names it, not free): the measured ops its results
    reach through other missing or re-indexing ops; ops reaching none are left out."""
    position_of = {info.op: position for position, info in enumerate(infos)}
    missing_set = set(missing)
    found: dict[int, list[int]] = {}
    for start in sorted(missing_set):
        reached: list[int] = []
        seen = {start}
        frontier = [start]
        while frontier:
            current = frontier.pop()
            for result in infos[current].op.results:
                for use in result.uses:
                    user = position_of.get(use.owner)
                    if user is None or user in seen:
                        continue
                    seen.add(user)
                    if user in measured:
                        reached.append(user)
                    elif user in missing_set or is_reindexing(infos[user].op_name):
                        frontier.append(user)
        if reached:
            found[start] = sorted(reached)
    return found


def feeds_control_flow(op: ir.Operation, limit: int = 64) -> bool:
    """Whether `op`'s results decide which code runs: they reach a branch (an `if`'s predicate,
    a `case`'s index) or a loop's condition through ops without regions. A loop is an op whose
    regions take the carried values as block arguments (a `while`): what its first region
    yields is the condition, and an initial value or what a later region yields is carried, to
    the same argument of each region (a counter `i + 1` reaches the condition `i < n`)."""
    frontier = deque(op.results)  # breadth first: a loop's carried values come back around
    seen = 0
    while frontier and seen < limit:
        value = frontier.popleft()
        seen += 1
        for use in value.uses:
            user = use.owner
            if not user.name.endswith(TERMINATORS):
                if _is_loop(user):  # an initial carried value: follow it into the regions
                    frontier.extend(_carried(user, use.operand_number))
                elif len(user.regions):
                    return True  # a branch's predicate or index
                else:
                    frontier.extend(user.results)
                continue
            loop, region = _loop_yielding_to(user)
            if loop is None:
                continue  # a function's or a branch's result: no decision here
            if region == 0:
                return True
            frontier.extend(_carried(loop, use.operand_number))
    return False


def _loop_yielding_to(terminator: ir.Operation) -> tuple[ir.Operation | None, int]:
    """The loop whose region `terminator` ends, and that region's index; (None, -1) when the
    region's owner is not a loop (its first region takes no block arguments)."""
    region = terminator.operation.block.region
    owner = region.owner
    if not _is_loop(owner):
        return None, -1
    for index, candidate in enumerate(owner.regions):
        if candidate == region:
            return owner, index
    return None, -1


def _is_loop(op: ir.Operation) -> bool:
    """Two regions or more, the first taking block arguments (the carried values): a loop."""
    regions = list(op.regions)
    return len(regions) >= 2 and bool(regions[0].blocks) and bool(regions[0].blocks[0].arguments)


def _carried(loop: ir.Operation, index: int) -> list[ir.Value]:
    """Block argument `index` of each of the loop's regions: where a carried value goes."""
    return [
        region.blocks[0].arguments[index]
        for region in loop.regions
        if region.blocks and index < len(region.blocks[0].arguments)
    ]


def source_work(op: ir.Operation) -> float:
    """Estimated operations of a source op: elements of its largest operand or result."""
    sizes = [
        math.prod(value.type.shape)
        for value in (*op.operands, *op.results)
        if isinstance(value.type, ir.ShapedType) and value.type.has_static_shape
    ]
    return float(max(sizes, default=1))


@dataclass(frozen=True)
class MissingOps:
    """Source ops no IREE compute op names: the constant-derived ones and the absorbed ones."""

    constant: frozenset[int]
    absorbed: dict[int, list[int]]  # op -> the measured consumers it was absorbed into


def classify_missing(
    infos: Sequence[OpInfo], measured: set[int], in_dispatch: set[int], skip: frozenset[int]
) -> MissingOps:
    """`measured`: ops with dispatch work; `in_dispatch`: ops a dispatch's op names (a load or
    a store, without work); `skip`: function and call ops. An op only host-side flow ops name
    may still have been absorbed (its host op is a reshape of the absorbing op's result)."""
    constant = constant_positions(infos)
    missing = [
        position
        for position, info in enumerate(infos)
        if position not in measured
        and position not in in_dispatch
        and position not in constant
        and position not in skip
        and not is_trivial_op(info.op_name)
        and not is_reindexing(info.op_name)
    ]
    absorbed = absorbing_consumers(infos, missing, measured)
    position_of = {info.op: position for position, info in enumerate(infos)}
    for position in missing:
        # A body op (a reduction's combiner) runs as part of its parent op.
        parent = infos[position].op.parent
        owner = position_of.get(parent) if parent is not None else None
        if position in absorbed or owner is None or owner in skip:
            continue
        if owner in measured:
            absorbed[position] = [owner]
        elif owner in absorbed:
            absorbed[position] = absorbed[owner]
    return MissingOps(frozenset(constant), absorbed)


def absorb_into_plans(
    plans: Iterable[DispatchPlan], absorbed: dict[int, list[int]], infos: Sequence[OpInfo]
) -> None:
    """Give each absorbed op its estimated work in the plans of its consumers, spread like
    theirs (a consumer in two dispatches takes the op's work to both in proportion)."""
    plans = list(plans)
    consumer_total: dict[int, float] = defaultdict(float)
    for plan in plans:
        for position, weight in plan.source_weights.items():
            consumer_total[position] += weight
    for position, consumers in absorbed.items():
        work = source_work(infos[position].op) / len(consumers)
        for plan in plans:
            for consumer in consumers:
                weight = plan.source_weights.get(consumer, 0.0)
                if weight > 0:
                    plan.source_weights[position] += work * weight / consumer_total[consumer]
