"""Share XLA thunk time among the IR ops each thunk ran.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/attribution.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from irprof.correlate.ledger import Ledger
from irprof.frameworks.jax.hlo import HloInstructionInfo, HloModuleInfo
from irprof.frameworks.jax.ir_index import IrTarget, JaxOpIndex
from irprof.frameworks.jax.orphans import OrphanResolver
from irprof.trace.model import Trace

END_PREFIX = "end: "
FUSED_TIME_RULES = ("flops", "even")
# Instructions that neither compute nor move data (a bitcast only relabels a buffer).
FREE_OPCODES = frozenset({"parameter", "constant", "bitcast", "tuple", "get-tuple-element"})


@dataclass(frozen=True)
class ThunkEvent:
    """One profiled thunk: trace row, exact event name, HLO instruction, start and duration."""

    row: int
    name: str
    hlo_op: str
    ts_ns: int
    dur_ns: int
    async_end_row: int | None = None


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


def thunk_events(trace: Trace, module_name: str) -> tuple[list[ThunkEvent], list[str]]:
    """Thunk events of `module_name` with async durations resolved; also other modules seen."""
    hlo_ops = trace.arg_column("hlo_op")
    modules = trace.arg_column("hlo_module")
    producers = trace.arg_column("_p")
    consumers = trace.arg_column("_c")
    ends_by_consumer: dict[Any, list[int]] = defaultdict(list)
    ends_by_track_name: dict[tuple[int, str], list[int]] = defaultdict(list)
    end_ids = [i for i, text in enumerate(trace.strings) if text.startswith(END_PREFIX)]
    for row in np.nonzero(np.isin(trace.name, end_ids))[0].tolist():
        if hlo_ops[row] is not None:
            continue
        if consumers[row] is not None:
            ends_by_consumer[consumers[row]].append(row)
        name = trace.name_of(row)[len(END_PREFIX) :]
        ends_by_track_name[(int(trace.track[row]), name)].append(row)
    events: list[ThunkEvent] = []
    others: set[str] = set()
    for row, hlo_op in enumerate(hlo_ops):
        if hlo_op is None:
            continue
        if modules[row] not in (None, module_name):
            others.add(str(modules[row]))
            continue
        start = int(trace.ts_ns[row])
        end = start + int(trace.dur_ns[row])
        end_row = _find_end(
            trace, row, str(hlo_op), producers[row], ends_by_consumer, ends_by_track_name
        )
        if end_row is not None:
            end = max(end, int(trace.ts_ns[end_row] + trace.dur_ns[end_row]))
        events.append(ThunkEvent(row, trace.name_of(row), str(hlo_op), start, end - start, end_row))
    return _exclusive(events, trace), sorted(others)


def _exclusive(events: list[ThunkEvent], trace: Trace) -> list[ThunkEvent]:
    """Events with the time of the thunks nested in them (a `while` or `conditional` thunk runs
    its body's thunks inside its own span, on the same thread) taken out, so no nanosecond is
    counted twice; the loop or branch op keeps its own overhead. Nesting is read from the
    recorded events' own spans: an asynchronous thunk's launch does not contain the thunks that
    run while it completes elsewhere."""
    spans = [(int(trace.ts_ns[e.row]), int(trace.end_ns[e.row])) for e in events]
    nested_ns = [0] * len(events)
    by_track: dict[int, list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        by_track[int(trace.track[event.row])].append(index)
    for indexes in by_track.values():
        indexes.sort(key=lambda i: (spans[i][0], -spans[i][1]))
        open_spans: list[int] = []
        for index in indexes:
            while open_spans and spans[open_spans[-1]][1] < spans[index][1]:
                open_spans.pop()
            if open_spans:
                nested_ns[open_spans[-1]] += spans[index][1] - spans[index][0]
            open_spans.append(index)
    return [
        replace(event, dur_ns=max(event.dur_ns - nested, 0)) if nested else event
        for event, nested in zip(events, nested_ns, strict=True)
    ]


def _find_end(
    trace: Trace,
    row: int,
    hlo_op: str,
    producer: Any,
    ends_by_consumer: dict[Any, list[int]],
    ends_by_track_name: dict[tuple[int, str], list[int]],
) -> int | None:
    """The first `end:` event at or after the thunk's start: linked by its consumer id (ids
    can repeat over a long trace), else the next one of that name on the thunk's track."""
    start = int(trace.ts_ns[row])
    linked = ends_by_consumer.get(producer, []) if producer is not None else []
    candidates = linked or ends_by_track_name.get((int(trace.track[row]), hlo_op), [])
    later = [r for r in candidates if int(trace.ts_ns[r]) >= start]
    return min(later, key=lambda r: int(trace.ts_ns[r])) if later else None


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
        targets = index.lookup(member.op_name, member.chain)
        if targets:
            refined = index.refine(member.opcode, targets, member.elements)
            matched.append((member, tuple(refined)))
    if not matched:
        if not any(m.op_name for m in members):
            placed = orphans.place(hlo_op) if orphans is not None else None
            if placed is not None and placed.targets:
                return KernelPlan(((1.0, placed.targets, hlo_op),), basis="even")
            if placed is not None and placed.consumer:
                fed = plan_kernel(program, index, placed.consumer, rule, orphans)
                if fed.shares:
                    return fed
            return KernelPlan(
                (), "XLA-inserted instruction without op metadata (e.g. a layout copy)"
            )
        names = sorted({m.op_name for m in members if m.op_name})
        return KernelPlan((), f"op names not found in the IR: {', '.join(names[:3])}")
    weights = [1.0] * len(matched)
    basis = "even"
    if rule == "flops":
        weights, basis = [m.flops for m, _ in matched], "flops"
        if sum(weights) <= 0:  # pure data movement: weigh by what each member writes
            weights = [0.0 if m.opcode in FREE_OPCODES else float(m.elements) for m, _ in matched]
            basis = "bytes"
    if sum(weights) <= 0:
        weights, basis = [1.0] * len(matched), "even"
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
        positions = list(weights)
        result.ledger.record(
            event.name, event.ts_ns, event.dur_ns, positions,
            weights=[weights[p] for p in positions], basis=plan.basis,
            group=f"xla:{event.hlo_op}", source=event.hlo_op,
        )  # fmt: skip
    return result
