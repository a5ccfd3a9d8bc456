"""Ops of a region their parent applies: a sort's comparator, a reduce's combiner, a scatter's
update, a linalg body. They have no kernel of their own: the parent runs them per element, so
their work and time are the parent's, and coverage counts them as doing no work of their own.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.mlir.cost_model import is_payload
from irprof.mlir.op_index import OpInfo

PAYLOAD_REASON = "in a region"


def payload_owner(op: ir.Operation) -> ir.Operation | None:
    """The op that applies `op`'s region (the nearest ancestor that is not itself payload), or
    None when `op` is not payload."""
    if not is_payload(op):
        return None
    owner = op.parent
    while owner is not None and is_payload(owner):
        owner = owner.parent
    return owner


def payload_reason(op: ir.Operation) -> str | None:
    """Why a payload op has no time of its own, or None when `op` is not payload."""
    owner = payload_owner(op)
    if owner is None:
        return None
    return f"{PAYLOAD_REASON} {owner.name} applies, run in its kernel: its time is the parent's"


def payload_owners(infos: list[OpInfo]) -> dict[int, int]:
    """Position of each payload op -> position of the op that applies its region."""
    position_of = {info.op: position for position, info in enumerate(infos)}
    owners: dict[int, int] = {}
    for position, info in enumerate(infos):
        owner = payload_owner(info.op)
        found = position_of.get(owner) if owner is not None else None
        if found is not None:
            owners[position] = found
    return owners
