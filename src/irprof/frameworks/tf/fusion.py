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
# Kernels the runtime's lowering of If/While/Case adds: plumbing of a control-flow op, never a
# rewrite of an IR op (`TfOpIndex.control_flow_owner` resolves them).
CONTROL_FLOW_KERNELS = frozenset(
    {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond", "NoOp", "ControlTrigger"}
)
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

    def data_edges(self) -> tuple[tuple[str, int], ...]:
        """The data inputs, or every input at port 0 when only names were recorded."""
        return self.data_inputs or tuple((name, 0) for name in self.inputs)


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


def feeds_only_pruned(view: TfOpIndex, positions: list[int], membership: Membership) -> bool:
    """Whether the ops at `positions` of another level's `view` have readers, none of which ran
    (not in the executed graph): a value only dead code used (an RNN's first step computed
    outside its loop, which grappler prunes while keeping the variable reads it made)."""
    readers = [
        owner if isinstance(owner, ir.Operation) else owner.operation
        for position in positions
        for result in view.infos[position].op.results
        for use in result.uses
        if (owner := use.owner) is not None
    ]
    entry = view.entry_name()
    if not readers or any(view.function_of[p] != entry for p in positions):
        return False  # a function's node names are not the executed graph's: cannot tell
    for operation in readers:
        reader = view.position_of.get(operation)
        if reader is None:
            return False  # a terminator or an op the index does not name: it may have run
        name = split_function_suffix(view.infos[reader].keys.name or "")[0]
        if not name or name in membership.graph.nodes or name in membership.graph.folded:
            return False
    return True


def name_scope(node: str) -> str:
    """The scope a node was created under (a rewrite node's scope is its original's)."""
    if REWRITE_MARKER in node:
        return node.split(REWRITE_MARKER, 1)[0]
    return node.rsplit("/", 1)[0] if "/" in node else ""


@dataclass(frozen=True)
class Leaves:
    """What a value is computed from, back to the values that ran as nodes of their own: those
    values (`("op", position, result)` or `("arg", name, 0)`) and the arguments neither side
    can name, compared by number."""

    named: frozenset[tuple[str, str, int]]
    unnamed: frozenset[str]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Leaves):
            return NotImplemented
        return self.named == other.named and len(self.unnamed) == len(other.unnamed)

    def __hash__(self) -> int:
        return hash((self.named, len(self.unnamed)))


@dataclass
class Membership:
    """Executed node -> IR ops it ran; IR op -> the fused node that absorbed it."""

    view: TfOpIndex
    graph: ExecutedGraph
    present: set[int] = field(default_factory=set)
    absorbed_by: dict[int, str] = field(default_factory=dict)
    folded: set[int] = field(default_factory=set)
    _members: dict[str, list[int]] = field(default_factory=dict)
    _equivalents: dict[str, int | None] = field(default_factory=dict)
    _op_leaf_cache: dict[int, Leaves] = field(default_factory=dict)
    # (function, argument number) -> the `_Arg` node feeding it (the entry function's inputs).
    _argument_names: dict[tuple[str, int], str] = field(default_factory=dict)

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
                membership.folded.add(position)
        membership._argument_names = view.entry_argument_names()
        # Rewrite nodes first: they claim the absent ops they replaced before a fused consumer
        # could grow over them (the consumer reads the rewrite node, not those ops), and each
        # claims the op computing its own value before any grows over another's.
        rewrites = [name for name in graph.nodes if membership._is_rewrite(name)]
        roots = {name: membership._equivalent(name) for name in rewrites}
        for name, root in roots.items():
            if root is not None:
                membership.absorbed_by.setdefault(root, name)
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
        if not self._is_rewrite(node):
            return []  # an argument, result, constant or control-flow plumbing: no op of its own
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
        """Ops a grappler-created node replaced: the absent op computing its value (`_equivalent`)
        grown over the absent ops feeding only it. A partial result no IR op computed (a leaf of
        an `AddOpsRewrite` tree) shares the ops of the rewrite it feeds: the tree replaced them
        together."""
        root = self._equivalent(node)
        if root is not None:
            return self._grow([root])
        shared: list[list[int]] = []
        for consumer in self.graph.consumers.get(node, []):
            if self._is_rewrite(consumer):
                members = self.members_of(consumer)
                if members and members not in shared:
                    shared.append(members)
        return shared[0] if len(shared) == 1 else []  # none, or ambiguous: a listed gap

    def _is_rewrite(self, node: str) -> bool:
        """A node of the executed graph with no IR op that computes something (grappler made
        it): not an argument, result or constant."""
        executed = self.graph.nodes.get(node)
        return (
            executed is not None
            and executed.op not in ("_Arg", "_Retval", *CONSTANT_KERNELS, *CONTROL_FLOW_KERNELS)
            and not self.view.resolve(node)
        )

    def _equivalent(self, node: str) -> int | None:
        """The absent IR op computing the same value as rewrite `node`, from def-use alone.

        Both graphs are walked back to the values that ran as nodes of their own (and arguments;
        constants drop out): a rewrite and the op it replaced sum, negate or square the same
        values, so they have the same leaves (`_node_leaves`, `_op_leaves`). The op is searched
        among the absent producers of the ops that read the rewrite's value in the IR
        (`_readers`), so a rewrite in a chain of residual blocks finds its own block's add, not
        the next block's, whose leaves include the whole chain before it.
        """
        if node in self._equivalents:
            return self._equivalents[node]
        self._equivalents[node] = None  # guards recursion through rewrite consumers
        leaves = self._node_leaves(node, set())
        found: list[int] = []
        if leaves is not None:
            for reader, operand in self._readers(node, set()):
                for position in self._matching_producers(reader, operand, leaves):
                    if position not in found:
                        found.append(position)
            if not found:
                found = self._computing_anywhere(node, leaves)
        root = found[0] if len(found) == 1 else None
        self._equivalents[node] = root
        return root

    def _computing_anywhere(self, node: str, leaves: Leaves) -> list[int]:
        """The absent ops a composition node replaced when no IR reader leads to them: grappler
        reassociated the products around it (Keras GELU's gradient: the executed `Gelu/mul`
        reads the `Neg`, `Exp` composition, the IR's `Gelu/mul` another product and a
        constant), so readers of one name differ between the graphs. A node that names the ops
        it composes (`_UnaryOpsComposition`'s `op_names`, kept as `fused_ops`) replaced a chain
        of absent ops of those types computing from its leaves, whose top no other such op
        reads: the tops of such chains (`_equivalent` takes one only when it is unique)."""
        composed = self.graph.nodes[node].fused_ops
        if not composed or not leaves.named | leaves.unnamed:
            return []
        same = {
            p
            for p in range(len(self.view.infos))
            if self._absorbable(p) and self._op_leaves(p) == leaves
        }
        tops = [
            p
            for p in sorted(same)
            if not same.intersection(self.view.def_use.users(p))
            and self._chain_types(p, len(composed), same) == composed
        ]
        return tops

    def _chain_types(self, top: int, length: int, inside: set[int]) -> tuple[str, ...] | None:
        """The op types of the chain of `length` ops ending at `top`, innermost first, each the
        one producer in `inside` of the next; None when it forks or ends sooner."""
        chain = [top]
        while len(chain) < length:
            below = [p for p in self.view.def_use.producers(chain[-1]) if p in inside]
            if len(below) != 1:
                return None
            chain.append(below[0])
        return tuple(self.view.op_type(p) for p in reversed(chain))

    def _readers(self, node: str, seen: set[str]) -> list[tuple[int, int | None]]:
        """IR ops reading `node`'s value, with the operand when the consumer's kernel is its
        op's (a fused consumer's inputs do not line up with its named op's operands): present
        consumers' ops, and through a rewrite consumer, the op it replaced (or its readers)."""
        seen.add(node)
        found: list[tuple[int, int | None]] = []
        for consumer in dict.fromkeys(self.graph.consumers.get(node, [])):
            executed = self.graph.nodes.get(consumer)
            if executed is None or consumer in seen:
                continue
            positions = self.view.resolve(consumer)
            if positions:
                named = self._named_op(positions, executed)
                if self._runs_more_than(executed, named):
                    found.append((named, None))
                else:
                    found += [
                        (named, index)
                        for index, (producer, _) in enumerate(executed.data_edges())
                        if producer == node
                    ]
            elif self._is_rewrite(consumer):
                root = self._equivalent(consumer)
                found += [(root, None)] if root is not None else self._readers(consumer, seen)
        return found

    def _matching_producers(self, reader: int, operand: int | None, leaves: Leaves) -> list[int]:
        """Absent producers of `reader` (of its `operand`, else of any) with these leaves, the
        search looking through absent ops that do not match; each match taken down to the
        deepest op of a one-input chain with the same leaves (a Relu of a sum is not the sum)."""
        operands = range(len(self.view.infos[reader].op.operands))
        starts = [operand] if operand is not None and operand in operands else list(operands)
        pending = [p for i in starts if (p := self.view.producer(reader, i)) is not None]
        seen = {reader}
        found: list[int] = []
        while pending and len(seen) < MAX_MEMBERS:
            current = pending.pop(0)
            if current in seen or not self._absorbable(current) or self._is_leaf(current):
                continue
            seen.add(current)
            if self._op_leaves(current) == leaves:
                deepest = self._deepest_alike(current, leaves, seen)
                if deepest is not None:
                    found.append(deepest)
                continue
            for index in range(len(self.view.infos[current].op.operands)):
                producer = self.view.producer(current, index)
                if producer is not None:
                    pending.append(producer)
        return found

    def _deepest_alike(self, position: int, leaves: Leaves, seen: set[int]) -> int | None:
        """Down a chain of ops with one non-constant input and the same leaves (Relu, Identity)
        to the op that computes the value; None when the chain outruns the walk's bound."""
        while True:
            inputs = [
                p
                for i in range(len(self.view.infos[position].op.operands))
                if (p := self.view.producer(position, i)) is None or not self._is_constant(p)
            ]
            below = inputs[0] if len(inputs) == 1 else None
            if (
                below is None
                or not self._absorbable(below)
                or self._is_leaf(below)
                or self._op_leaves(below) != leaves
            ):
                return position
            if len(seen) >= MAX_MEMBERS:
                return None
            seen.add(below)
            position = below

    def _is_constant(self, position: int) -> bool:
        return position in self.folded or self.view.infos[position].op_name in CONSTANT_OPS

    def _is_leaf(self, position: int) -> bool:
        return position in self.present and not self._is_constant(position)

    def _op_leaves(self, position: int) -> Leaves:
        """The values an absent op computes from, through other absent ops: results of ops that
        ran as nodes, and function arguments; constants drop out."""
        cached = self._op_leaf_cache.get(position)
        if cached is not None:
            return cached
        named: set[tuple[str, str, int]] = set()
        unnamed: set[str] = set()
        for operand in self.view.infos[position].op.operands:
            if isinstance(operand, ir.BlockArgument):
                key = (self.view.function_of[position], operand.arg_number)
                name = self._argument_names.get(key)
                if name is not None:
                    named.add(("arg", name, 0))
                else:
                    unnamed.add(f"{key[0]}#{key[1]}")
                continue
            owner = operand.owner
            producer = self.view.position_of.get(
                owner if isinstance(owner, ir.Operation) else owner.operation
            )
            if producer is None or self._is_constant(producer):
                continue
            if producer in self.present:
                named.add(("op", str(producer), ir.OpResult(operand).result_number))
                continue
            inner = self._op_leaves(producer)
            named |= inner.named
            unnamed |= inner.unnamed
        leaves = Leaves(frozenset(named), frozenset(unnamed))
        self._op_leaf_cache[position] = leaves
        return leaves

    def _node_leaves(self, node: str, seen: set[str]) -> Leaves | None:
        """`_op_leaves` on the executed side: through rewrite nodes down to the nodes with an IR
        op (its named op's result at the input's port) and the arguments; None when a cycle or
        a node of another kind stands in the way."""
        executed = self.graph.nodes.get(node)
        if executed is None or node in seen:
            return None
        seen.add(node)
        named: set[tuple[str, str, int]] = set()
        unnamed: set[str] = set()
        for producer, port in executed.data_edges():
            source = self.graph.nodes.get(producer)
            if source is not None and source.op in CONSTANT_KERNELS:
                continue
            positions = self.view.resolve(producer)
            if positions:
                named.add(("op", str(self._named_op(positions, source)), port))
            elif source is None or source.op == "_Arg":
                if producer in self._argument_names.values():
                    named.add(("arg", producer, 0))
                else:
                    unnamed.add(producer)
            elif self._is_rewrite(producer):
                inner = self._node_leaves(producer, seen)
                if inner is None:
                    return None
                named |= inner.named
                unnamed |= inner.unnamed
            else:
                return None
        return Leaves(frozenset(named), frozenset(unnamed))

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
