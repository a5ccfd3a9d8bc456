"""The linalg level of a torch bundle: the torch level's time carried down through origin stamps.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/linalg.py`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from collections.abc import Sequence

from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationResult
from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.coverage import UnmatchedEvent, is_trivial_op
from irprof.mlir.cost_model import share_weights
from irprof.mlir.locations import render
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.opprofile import OpProfile, OpProfileEntry

LEVEL = "linalg"
MAX_FORWARD_DEPTH = 8  # def-use steps from a folded op to a consumer that survived


def _consumers(infos: Sequence[OpInfo]) -> dict[str, list[str]]:
    """Upper origin -> origins of the ops using its results (upper-level def-use edges)."""
    origin_of = {info.op: info.keys.origins[0] for info in infos if info.keys.origins}
    users: dict[str, list[str]] = defaultdict(list)
    for info in infos:
        origin = origin_of.get(info.op)
        if origin is None:
            continue
        for result in info.op.results:
            for use in result.uses:
                owner = use.owner
                operation = owner if isinstance(owner, ir.Operation) else owner.operation
                user = origin_of.get(operation)
                if user is not None and user not in users[origin]:
                    users[origin].append(user)
    return users


def _constant_inputs(infos: Sequence[OpInfo]) -> set[str]:
    """Origins of upper ops whose operands all come from constants (literals, frozen
    parameters and buffers): lowering may fold such an op into a constant."""
    trivial = {info.op for info in infos if is_trivial_op(info.op_name)}
    found = set()
    for info in infos:
        if not info.keys.origins or is_trivial_op(info.op_name) or not info.op.operands:
            continue
        owners = [operand.owner for operand in info.op.operands]
        operations = [
            o if isinstance(o, ir.Operation) else getattr(o, "operation", None) for o in owners
        ]
        if all(o is not None and o in trivial for o in operations):
            found.add(info.keys.origins[0])
    return found


def _forward(origin: str, users: dict[str, list[str]], lowered: dict[str, list[int]]) -> list[int]:
    """Lowered ops of the nearest consumers of `origin` whose stamps survived lowering."""
    queue = deque([(origin, 0)])
    seen = {origin}
    found: list[int] = []
    while queue:
        current, depth = queue.popleft()
        for user in users.get(current, []):
            if user in seen or depth >= MAX_FORWARD_DEPTH:
                continue
            seen.add(user)
            if lowered.get(user):
                found += [p for p in lowered[user] if p not in found]
            else:
                queue.append((user, depth + 1))
    return found


def correlate_linalg_level(
    bundle: RunBundle, upper: OpProfile, upper_unmatched: Sequence[UnmatchedEvent] = ()
) -> CorrelationResult:
    """The torch level's profile carried down to `RUN/ir/linalg.mlir` (see module docstring)."""
    module = bundle.ir(LEVEL)
    all_infos = derive_op_infos(module)
    infos = [info for info in all_infos if not _is_implicit_body(info)]
    lowered: dict[str, list[int]] = defaultdict(list)
    for position, info in enumerate(infos):
        if is_trivial_op(info.op_name):
            continue  # containers and terminators inherit stamps but do no work
        for stamp in info.keys.origins:
            lowered[stamp].append(position)
    upper_infos = derive_op_infos(bundle.ir("torch"))
    users = _consumers(upper_infos)
    folded = _constant_inputs(upper_infos)
    profiled_ns = int(upper.totals.get("profiled_ns", 0))
    ledger = Ledger()
    forwarded: dict[int, list[str]] = defaultdict(list)
    for entry in upper.entries:
        origin, data = entry.key.origin, entry.data
        label = f"{entry.op_name} {origin}"
        targets = lowered.get(origin or "", [])
        note = ""
        if not targets and origin is not None:
            targets = _forward(origin, users, lowered)
            note = f" (folded by lowering into its consumers' ops; from {origin})"
        if not targets:
            reason = (
                f"torch op {entry.op_name} ({origin}): its stamp reached no lowered op and "
                "neither did any consumer's"
                if origin
                else f"torch op {entry.op_name} has no origin stamp to follow"
            )
            if origin in folded:
                reason = (
                    f"torch op {entry.op_name} ({origin}): all its operands are constants of "
                    "the frozen program (e.g. a buffer updated in place), so lowering folded "
                    "it into a constant; eager PyTorch computed it, the lowered IR does not"
                )
            ledger.unattributed(label, data.total_ns, reason)
            continue
        weights, basis = share_weights([infos[p].op for p in targets])
        ledger.record(
            label, data.first_ts_ns, data.total_ns, targets, weights=weights, basis=basis,
            group=origin or label, source=f"reattach:{origin}{note}",
        )  # fmt: skip
        if note:
            for position in targets:
                forwarded[position].append(origin or "")
    for event in _upper_unmatched(upper, upper_unmatched):
        ledger.unattributed(
            f"torch level: {event.name}", event.total_ns, f"unattributed at torch: {event.reason}"
        )
    counts = {e.key.origin: e.data.count for e in upper.entries}
    entries = {
        position: _with_count(entry, infos[position], counts)
        for position, entry in ledger.entries(
            infos, profiled_ns, location_of=lambda info: render(info.loc)
        ).items()
    }
    located = [
        p
        for p, info in enumerate(infos)
        if _is_top_level(info) and not is_trivial_op(info.op_name) and _has_location(info)
    ]
    return finish_level(
        ledger,
        infos,
        entries,
        level=LEVEL,
        framework=upper.framework,
        profiled_ns=profiled_ns,
        where=f"{bundle.root} -> {LEVEL}",
        reasons={
            position: (
                f"origin {info.keys.origins[0]} received no time at torch level"
                if info.keys.origins
                else "no irprof.origin stamp in the location (created by lowering)"
            )
            for position, info in enumerate(infos)
        },
        totals={**upper.totals, "reattached_from": upper.level},
        coverage_extra={
            "nonbody_located_ops": len(located),
            "nonbody_located_annotated": sum(1 for p in located if p in ledger.annotated),
            "implicit_body_ops": len(all_infos) - len(infos),
            "reattached_from": "torch",
            "forwarded_ops": len(forwarded),
        },
        source_trace=upper.source_trace,
    )


def _upper_unmatched(upper: OpProfile, listed: Sequence[UnmatchedEvent]) -> list[UnmatchedEvent]:
    """Events the torch level could not attribute: its listed ones, plus any time not listed."""
    attributed = sum(e.data.total_ns for e in upper.entries)
    missing = int(upper.totals.get("profiled_ns", 0)) - attributed - sum(e.total_ns for e in listed)
    rest = [UnmatchedEvent("other torch-level events", missing, 1, "not listed at torch level")]
    return [*listed, *(rest if missing > 0 else [])]


def _with_count(
    entry: OpProfileEntry, info: OpInfo, counts: dict[str | None, int]
) -> OpProfileEntry:
    """An entry's count is how often its torch op ran, not how many upper entries fed it."""
    count = max((counts.get(o, 0) for o in info.keys.origins), default=0) or entry.data.count
    data = entry.data
    mean = data.total_ns // count if count else 0
    # Below the torch level only totals are known: the per-event spread is the mean's.
    return dataclasses.replace(
        entry,
        data=dataclasses.replace(data, count=count, mean_ns=mean, min_ns=mean, max_ns=mean),
    )


def _is_implicit_body(info: OpInfo) -> bool:
    """An op of a named linalg op's region that the printed IR does not show (no location)."""
    parent = info.op.parent
    return (
        parent is not None
        and parent.name.startswith("linalg.")
        and parent.name != "linalg.generic"
        and not _has_location(info)
    )


def _is_top_level(info: OpInfo) -> bool:
    """An op directly in a function body, not inside a linalg op's region."""
    parent = info.op.parent
    return parent is not None and parent.name in ("func.func", "util.func")


def _has_location(info: OpInfo) -> bool:
    """The op knows where it came from (a name, a source position or an origin stamp)."""
    return bool(info.keys.names or info.keys.source or info.keys.origins)
