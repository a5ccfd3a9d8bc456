"""An annotated level as Model Explorer's own graph JSON, for levels its MLIR adapter cannot read.

Model Explorer's builtin MLIR adapter refuses dialects it does not know (torch, IREE's `flow` with
`util`, linalg on tensors in some forms); its JSON loader (`builtin_json`) reads a graph
collection in the adapter's own output format (`graph_builder.GraphCollection`: graphs of
`GraphNode`s with `namespace`, `attrs` and `incomingEdges`). Here: one graph per `func.func`,
nodes numbered as the adapter numbers them (`explorer_node_ids`), so the node data irprof writes
for the `.mlir` applies to the JSON graph unchanged; edges from def-use; the namespace from the
op's name scope, so Model Explorer folds layers as the model defines them; each node's profile
as attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iree.compiler import ir

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.model_explorer_ids import ExplorerNode, explorer_node_ids
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp, scope_separator
from irprof.bundle import RunBundle


@dataclass
class GraphNode:
    """One node of Model Explorer's graph JSON (its field names)."""

    id: str
    label: str
    namespace: str = ""
    attrs: list[dict[str, str]] = field(default_factory=list)
    incomingEdges: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ExplorerGraphs:
    """The graphs of one level: graph id (function symbol) -> its nodes in id order."""

    level: str
    graphs: dict[str, list[GraphNode]]


def _attrs(op: ProfiledOp) -> list[dict[str, str]]:
    attrs = [{"key": "op", "value": op.op_name}, {"key": "location", "value": op.location}]
    if op.source:
        attrs.append({"key": "source", "value": op.source})
    if op.profile is not None:
        profile = op.profile
        attrs += [
            {"key": "irprof.total_us", "value": f"{profile.total_ns / 1000:.3f}"},
            {"key": "irprof.count", "value": str(profile.count)},
            {"key": "irprof.share", "value": f"{profile.fraction:.2%}"},
        ]
        if profile.estimated:
            attrs.append(
                {
                    "key": "irprof.estimated",
                    "value": f"share of {profile.group} by {profile.share_basis}",
                }
            )
    return attrs


def _namespace(op: ProfiledOp) -> str:
    """The op's name scope as Model Explorer's `a/b/c` layers (no scope: the top level); a
    torch module path (`enc.layers.0`) gives one layer per module, as Model Explorer's own
    PyTorch adapter nests them."""
    scope = op.scope or op.runtime_name.rpartition("/")[0]
    if scope_separator(scope) == ".":
        scope = scope.replace(".", "/")
    return scope.strip("/")


def explorer_graphs(module: ir.Module, profiled: ProfiledModule, level: str) -> ExplorerGraphs:
    """Every function of `module` as a graph, with the node ids of `explorer_node_ids`."""
    ids: dict[int, ExplorerNode] = explorer_node_ids(module)
    index_of: dict[int, int] = {}
    ordered: list[ir.Operation] = []

    def number(op: ir.Operation) -> ir.WalkResult:
        index_of[hash(op)] = len(ordered) - 1  # the module op itself is -1
        ordered.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(number, ir.WalkOrder.PRE_ORDER)
    graphs: dict[str, list[GraphNode]] = {}
    arguments: dict[tuple[str, int], None] = {}
    for index, node in ids.items():
        op = ordered[index + 1]
        record = profiled.ops[index]
        graph_node = GraphNode(node.node_id, record.op_name, _namespace(record), _attrs(record))
        for position, operand in enumerate(op.operands):
            source = _source_of(operand, ids, index_of)
            if source is None:
                continue
            source_id, output = source
            if source_id.startswith("arg"):
                arguments[(node.graph_id, int(source_id[3:]))] = None
            graph_node.incomingEdges.append(
                {
                    "sourceNodeId": source_id,
                    "sourceNodeOutputId": str(output),
                    "targetNodeInputId": str(position),
                }
            )
        graphs.setdefault(node.graph_id, []).append(graph_node)
    for graph_id, number_ in sorted(arguments):
        graphs[graph_id].insert(0, GraphNode(f"arg{number_}", f"Input {number_}"))
    return ExplorerGraphs(level, graphs)


def _source_of(
    value: ir.Value, ids: dict[int, ExplorerNode], index_of: dict[int, int]
) -> tuple[str, int] | None:
    """The node id and output number that define `value` (None when no node does)."""
    if isinstance(value.owner, ir.Block):
        # A function's own inputs are `arg<N>` nodes; a region's (a reduce body's) have none.
        parent = value.owner.owner
        if parent is None or parent.operation.name != "func.func":
            return None
        return f"arg{ir.BlockArgument(value).arg_number}", 0
    result = ir.OpResult(value)
    owner = result.owner
    operation = owner.operation if hasattr(owner, "operation") else owner
    node = ids.get(index_of.get(hash(operation), -2))
    return (node.node_id, result.result_number) if node is not None else None


def graph_collection(graphs: ExplorerGraphs, label: str) -> dict[str, Any]:
    """The `GraphCollection` JSON object Model Explorer's JSON loader reads."""
    return {
        "label": label,
        "graphs": [
            {
                "id": graph_id,
                "nodes": [
                    {
                        "id": node.id,
                        "label": node.label,
                        "namespace": node.namespace,
                        "attrs": node.attrs,
                        "incomingEdges": node.incomingEdges,
                    }
                    for node in nodes
                ],
            }
            for graph_id, nodes in graphs.graphs.items()
        ],
    }


def load_explorer_graphs(bundle: RunBundle, level: str | None = None) -> ExplorerGraphs:
    """One annotated level of `bundle` as Model Explorer graphs (default: the first level)."""
    loaded = load_annotated_level(bundle, level)
    return explorer_graphs(loaded.module, loaded.profiled, loaded.level)
