"""A JAX training step's structure in StableHLO: forward, backward and optimizer ops, and the
forward ops each backward op differentiates.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/training.py`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from irprof.correlate.ledger import Ledger
from irprof.correlate.training import DefUse, TrainingPhases, label_phases, training_record
from irprof.coverage import is_trivial_op
from irprof.frameworks.jax.ir_index import JaxOpIndex

TRANSPOSE = "transpose("
JVP = "jvp("
CONTAINERS = frozenset({"func.func", "builtin.module"})
CONSTANTS = frozenset({"stablehlo.constant", "arith.constant"})


def unwrap_transpose(component: str) -> str:
    """`transpose(jvp(f))` -> `jvp(f)`; other components unchanged."""
    while component.startswith(TRANSPOSE) and component.endswith(")"):
        component = component[len(TRANSPOSE) : -1]
    return component


def phase_of_name(name: str) -> str | None:
    """`backward`, `forward` or None (neither) from an op's name path."""
    components = name.split("/")
    if any(c.startswith(TRANSPOSE) for c in components):
        return "backward"
    if any(JVP in c for c in components):
        return "forward"
    return None


def _scope_key(name: str) -> str:
    """The forward scope a name stands for: transposes unwrapped, the primitive dropped."""
    return "/".join(unwrap_transpose(c) for c in name.split("/")[:-1])


def _names(index: JaxOpIndex, position: int) -> list[str]:
    names = [identity.name for identity in index.identities(position)]
    own = index.infos[position].keys.name
    return names or ([own] if own else [])


def training_phases(index: JaxOpIndex) -> TrainingPhases | None:
    """Phases and backward -> forward links of a StableHLO module; None without backward ops."""
    named: dict[int, str] = {}
    for position, info in enumerate(index.infos):
        if info.op_name in CONTAINERS:
            continue
        phases = {phase_of_name(name) for name in _names(index, position)} - {None}
        if phases:
            named[position] = "backward" if "backward" in phases else "forward"
    backward = {p for p, phase in named.items() if phase == "backward"}
    if not backward:
        return None
    forward = {p for p, phase in named.items() if phase == "forward"}
    graph = DefUse(index.infos)
    optimizer = graph.closure(backward, down=True, blocked=backward | forward)
    optimizer |= graph.closure(optimizer, down=False, blocked=backward | forward)
    ops = [p for p, info in enumerate(index.infos) if info.op_name not in CONTAINERS]
    phase_of = label_phases(ops, backward, forward, optimizer)
    forward_of, unlinked = _links(index, graph, phase_of, backward)
    return TrainingPhases(phase_of, forward_of, unlinked)


def _links(
    index: JaxOpIndex, graph: DefUse, phase_of: dict[int, str], backward: set[int]
) -> tuple[dict[int, tuple[int, ...]], dict[int, str]]:
    exact: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)
    loose: dict[tuple[str, str], list[int]] = defaultdict(list)
    primal: set[int] = set()
    for position, phase in phase_of.items():
        if phase != "forward" or is_trivial_op(index.infos[position].op_name):
            continue
        if any(phase_of.get(user) != "backward" for user in graph.users(position)):
            primal.add(position)
        for identity in index.identities(position) or ():
            exact[(_scope_key(identity.name), identity.chain)].append(position)
            if identity.chain:
                loose[(_scope_key(identity.name), identity.chain[0])].append(position)
    forward_of: dict[int, tuple[int, ...]] = {}
    unlinked: dict[int, str] = {}
    for position in sorted(backward):
        if index.infos[position].op_name in CONSTANTS:
            continue  # no work
        candidates: list[int] = []
        for identity in index.identities(position):
            key = _scope_key(identity.name)
            found = exact.get((key, identity.chain)) or (
                loose.get((key, identity.chain[0]), []) if identity.chain else []
            )
            candidates += [p for p in found if p not in candidates]
        if not candidates:
            unlinked[position] = "no forward op with its scope at its source position"
            continue
        chosen = [p for p in candidates if p in primal] or candidates
        forward_of[position] = tuple(sorted(chosen))
    return forward_of, unlinked


def jax_training_record(index: JaxOpIndex, ledger: Ledger) -> dict[str, Any] | None:
    """The ledger's training summary (None for a step without backward ops)."""

    def name_of(position: int) -> str:
        # JAX names repeat (two `dot_general`s of one scope): the source position tells apart.
        keys = index.infos[position].keys
        name = keys.name or index.infos[position].op_name
        return f"{name} @ {keys.source}" if keys.source else name

    return training_record(training_phases(index), ledger, name_of)
