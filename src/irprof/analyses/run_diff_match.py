"""Match the ops of two runs by location keys, and compare which ops each run fused together.

Design notes: docs/views.md, "Module notes", `analyses/run_diff_match.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from irprof.analyses.profiled_ops import CONTAINER_OPS, ProfiledOp

MATCH_KINDS = ("name+source", "name", "source+kind", "node", "source")


@dataclass(frozen=True)
class OpPair:
    """One row of the op diff: an op of A, of B, or of both, and the key that matched them."""

    a: int | None  # op index in A
    b: int | None  # op index in B
    match: str  # one of MATCH_KINDS, "only in A" or "only in B"


def diff_candidates(ops: Sequence[ProfiledOp]) -> list[ProfiledOp]:
    """Ops worth matching: those that can carry time (no containers, no call ops that repeat
    their callee's time)."""
    return [op for op in ops if op.op_name not in CONTAINER_OPS and not op.inclusive]


def _keyed(
    ops: Sequence[ProfiledOp], key: Callable[[ProfiledOp], Hashable | None]
) -> dict[Hashable, ProfiledOp]:
    """`(key, ordinal)` -> op, the ordinal counting ops with the same key in walk order."""
    seen: dict[Hashable, int] = {}
    found: dict[Hashable, ProfiledOp] = {}
    for op in ops:
        value = key(op)
        if value is None:
            continue
        ordinal = seen.get(value, 0)
        seen[value] = ordinal + 1
        found[(value, ordinal)] = op
    return found


def _name_source(op: ProfiledOp) -> Hashable | None:
    return (op.runtime_name, op.source) if op.runtime_name and op.source else None


def _name(op: ProfiledOp) -> Hashable | None:
    return op.runtime_name or None


def _source_kind(op: ProfiledOp) -> Hashable | None:
    return (op.source, op.op_name) if op.source else None


_PASSES: tuple[tuple[str, Callable[[ProfiledOp], Hashable | None]], ...] = (
    ("name+source", _name_source),
    ("name", _name),
    ("source+kind", _source_kind),
)


def match_ops(a_ops: Sequence[ProfiledOp], b_ops: Sequence[ProfiledOp]) -> list[OpPair]:
    """Pairs of matched ops plus the ops of each side left alone, in B's then A's walk order."""
    left_a = diff_candidates(a_ops)
    left_b = diff_candidates(b_ops)
    pairs: list[OpPair] = []
    for label, key in _PASSES:
        keyed_a, keyed_b = _keyed(left_a, key), _keyed(left_b, key)
        matched = {keyed_a[k].index: keyed_b[k].index for k in keyed_a.keys() & keyed_b.keys()}
        pairs += [OpPair(a, b, label) for a, b in matched.items()]
        taken_b = set(matched.values())
        left_a = [op for op in left_a if op.index not in matched]
        left_b = [op for op in left_b if op.index not in taken_b]
    for label, unique_key in (("node", _node_name), ("source", _source)):
        # Among profiled ops only: an unprofiled view beside the op would make the key ambiguous.
        unique_a = _unique([op for op in left_a if op.profile], unique_key)
        unique_b = _unique([op for op in left_b if op.profile], unique_key)
        matched = {unique_a[k]: unique_b[k] for k in unique_a.keys() & unique_b.keys()}
        pairs += [OpPair(a, b, label) for a, b in matched.items()]
        taken_b = set(matched.values())
        left_a = [op for op in left_a if op.index not in matched]
        left_b = [op for op in left_b if op.index not in taken_b]
    pairs += [OpPair(None, op.index, "only in B") for op in left_b]
    pairs += [OpPair(op.index, None, "only in A") for op in left_a]
    return sorted(pairs, key=lambda p: (p.b is None, p.b if p.b is not None else p.a or 0))


def _node_name(op: ProfiledOp) -> str | None:
    """The node part of a `module|node|target` name (the target changes with decomposition)."""
    node, sep, _ = op.runtime_name.rpartition("|")
    return node if sep else None


def _source(op: ProfiledOp) -> str | None:
    return op.source or None


def _unique(ops: Sequence[ProfiledOp], key: Callable[[ProfiledOp], str | None]) -> dict[str, int]:
    """key -> op index, for keys exactly one of `ops` has."""
    count: dict[str, int] = {}
    for op in ops:
        value = key(op)
        if value is not None:
            count[value] = count.get(value, 0) + 1
    found: dict[str, int] = {}
    for op in ops:
        value = key(op)
        if value is not None and count[value] == 1:
            found[value] = op.index
    return found


FusionKind = Literal["split in B", "fused in B", "kernel changed"]


@dataclass(frozen=True)
class FusionChange:
    """Ops one run ran in one kernel and the other did not (or ran in another kernel)."""

    change: FusionKind
    members: tuple[str, ...]  # op names (B's when the op is in B)
    kernels_a: tuple[str, ...]  # kernels the members ran in, in A
    kernels_b: tuple[str, ...]  # ... and in B


def _groups(
    ops: Sequence[ProfiledOp], side_of: dict[int, int]
) -> dict[frozenset[int], tuple[str, ...]]:
    """Groups of >= 2 ops (as pair ids) that ran together -> the kernels they ran in.

    Ops ran together when their profiles name the same group (a fused TF kernel, a decomposed
    torch call), or list partners in `fused_with` and share a kernel (an XLA fusion). Sharing a
    kernel name alone is not enough: torch events are named by op type (`aten::linear`)."""
    members: dict[str, set[int]] = {}
    kernels: dict[str, dict[str, None]] = {}
    for op in ops:
        profile = op.profile
        if profile is None or op.index not in side_of:
            continue
        if profile.group:
            keys = [f"group:{profile.group}"]
        elif profile.fused_with:
            keys = [f"kernel:{kernel}" for kernel in profile.kernels]
        else:
            continue
        for key in keys:
            members.setdefault(key, set()).add(side_of[op.index])
            kernels.setdefault(key, {}).update(dict.fromkeys(profile.kernels))
    groups: dict[frozenset[int], tuple[str, ...]] = {}
    for key, ids in members.items():
        if len(ids) >= 2:
            group = frozenset(ids)
            groups[group] = tuple(dict.fromkeys((*groups.get(group, ()), *kernels[key])))
    return groups


def _kernels_of(ops: Sequence[ProfiledOp], indices: Sequence[int | None]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for index in indices:
        if index is not None and ops[index].profile is not None:
            found.update(dict.fromkeys(ops[index].profile.kernels))  # type: ignore[union-attr]
    return tuple(found)


def fusion_changes(
    pairs: Sequence[OpPair],
    a_ops: Sequence[ProfiledOp],
    b_ops: Sequence[ProfiledOp],
) -> tuple[FusionChange, ...]:
    """How the kernel groups of A and B differ over the matched ops."""
    a_id = {pair.a: number for number, pair in enumerate(pairs) if pair.a is not None}
    b_id = {pair.b: number for number, pair in enumerate(pairs) if pair.b is not None}
    groups_a, groups_b = _groups(a_ops, a_id), _groups(b_ops, b_id)

    def change(kind: FusionKind, ids: frozenset[int]) -> FusionChange:
        chosen = [pairs[number] for number in sorted(ids)]
        names = [
            b_ops[p.b].qualified_name if p.b is not None else a_ops[p.a].qualified_name  # type: ignore[index]
            for p in chosen
        ]
        return FusionChange(
            change=kind,
            members=tuple(names),
            kernels_a=_kernels_of(a_ops, [p.a for p in chosen]),
            kernels_b=_kernels_of(b_ops, [p.b for p in chosen]),
        )

    changes: list[FusionChange] = []
    for ids, kernels in groups_a.items():
        if ids in groups_b:
            if set(kernels) != set(groups_b[ids]):
                changes.append(change("kernel changed", ids))
        elif not any(ids < other for other in groups_b):
            changes.append(change("split in B", ids))
    for ids in groups_b:
        if ids not in groups_a and not any(ids < other for other in groups_a):
            changes.append(change("fused in B", ids))
    return tuple(changes)
