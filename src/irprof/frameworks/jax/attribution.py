"""Share XLA thunk time among the IR ops each thunk ran.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/attribution.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from irprof.correlate.hlo import kernel_weights
from irprof.correlate.ledger import Ledger
from irprof.correlate.payload import payload_owners
from irprof.correlate.xla_thunks import ThunkEvent
from irprof.correlate.xla_thunks import thunk_events as thunk_events  # moved; the JAX name
from irprof.frameworks.jax.hlo import HloInstructionInfo, HloModuleInfo
from irprof.frameworks.jax.ir_index import IrTarget, JaxOpIndex
from irprof.frameworks.jax.orphans import OrphanResolver

FUSED_TIME_RULES = ("flops", "even")
# Instructions that neither compute nor move data (a bitcast only relabels a buffer).


@dataclass(frozen=True)
class KernelPlan:
    """How one HLO instruction's thunk time is shared: (fraction, targets, instruction) triples."""

    shares: tuple[tuple[float, tuple[IrTarget, ...], str], ...]
    reason: str = ""  # why nothing could be attributed (empty when shares exist)
    basis: str = "even"  # flops, bytes (data-movement fusions) or even


@dataclass
class Attribution:
    """The shared ledger (event time over ops, and the inclusive time of the call ops an
    instruction was inlined through), plus what only XLA knows: the instructions each op ran
    in."""

    ledger: Ledger = field(default_factory=Ledger)
    op_instructions: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))


def plan_kernel(
    program: HloModuleInfo,
    index: JaxOpIndex,
    hlo_op: str,
    rule: str,
    orphans: OrphanResolver | None = None,
) -> KernelPlan:
    """Which IR ops the thunk of `hlo_op` ran and with what fraction of its time each."""
    members = program.kernel_members(hlo_op)
    if not members:
        return KernelPlan((), f"no instruction '{hlo_op}' in HLO module {program.name}")
    matched: list[tuple[HloInstructionInfo, tuple[IrTarget, ...]]] = []
    for member in members:
        targets = index.lookup(member.owner, member.chain)
        if targets:
            refined = index.refine(member.opcode, targets, member.elements)
            matched.append((member, tuple(refined)))
    if not matched:
        if (orphans is not None and orphans.unnamed(members)) or not any(m.owner for m in members):
            placed = orphans.place(hlo_op) if orphans is not None else None
            if placed is not None and placed.targets:
                return KernelPlan(((1.0, placed.targets, hlo_op),), basis="even")
            if placed is not None and placed.consumer:
                fed = plan_kernel(program, index, placed.consumer, rule, orphans)
                if fed.shares:
                    return fed
            if placed is not None and placed.how:
                return KernelPlan((), placed.how)
            return KernelPlan(
                (), "XLA-inserted instruction without op metadata (e.g. a layout copy)"
            )
        names = sorted({m.owner for m in members if m.owner})
        return KernelPlan((), f"op names not found in the IR: {', '.join(names[:3])}")
    weights, basis = [1.0] * len(matched), "even"
    if rule == "flops":
        weights, basis = kernel_weights([m for m, _ in matched])
    total = sum(weights)
    return KernelPlan(
        tuple(
            (weight / total, targets, member.name)
            for weight, (member, targets) in zip(weights, matched, strict=True)
        ),
        basis=basis,
    )


def attribute_thunks(
    events: Sequence[ThunkEvent], program: HloModuleInfo, index: JaxOpIndex, rule: str
) -> Attribution:
    """Share every thunk event's time among IR ops by the fused-time `rule`."""
    if rule not in FUSED_TIME_RULES:
        raise ValueError(f"unknown fused-time rule '{rule}' (known: {', '.join(FUSED_TIME_RULES)})")
    plans: dict[str, KernelPlan] = {}
    result = Attribution()
    orphans = OrphanResolver(program, index)
    owners = payload_owners(index.infos)
    for event in events:
        plan = plans.get(event.hlo_op)
        if plan is None:
            plan = plan_kernel(program, index, event.hlo_op, rule, orphans)
            plans[event.hlo_op] = plan
        if not plan.shares:
            result.ledger.unattributed(event.name, event.dur_ns, plan.reason)
            continue
        weights: dict[int, float] = defaultdict(float)
        for fraction, targets, instruction in plan.shares:
            per_target = fraction / len(targets)
            for target in targets:
                weights[target.position] += per_target
                result.op_instructions[target.position].add(instruction)
                for call in target.via_calls:
                    result.ledger.include(
                        call, event.row, event.name, event.ts_ns, event.dur_ns * per_target
                    )
        # An op inside another member's region (a reduce's body `maximum`) is part of that op:
        # its share goes to the enclosing member, the op whose profile a reader sees.
        for position in list(weights):
            enclosing = next((a for a in index.ancestors(position) if a in weights), None)
            if enclosing is not None:
                weights[enclosing] += weights.pop(position)
        # A combiner's op in a kernel of its own (XLA CPU splits a reduction into partial
        # reduces named after the reducer's `add`) is still the reduce's work: the printed IR
        # shows a reduce's body as `applies stablehlo.add`, with no room for its attributes.
        for position in list(weights):
            if position in owners:
                weights[owners[position]] += weights.pop(position)
        positions = list(weights)
        result.ledger.record(
            event.name, event.ts_ns, event.dur_ns, positions,
            weights=[weights[p] for p in positions], basis=plan.basis,
            group=f"xla:{event.hlo_op}", source=event.hlo_op,
        )  # fmt: skip
    return result
