"""A TF training step's structure: forward, backward and optimizer ops, backward -> forward links.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/training.py`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from iree.compiler import ir

from irprof.correlate.ledger import Ledger
from irprof.correlate.training import DefUse, TrainingPhases, label_phases, training_record
from irprof.coverage import is_trivial_op
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.keys import split_function_suffix

GRADIENT_SCOPE = re.compile(r"^(gradient_tape|gradients(_\d+)?)$")
GRAD_SUFFIX = "_grad"  # `tf.gradients` scopes each op's gradient as `<op>_grad`
# Ops that only hand a value on: never the forward op a gradient belongs to.
PASS_THROUGH = frozenset(
    {"tf.Identity", "tf.IdentityN", "tf.ReadVariableOp", "tf.VarHandleOp", "tf.Const"}
)
MAX_INHERIT_DEPTH = 32


def _node(view: TfOpIndex, position: int) -> str:
    return split_function_suffix(view.infos[position].keys.name or "")[0]


def is_gradient_name(node: str) -> bool:
    """True for a node created under a gradient scope (`gradient_tape/...`, `gradients/...`)."""
    head, sep, _ = node.partition("/")
    return bool(sep) and GRADIENT_SCOPE.match(head) is not None


def _produces_unused(view: TfOpIndex, position: int) -> bool:
    results = list(view.infos[position].op.results)
    return bool(results) and not any(True for result in results for _ in result.uses)


def _callers(view: TfOpIndex) -> dict[str, list[int]]:
    """Function symbol -> ops that reference it (calls, `If` branches, `While` bodies)."""
    functions = set(view.function_of)
    callers: dict[str, list[int]] = defaultdict(list)
    for position, info in enumerate(view.infos):
        if info.op_name == "func.func":
            continue
        attributes = info.op.attributes
        for index in range(len(attributes)):
            for symbol in _symbols(attributes[index].attr):
                if symbol in functions:
                    callers[symbol].append(position)
    return callers


def _symbols(attr: ir.Attribute) -> list[str]:
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return [attr.value]
    if isinstance(attr, ir.ArrayAttr):
        return [name for item in attr for name in _symbols(item)]
    return []


def _classify_function(
    view: TfOpIndex, graph: DefUse, ops: list[int], backward: set[int]
) -> dict[int, str]:
    """Phases of one function's ops from its gradient ops and its def-use graph."""
    own_backward = backward.intersection(ops)
    results = [
        p for p in ops if view.infos[p].op_name == "func.return" and view.infos[p].op.operands
    ]
    if not results:
        # A graph imported with its fetches outside (post-grappler) returns nothing: its
        # outputs are the values nobody reads.
        results = [p for p in ops if _produces_unused(view, p)]
    # What the gradients read is forward work, even when grappler made a forward op read a
    # value a gradient op computed (a deduplicated `Shape`); what consumes the gradients is the
    # update, even when the step returns the new weights; the loss and other results are
    # forward work.
    read_by_backward = graph.closure(own_backward, down=False) - own_backward
    optimizer = graph.closure(own_backward, down=True, blocked=own_backward | read_by_backward)
    outputs = graph.closure(results, down=False, blocked=own_backward | optimizer) | set(results)
    forward = (read_by_backward | outputs) - optimizer - own_backward
    optimizer |= graph.closure(optimizer, down=False, blocked=own_backward | forward)
    return label_phases(ops, own_backward, forward, optimizer)


def _phases(view: TfOpIndex, graph: DefUse, backward: set[int]) -> dict[int, str]:
    by_function: dict[str, list[int]] = defaultdict(list)
    for position, info in enumerate(view.infos):
        if info.op_name != "func.func":
            by_function[view.function_of[position]].append(position)
    callers = _callers(view)
    phase_of: dict[int, str] = {}
    inheriting = []
    for function, ops in by_function.items():
        if backward.intersection(ops) or not callers.get(function):
            phase_of.update(_classify_function(view, graph, ops, backward))
        else:
            inheriting.append(function)
    # A called function without gradient ops runs in its (first) caller's phase.
    for _ in range(MAX_INHERIT_DEPTH):
        pending = []
        for function in inheriting:
            known = [phase_of[c] for c in callers[function] if c in phase_of]
            if not known:
                pending.append(function)
                continue
            for position in by_function[function]:
                phase_of[position] = "backward" if position in backward else known[0]
        if not pending or len(pending) == len(inheriting):
            inheriting = pending
            break
        inheriting = pending
    for function in inheriting:  # a call cycle with no classified caller
        for position in by_function[function]:
            phase_of[position] = "backward" if position in backward else "other"
    return phase_of


def _scopes(node: str) -> list[str]:
    """Forward scopes a gradient node can belong to, longest first (proper prefixes only)."""
    parts = node.split("/")[1:-1]
    found = []
    for cut in range(len(parts), 0, -1):
        scope = "/".join(parts[:cut])
        found.append(scope)
        if scope.endswith(GRAD_SUFFIX):
            found.append(scope.removesuffix(GRAD_SUFFIX))
    return found


class _ForwardIndex:
    """Forward ops by their node name and by the name scope they were created in."""

    def __init__(self, view: TfOpIndex, graph: DefUse, phase_of: dict[int, str]) -> None:
        self.view = view
        self.graph = graph
        self.named: dict[str, list[int]] = defaultdict(list)
        self.in_scope: dict[str, list[int]] = defaultdict(list)
        for position, phase in phase_of.items():
            info = view.infos[position]
            if phase != "forward" or info.op_name in PASS_THROUGH or is_trivial_op(info.op_name):
                continue
            node = _node(view, position)
            if not node:
                continue
            self.named[node].append(position)
            self.in_scope[node.rpartition("/")[0]].append(position)

    def candidates(self, scope: str) -> list[int]:
        return list(dict.fromkeys(self.named.get(scope, []) + self.in_scope.get(scope, [])))

    def link(self, backward: int) -> tuple[tuple[int, ...], str]:
        """The forward ops of one backward op, or ((), why not)."""
        node = _node(self.view, backward)
        for scope in _scopes(node):
            candidates = self.candidates(scope)
            if not candidates:
                continue
            function = self.view.function_of[backward]
            local = [p for p in candidates if self.view.function_of[p] == function]
            candidates = local or candidates
            if len(candidates) == 1:
                return (candidates[0],), ""
            # Gradient functions read the forward op's outputs and inputs: an op whose output
            # the gradient reads is stronger evidence than one that shares an input with it.
            read = self._read_by(backward)
            outputs = [p for p in candidates if p in read]
            inputs = [p for p in candidates if read.intersection(self.graph.producers(p))]
            for touched in (outputs, inputs):
                if len(touched) == 1:
                    return (touched[0],), ""
            return tuple(dict.fromkeys(outputs + inputs)) or tuple(candidates), ""
        return (), "no forward op lives in any scope of its gradient name"

    def _read_by(self, position: int) -> set[int]:
        """Producers of the op's operands, looking through ops that only pass values on."""
        read: set[int] = set()
        pending = self.graph.producers(position)
        while pending:
            producer = pending.pop()
            if producer in read:
                continue
            read.add(producer)
            if self.view.infos[producer].op_name in ("tf.Identity", "tf.IdentityN"):
                pending.extend(self.graph.producers(producer))
        return read


def training_phases(view: TfOpIndex) -> TrainingPhases | None:
    """The step's phases and backward -> forward links; None when the IR has no gradient op."""
    backward = {
        position
        for position, info in enumerate(view.infos)
        if info.op_name != "func.func" and is_gradient_name(_node(view, position))
    }
    if not backward:
        return None
    graph = view.def_use
    phase_of = _phases(view, graph, backward)
    index = _ForwardIndex(view, graph, phase_of)
    forward_of: dict[int, tuple[int, ...]] = {}
    unlinked: dict[int, str] = {}
    for position in sorted(backward):
        # Every op, constants too: tf-standard folds a gradient's division into a `tf.Const`
        # that still receives the runtime node's events.
        forward, reason = index.link(position)
        if forward:
            forward_of[position] = forward
        else:
            unlinked[position] = reason
    return TrainingPhases(phase_of, forward_of, unlinked)


def tf_training_record(view: TfOpIndex, ledger: Ledger) -> dict[str, Any] | None:
    """The ledger's training summary for this level (None for an inference step)."""

    def name_of(position: int) -> str:
        return view.infos[position].keys.name or view.infos[position].op_name

    return training_record(training_phases(view), ledger, name_of)
