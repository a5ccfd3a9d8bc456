"""Which IR ops one executed TF node ran, from the executed graph and the IR's def-use chains.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/fusion.py`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.frameworks.tf.graph import FUSION_RULES, TfOpIndex, base_kernel_type
from irprof.mlir.keys import split_function_suffix

FOLDING_PREFIX = "ConstantFolding/"
REWRITE_MARKER = "/ArithmeticOptimizer/"
CONSTANT_OPS = frozenset({"tf.Const"})
CONSTANT_KERNELS = frozenset({"Const", "HostConst"})
MAX_MEMBERS = 256  # a layer norm is ~10 ops; a walk this long has left the fused node


@dataclass(frozen=True)
class ExecutedNode:
    """One node of the graph the runtime executed."""

    name: str
    op: str
    fused_ops: tuple[str, ...]
    inputs: tuple[str, ...]  # producer node names (no `^` control marks, no `:N` ports)
    # The data inputs in order, as (producer node, output port): what a kernel event's
    # recorded input shapes describe, one by one.
    data_inputs: tuple[tuple[str, int], ...] = ()


@dataclass
class ExecutedGraph:
    """The executed graph with its consumer edges and the nodes constant folding replaced."""

    nodes: dict[str, ExecutedNode]
    source: str
    consumers: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    folded: set[str] = field(default_factory=set)

    @staticmethod
    def of_bundle(bundle: RunBundle) -> ExecutedGraph | None:
        """The bundle's runtime graph, or None when the capture recorded none."""
        name = bundle.manifest().options.get("runtime_graph")
        if not name:
            return None
        path = bundle.member(str(name), what="runtime graph")
        try:
            raw = json.loads(bundle.read_member(str(name), what="runtime graph"))
            nodes = {
                str(node): ExecutedNode(
                    str(node),
                    str(spec["op"]),
                    tuple(str(f) for f in spec.get("fused_ops", ())),
                    tuple(str(i).lstrip("^").split(":", 1)[0] for i in spec.get("inputs", ())),
                    tuple(_data_input(str(i)) for i in spec.get("inputs", ()) if str(i)[:1] != "^"),
                )
                for node, spec in raw["nodes"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BundleError(f"{path}: malformed runtime graph ({exc!r})") from exc
        graph = ExecutedGraph(nodes, str(raw.get("source", "offline grappler")))
        for node in nodes.values():
            for producer in node.inputs:
                graph.consumers[producer].append(node.name)
            if node.name.startswith(FOLDING_PREFIX):
                # `ConstantFolding/<node>-<suffix>` replaced `<node>` by a constant.
                graph.folded.add(node.name.removeprefix(FOLDING_PREFIX).rsplit("-", 2)[0])
        return graph


def _data_input(text: str) -> tuple[str, int]:
    """`node:1` -> (`node`, 1); `node` -> (`node`, 0)."""
    node, sep, port = text.rpartition(":")
    if sep and port.isdigit():
        return node, int(port)
    return text, 0


def name_scope(node: str) -> str:
    """The scope a node was created under (a rewrite node's scope is its original's)."""
    if REWRITE_MARKER in node:
        return node.split(REWRITE_MARKER, 1)[0]
    return node.rsplit("/", 1)[0] if "/" in node else ""


@dataclass
class Membership:
    """Executed node -> IR ops it ran; IR op -> the fused node that absorbed it."""

    view: TfOpIndex
    graph: ExecutedGraph
    present: set[int] = field(default_factory=set)
    absorbed_by: dict[int, str] = field(default_factory=dict)
    _members: dict[str, list[int]] = field(default_factory=dict)

    @staticmethod
    def build(view: TfOpIndex, graph: ExecutedGraph) -> Membership:
        """Index which IR ops ran as nodes, then resolve every fused and rewrite node."""
        membership = Membership(view, graph)
        for name in graph.nodes:
            membership.present.update(view.resolve(name))
        for position, info in enumerate(view.infos):
            node = split_function_suffix(info.keys.name or "")[0]
            if node in graph.folded:
                membership.present.add(position)  # a constant now: it runs as nothing
        # Rewrite nodes first: they claim the absent ops they replaced before a fused consumer
        # could grow over them (the consumer reads the rewrite node, not those ops).
        for name in sorted(graph.nodes, key=lambda n: bool(view.resolve(n))):
            membership.members_of(name)
        return membership

    def members_of(self, node: str) -> list[int]:
        """IR ops the executed `node` ran, named op first; [] when none is found."""
        if node in self._members:
            return self._members[node]
        self._members[node] = []  # guards recursion through rewrite nodes
        found = self._resolve(node)
        self._members[node] = found
        for position in found:
            if position not in self.present:
                self.absorbed_by.setdefault(position, node)
        return found

    def _resolve(self, node: str) -> list[int]:
        executed = self.graph.nodes.get(node)
        positions = self.view.resolve(node)
        if positions:
            named = self._named_op(positions, executed)
            if executed is None or not self._runs_more_than(executed, named):
                return [named]
            members = self._grow([named])
            # Kernels that also compute a sibling of the named op (a backprop filter that sums
            # the bias gradient from the same output gradient): the family's own rule finds it.
            rule = FUSION_RULES.get(base_kernel_type(executed.op))
            if rule is not None:
                members += [
                    p for p in rule(self.view, named) if p not in members and self._absorbable(p)
                ]
            return members
        if executed is None or executed.op in ("_Arg", "_Retval", *CONSTANT_KERNELS):
            return []
        return self._rewritten(node)

    def _named_op(self, positions: list[int], executed: ExecutedNode | None) -> int:
        """The op a node name stands for when a pipeline split the node into several ops that
        keep its location (tf-standard turns a RealDiv by a constant into a `tf.Mul` by a
        folded `tf.Const`, both named after the node): the one of the kernel's type, else the
        first that is not a constant."""
        if len(positions) == 1:
            return positions[0]
        if executed is not None:
            kernel = base_kernel_type(executed.op)
            typed = [p for p in positions if base_kernel_type(self.view.op_type(p)) == kernel]
            if typed:
                return typed[0]
        computing = [p for p in positions if self.view.infos[p].op_name not in CONSTANT_OPS]
        return (computing or positions)[0]

    def _runs_more_than(self, executed: ExecutedNode, named: int) -> bool:
        """The node's kernel is not its named op's type, or it fuses others."""
        if executed.op in CONSTANT_KERNELS or executed.op == "NoOp":
            # Folded to a constant, or a lowered If/While left as a NoOp anchor: the node stands
            # for its own op and runs nothing else.
            return False
        own = base_kernel_type(self.view.op_type(named))
        return bool(executed.fused_ops) or base_kernel_type(executed.op) != own

    def _rewritten(self, node: str) -> list[int]:
        """Ops a grappler-created node replaced: the absent ops in its scope that its consumer
        reads, directly or through other absent (fused) ops. A rewrite feeding another rewrite
        (the leaves of an `AddOpsRewrite` tree) shares that rewrite's ops: the tree replaced
        them together."""
        scope = name_scope(node)
        roots: list[int] = []
        for consumer in self.graph.consumers.get(node, []):
            if not self.view.resolve(consumer):
                # Another node without an op: a rewrite shares its ops; a `_Retval` or a
                # constant has none (`_resolve`).
                shared = self.members_of(consumer)
                if shared:
                    return shared
                continue
            for root in self._absent_in_scope(self.view.resolve(consumer)[0], scope):
                if root not in roots:
                    roots.append(root)
        if len(roots) != 1:
            return []  # none, or ambiguous: better a listed gap than a guess
        return self._grow(roots)

    def _absent_in_scope(self, start: int, scope: str) -> list[int]:
        """Absent ops of `scope` the op at `start` reads, looking through other absent ops."""
        found: list[int] = []
        pending = [start]
        seen = {start}
        while pending and len(seen) < MAX_MEMBERS:
            current = pending.pop()
            for index in range(len(self.view.infos[current].op.operands)):
                producer = self.view.producer(current, index)
                if producer is None or producer in seen or producer in self.present:
                    continue
                seen.add(producer)
                name = split_function_suffix(self.view.infos[producer].keys.name or "")[0]
                if scope and name.startswith(scope + "/") and self._absorbable(producer):
                    found.append(producer)
                elif self.view.infos[producer].op_name not in CONSTANT_OPS:
                    pending.append(producer)
        return found

    def _absorbable(self, position: int) -> bool:
        info = self.view.infos[position]
        return (
            position not in self.present
            and position not in self.absorbed_by
            and info.op_name not in CONSTANT_OPS
        )

    def _grow(self, roots: list[int]) -> list[int]:
        """Roots plus absent producers whose every user is already a member (fixpoint)."""
        members = list(roots)
        inside = set(roots)
        function = self.view.function_of[roots[0]]
        changed = True
        while changed and len(members) < MAX_MEMBERS:
            changed = False
            for member in list(members):
                for index in range(len(self.view.infos[member].op.operands)):
                    producer = self.view.producer(member, index)
                    if (
                        producer is None
                        or producer in inside
                        or not self._absorbable(producer)
                        or self.view.function_of[producer] != function
                        or not self._only_feeds(producer, inside)
                    ):
                        continue
                    inside.add(producer)
                    members.append(producer)
                    changed = True
        return members

    def _only_feeds(self, position: int, inside: set[int]) -> bool:
        """Every use of the op's results is by an op in `inside`."""
        for result in self.view.infos[position].op.results:
            for use in result.uses:
                owner = use.owner
                operation = owner if isinstance(owner, ir.Operation) else owner.operation
                if self.view.position_of.get(operation) not in inside:
                    return False
        return True
