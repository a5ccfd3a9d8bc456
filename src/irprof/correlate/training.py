"""A training step's time by phase: what every framework's training record shares.

Design notes: docs/attribution.md, "Module notes", `correlate/training.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iree.compiler import ir

from irprof.correlate.ledger import Ledger
from irprof.errors import CorrelationError
from irprof.mlir.op_index import OpInfo

PHASES = ("forward", "backward", "optimizer", "other")
# The per-op rows of a training summary: in opprofile.json, left out of coverage.json.
TRAINING_ROWS = ("backward_by_forward", "unlinked_backward")
MAX_LISTED_LINKS = 200  # backward -> forward rows kept in the summary, largest first


@dataclass(frozen=True)
class TrainingPhases:
    """A training step's structure: each op's phase and each backward op's forward ops.

    phase_of:   position -> one of PHASES (ops left out count as "other")
    forward_of: backward position -> the forward ops it differentiates (several when the
                framework links it only to a scope or a source expression, never guessed
                down to one; a correlator may leave out ops that cannot do work)
    unlinked:   backward position -> why no forward op could be named
    """

    phase_of: Mapping[int, str]
    forward_of: Mapping[int, tuple[int, ...]]
    unlinked: Mapping[int, str]


class DefUse:
    """Def-use edges between a level's ops, by walk position (block arguments are no op)."""

    def __init__(
        self, infos: Sequence[OpInfo], position_of: Mapping[ir.Operation, int] | None = None
    ) -> None:
        self.infos = infos
        self.position_of = (
            position_of
            if position_of is not None
            else {info.op: position for position, info in enumerate(infos)}
        )

    def users(self, position: int) -> list[int]:
        """Positions of the ops using a result of the op at `position` (one per use)."""
        found = []
        for result in self.infos[position].op.results:
            for use in result.uses:
                owner = use.owner
                operation = owner if isinstance(owner, ir.Operation) else owner.operation
                user = self.position_of.get(operation)
                if user is not None:
                    found.append(user)
        return found

    def producer(self, position: int, operand: int) -> int | None:
        """Position of the op defining operand `operand` of the op at `position`."""
        op = self.infos[position].op
        if operand >= len(op.operands):
            return None
        owner = op.operands[operand].owner
        if not isinstance(owner, ir.Operation):
            owner = getattr(owner, "operation", None)
            if not isinstance(owner, ir.Operation):
                return None
        return self.position_of.get(owner)

    def producers(self, position: int) -> list[int]:
        """Positions of the ops defining the operands of the op at `position`, in order."""
        found = []
        for index in range(len(self.infos[position].op.operands)):
            producer = self.producer(position, index)
            if producer is not None:
                found.append(producer)
        return found

    def closure(
        self, start: Iterable[int], *, down: bool, blocked: Iterable[int] = frozenset()
    ) -> set[int]:
        """What is reachable from `start` along users (`down`) or producers, never entering a
        `blocked` op (`start` itself only when reached again)."""
        stop = set(blocked)
        seen: set[int] = set()
        pending = list(start)
        while pending:
            position = pending.pop()
            for other in self.users(position) if down else self.producers(position):
                if other not in seen and other not in stop:
                    seen.add(other)
                    pending.append(other)
        return seen


def label_phases(
    ops: Iterable[int], backward: set[int], forward: set[int], optimizer: set[int]
) -> dict[int, str]:
    """Each of `ops` -> its phase from the framework's disjoint sets; the rest is "other"."""
    phases = {}
    for position in ops:
        if position in backward:
            phases[position] = "backward"
        elif position in optimizer:
            phases[position] = "optimizer"
        elif position in forward:
            phases[position] = "forward"
        else:
            phases[position] = "other"
    return phases


def phase_record(
    phases_ns: Mapping[str, int],
    unattributed_ns: int,
    profiled_ns: Mapping[str, int],
    *,
    buckets: Sequence[str] = (),
    backward_linked_ns: int,
) -> dict[str, Any]:
    """The training record every framework reports.

    phases_ns:  attributed time per phase (a bucket: its profiled time) and `unattributed`;
                adds up to the profiled time
    profiled_ns: profiled time per phase (events a framework can place by phase even when
                no op received them)
    buckets:    phases listed as unattributed because no IR op computes them
    """
    return {
        "phases_ns": {
            **{phase: phases_ns.get(phase, 0) for phase in PHASES},
            "unattributed": unattributed_ns,
        },
        "phases_profiled_ns": dict(profiled_ns),
        "buckets": list(buckets),
        "backward_linked_ns": backward_linked_ns,
        "backward_unlinked_ns": profiled_ns.get("backward", 0) - backward_linked_ns,
    }


def training_summary(
    ledger: Ledger, phases: TrainingPhases, name_of: Callable[[int], str]
) -> dict[str, Any]:
    """Time per phase (adds up to the ledger's total) and backward time per forward op set."""
    phase_ns = dict.fromkeys(PHASES, 0)
    estimated_ns = dict.fromkeys(PHASES, 0)
    op_ns: dict[int, int] = {}
    for position, account in ledger.accounts.items():
        phase = phases.phase_of.get(position, "other")
        if phase not in phase_ns:
            raise CorrelationError(f"op {name_of(position)!r}: unknown phase {phase!r}")
        op_ns[position] = sum(account.durations)
        phase_ns[phase] += op_ns[position]
        estimated_ns[phase] += sum(account.groups.values())
    by_forward: dict[tuple[int, ...], list[int]] = {}
    for backward, forward in phases.forward_of.items():
        by_forward.setdefault(tuple(sorted(forward)), []).append(backward)
    ranked = sorted(
        by_forward.items(),
        key=lambda item: (-sum(op_ns.get(p, 0) for p in item[1]), [name_of(p) for p in item[0]]),
    )
    links = [
        {
            "forward": [name_of(p) for p in forward],
            "forward_ns": sum(op_ns.get(p, 0) for p in forward),
            "backward_ns": sum(op_ns.get(p, 0) for p in backward),
            "backward_ops": [name_of(p) for p in sorted(backward)],
        }
        for forward, backward in ranked
    ]
    unlinked = [
        {"op": name_of(p), "ns": op_ns.get(p, 0), "reason": reason}
        for p, reason in sorted(
            phases.unlinked.items(), key=lambda item: (-op_ns.get(item[0], 0), name_of(item[0]))
        )
    ]
    # Every phase is IR ops, so a phase's profiled time is its attributed time (events no op
    # received have no phase: `unattributed`) and no phase is a bucket of its own.
    record = phase_record(
        phase_ns,
        ledger.unattributed_ns,
        phase_ns,
        backward_linked_ns=sum(op_ns.get(p, 0) for p in phases.forward_of),
    )
    return {
        **record,
        "phases_estimated_ns": estimated_ns,
        "backward_ops": len(phases.forward_of) + len(phases.unlinked),
        "backward_ops_linked": len(phases.forward_of),
        "backward_by_forward": links[:MAX_LISTED_LINKS],
        "unlinked_backward": unlinked[:MAX_LISTED_LINKS],
    }


def training_record(
    phases: TrainingPhases | None, ledger: Ledger, name_of: Callable[[int], str]
) -> dict[str, Any] | None:
    """The ledger's training summary, or None for a step without backward ops."""
    return None if phases is None else training_summary(ledger, phases, name_of)


def training_brief(summary: dict[str, Any]) -> dict[str, Any]:
    """A training summary without its per-op rows, for `coverage.json`."""
    return {key: value for key, value in summary.items() if key not in TRAINING_ROWS}
