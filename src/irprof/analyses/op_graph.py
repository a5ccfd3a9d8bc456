"""The SSA data-flow graph of one function: ops are nodes, values are edges.

Block arguments of the function are input nodes, its terminator is the output node. An op with
regions (a loop, a `linalg.generic`) is one node carrying its body's time; values its body reads
from above become edges into it. Large graphs collapse name scopes (Keras layers, JAX name stacks,
torch module paths) into group nodes carrying the summed time, coarsening the scopes until the
graph fits `max_nodes`; `expand` keeps chosen scopes open.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from iree.compiler import ir

from irprof.analyses.profiled_ops import (
    CONTAINER_OPS,
    ProfiledModule,
    ProfiledOp,
    scope_depth,
    scope_prefix,
    scope_separator,
)
from irprof.errors import UsageError

NodeKind = Literal["op", "input", "output", "group"]
Grouping = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class OpGraphOptions:
    """Which function to draw and how much to collapse."""

    function: str | None = None  # default: the function with the most attributed time
    expand: tuple[str, ...] = ()  # scopes (prefixes) drawn op by op even when grouping
    grouping: Grouping = "auto"  # auto: group only when the graph has more than max_nodes ops
    # Op and group nodes; function inputs come on top, one node each up to this many (a
    # function with more arguments, e.g. a TF function taking every weight variable, draws
    # them as one node).
    max_nodes: int = 300


@dataclass(frozen=True)
class GraphNode:
    """An op, a group of ops sharing a scope, a function input or the function's results."""

    id: str
    kind: NodeKind
    label: str  # op kind, `%argN`, `return`, or the last component of a group's scope
    title: str  # runtime name of an op (qualified by its call in a private function), group scope
    location: str  # `file:line:col` (a private-function op's call site) or compact location
    scope: str  # scope an op sits in (draws clusters), or the group's scope
    total_ns: int | None  # None: no measurement reached this node
    share: float | None
    ops: int  # IR ops represented (1 for an op node)
    op_index: int | None = None  # module walk index of an op node
    detail: str = ""  # value type of an input, op kinds of a group
    runtime_name: str = ""  # an op's name in the IR and the trace, when it has one


@dataclass(frozen=True)
class GraphEdge:
    """Values flowing from `src` to `dst` (several values between groups are one edge)."""

    src: str
    dst: str
    label: str  # the type of the first value
    values: int = 1


@dataclass(frozen=True)
class OpGraph:
    """A drawable function graph; plain data for every renderer."""

    function: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    op_count: int  # ops of the function before grouping
    grouped_scopes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def max_share(self) -> float:
        """Largest share among nodes: the top of the colour scale."""
        return max((n.share for n in self.nodes if n.share is not None), default=0.0)


@dataclass
class _TopOp:
    """One direct child of the function body and the time measured in its subtree.

    Its own profile wins (a call's inclusive time, a loop measured as a whole); otherwise the
    profiles of the ops nested in its regions add up.
    """

    record: ProfiledOp
    nested_ns: int = 0
    nested_share: float = 0.0
    nested_measured: bool = False
    is_terminator: bool = False

    @property
    def measured(self) -> bool:
        """Whether any measurement reached this node."""
        return self.record.profile is not None or self.nested_measured

    @property
    def total_ns(self) -> int:
        """The node's time."""
        return self.record.total_ns if self.record.profile is not None else self.nested_ns

    @property
    def share(self) -> float:
        """The node's share of profiled time."""
        return self.record.share if self.record.profile is not None else self.nested_share


def _function_ops(module: ir.Module) -> dict[str, ir.Operation]:
    found: dict[str, ir.Operation] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in CONTAINER_OPS and op.name != "builtin.module":
            if "sym_name" in op.attributes:
                found[str(ir.StringAttr(op.attributes["sym_name"]).value)] = op
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _pick_function(profiled: ProfiledModule, names: list[str], wanted: str | None) -> str:
    if not names:
        raise UsageError(f"{profiled.path}: no function (func.func / util.func) to draw")
    if wanted is not None:
        if wanted not in names:
            raise UsageError(
                f"{profiled.path}: no function named {wanted!r}; functions: {', '.join(names)}"
            )
        return wanted
    time_of: Counter[str] = Counter()
    size_of: Counter[str] = Counter()
    for op in profiled.ops:
        time_of[op.function] += op.total_ns
        size_of[op.function] += 1
    return max(names, key=lambda name: (time_of[name], size_of[name], name == "main"))


def build_op_graph(
    module: ir.Module, profiled: ProfiledModule, options: OpGraphOptions = OpGraphOptions()
) -> OpGraph:
    """The data-flow graph of one function of an annotated module."""
    functions = _function_ops(module)
    name = _pick_function(profiled, list(functions), options.function)
    func_op = functions[name].operation
    func_key = hash(func_op)
    func_index = _walk_index_of(module, func_op)

    tops: list[_TopOp] = []
    top_of: dict[int, int] = {}  # op hash -> position in `tops`
    raw_edges: list[tuple[str, int, str]] = []  # (source node id, top position, type)
    position = func_index

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal position
        position += 1
        record = profiled.ops[position]
        parent = op.parent
        parent_key = hash(parent) if parent is not None else 0
        if parent_key == func_key:
            top = len(tops)
            tops.append(_TopOp(record, is_terminator=_is_terminator(op)))
        else:
            top = top_of[parent_key]
        top_of[hash(op)] = top
        if record.profile is not None and parent_key != func_key:
            entry = tops[top]
            entry.nested_ns += record.profile.total_ns
            entry.nested_share += record.profile.fraction
            entry.nested_measured = True
        for operand in op.operands:
            source = _source_node(operand, func_key, top_of)
            if source is not None:
                raw_edges.append((source, top, str(operand.type)))
        return ir.WalkResult.ADVANCE

    for region in func_op.regions:
        for block in region.blocks:
            for child in block.operations:
                child.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    inputs = _input_nodes(func_op)
    if len(inputs) > options.max_nodes:
        inputs, raw_edges = _merged_inputs(inputs, raw_edges)
    return _assemble(name, tops, inputs, raw_edges, options)


def _walk_index_of(module: ir.Module, target: ir.Operation) -> int:
    """Position of `target` in the same pre-order walk `profiled_ops_of` numbered."""
    wanted = hash(target)
    counter = -1  # the module op itself is not numbered
    found = -1

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal counter, found
        if hash(op) == wanted:
            found = counter
            return ir.WalkResult.INTERRUPT
        counter += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _is_terminator(op: ir.Operation) -> bool:
    # Only direct children of a function are asked, where the terminator is its return.
    return op.name.endswith("return") and not op.results


def _source_node(operand: ir.Value, func_key: int, top_of: dict[int, int]) -> str | None:
    owner = operand.owner
    if isinstance(owner, ir.Block):
        # Arguments of nested blocks (loop induction variables) stay inside their op.
        if hash(owner.owner) == func_key:
            return f"arg{ir.BlockArgument(operand).arg_number}"
        return None
    top = top_of.get(hash(owner))
    return None if top is None else f"n{top}"


def _input_nodes(func_op: ir.Operation) -> list[GraphNode]:
    if not func_op.regions or not func_op.regions[0].blocks:
        return []
    entry = func_op.regions[0].blocks[0]
    return [
        GraphNode(
            id=f"arg{arg.arg_number}",
            kind="input",
            label=f"%arg{arg.arg_number}",
            title=f"%arg{arg.arg_number}: {arg.type}",
            location="",
            scope="",
            total_ns=None,
            share=None,
            ops=0,
            detail=str(arg.type),
        )
        for arg in entry.arguments
    ]


MERGED_INPUTS_ID = "args"


def _merged_inputs(
    inputs: list[GraphNode], raw_edges: list[tuple[str, int, str]]
) -> tuple[list[GraphNode], list[tuple[str, int, str]]]:
    """The function's arguments as one input node; their edges leave from it."""
    types = Counter(node.detail for node in inputs)
    node = GraphNode(
        id=MERGED_INPUTS_ID,
        kind="input",
        label=f"%arg0..%arg{len(inputs) - 1}",
        title=f"{len(inputs)} function arguments",
        location="",
        scope="",
        total_ns=None,
        share=None,
        ops=0,
        detail=", ".join(f"{kind} x{count}" for kind, count in types.most_common(6)),
    )
    argument_ids = {argument.id for argument in inputs}
    edges = [
        (MERGED_INPUTS_ID if source in argument_ids else source, target, type_text)
        for source, target, type_text in raw_edges
    ]
    return [node], edges


def _op_node(position: int, top: _TopOp) -> GraphNode:
    record = top.record
    return GraphNode(
        id=f"n{position}",
        kind="output" if top.is_terminator else "op",
        label="return" if top.is_terminator else record.op_name,
        # Named and placed like `irprof top`: `jit(mlp)/jit(relu)/max` at the call, not `max`.
        title=record.qualified_name,
        location=record.site_source,
        scope=record.scope,
        total_ns=top.total_ns if top.measured else None,
        share=top.share if top.measured else None,
        ops=1,
        op_index=record.index,
        detail=record.op_name,
        runtime_name=record.runtime_name,
    )


def _group_keys(tops: list[_TopOp], options: OpGraphOptions) -> dict[int, str]:
    """Top position -> group scope, for the ops that collapse.

    `always` collapses every full scope (one group per layer). `auto`, above `max_nodes` ops,
    starts from the outermost scopes and keeps opening the hottest group into its child scopes
    while the graph still fits, so the time-heavy parts of a big model are drawn in detail.
    """
    wants_groups = options.grouping == "always" or (
        options.grouping == "auto" and len(tops) > options.max_nodes
    )
    if not wants_groups:
        return {}

    def expanded(scope: str) -> bool:
        return any(
            scope == s or scope.startswith(s + scope_separator(scope)) for s in options.expand
        )

    scopes = {
        pos: top.record.scope
        for pos, top in enumerate(tops)
        if top.record.scope and not top.is_terminator and not expanded(top.record.scope)
    }
    if options.grouping == "always":
        keys = dict(scopes)
    else:
        keys = _open_hottest_groups(tops, scopes, options.max_nodes)
    sizes = Counter(keys.values())
    # A group of one op says less than the op itself.
    return {pos: key for pos, key in keys.items() if sizes[key] > 1}


def _open_hottest_groups(
    tops: list[_TopOp], scopes: dict[int, str], max_nodes: int
) -> dict[int, str]:
    # Depths are computed once and each group keeps its deepest member's depth: asking every
    # member again on each opening was O(ops x openings), minutes on a 786k-op function.
    depth_of = {pos: scope_depth(scope) for pos, scope in scopes.items()}
    members: dict[str, list[int]] = {}
    for pos, scope in scopes.items():
        members.setdefault(scope_prefix(scope, 1), []).append(pos)
    time_of = {key: sum(tops[p].total_ns for p in group) for key, group in members.items()}
    deepest = {key: max(depth_of[p] for p in group) for key, group in members.items()}
    node_count = len(tops) - len(scopes) + len(members)
    settled: set[str] = set()  # groups that cannot open (no deeper scope, or too many children)
    while True:
        openable = [
            key for key in members if key not in settled and deepest[key] > scope_depth(key)
        ]
        if not openable:
            break
        key = max(openable, key=lambda k: (time_of[k], len(members[k]), k))
        depth = scope_depth(key) + 1
        children: dict[str, list[int]] = {}
        for pos in members[key]:
            children.setdefault(scope_prefix(scopes[pos], depth), []).append(pos)
        if list(children) == [key]:  # nothing deeper to open into: never loop on it
            settled.add(key)
            continue
        child_time = {c: sum(tops[p].total_ns for p in group) for c, group in children.items()}
        if node_count - 1 + len(children) <= max_nodes:
            opened = list(children)
            del members[key], time_of[key]
            node_count -= 1
        else:
            # Too many children: open the hottest that fit; the rest stay in this group.
            room = max_nodes - node_count
            opened = sorted(children, key=lambda c: (-child_time[c], c))[: max(room, 0)]
            settled.add(key)
            if not opened:
                continue
            members[key] = [p for c in children if c not in opened for p in children[c]]
            time_of[key] -= sum(child_time[c] for c in opened)
        for child in opened:
            members[child] = children[child]
            time_of[child] = child_time[child]
            deepest[child] = max(depth_of[p] for p in children[child])
        node_count += len(opened)
    return {pos: key for key, group in members.items() for pos in group}


def _assemble(
    name: str,
    tops: list[_TopOp],
    inputs: list[GraphNode],
    raw_edges: list[tuple[str, int, str]],
    options: OpGraphOptions,
) -> OpGraph:
    groups = _group_keys(tops, options)
    group_ids = {scope: f"g{i}" for i, scope in enumerate(dict.fromkeys(groups.values()))}
    node_of = {
        pos: group_ids[groups[pos]] if pos in groups else f"n{pos}" for pos in range(len(tops))
    }

    nodes: list[GraphNode] = list(inputs)
    members: dict[str, list[_TopOp]] = {}
    for pos, top in enumerate(tops):
        if pos in groups:
            members.setdefault(groups[pos], []).append(top)
        else:
            nodes.append(_op_node(pos, top))
    for scope, tops_in in members.items():
        measured = [t for t in tops_in if t.measured]
        kinds = Counter(t.record.op_name for t in tops_in)
        nodes.append(
            GraphNode(
                id=group_ids[scope],
                kind="group",
                label=scope.split(scope_separator(scope))[-1],
                title=scope,
                location="",
                scope=scope,
                total_ns=sum(t.total_ns for t in measured) if measured else None,
                share=sum(t.share for t in measured) if measured else None,
                ops=len(tops_in),
                detail=", ".join(f"{k} x{n}" for k, n in kinds.most_common(6)),
            )
        )

    merged: dict[tuple[str, str], GraphEdge] = {}
    for source, target, type_text in raw_edges:
        src = node_of[int(source[1:])] if source.startswith("n") else source
        dst = node_of[target]
        if src == dst:
            continue
        edge = merged.get((src, dst))
        merged[(src, dst)] = (
            GraphEdge(src, dst, type_text)
            if edge is None
            else GraphEdge(src, dst, edge.label, edge.values + 1)
        )
    return OpGraph(
        function=name,
        nodes=tuple(nodes),
        edges=tuple(merged.values()),
        op_count=len(tops),
        grouped_scopes=tuple(group_ids),
    )
