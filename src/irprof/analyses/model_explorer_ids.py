"""Model Explorer's node ids for the ops of an MLIR module.

Mirrors `FuncOpToSubgraph` / `AddNode` / `MaybeAddNestedRegion` of google-ai-edge/model-explorer
(`src/builtin-adapter/adapters/mlir/translate_helpers.cc`): one graph per `func.func` (its symbol
is the graph id; `NoOp` is skipped); ids count up from 0 over the ops of the function's entry
block in order, terminator included, and the ops directly inside an op's regions are numbered
right after that op (one level deep; deeper ops get no node). Block arguments are `arg<N>` nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.profiled_ops import ProfiledModule
from irprof.bundle import RunBundle


@dataclass(frozen=True)
class ExplorerNode:
    """Where an op appears in Model Explorer: graph (function symbol) and node id."""

    graph_id: str
    node_id: str


@dataclass
class _OpenFunction:
    graph_id: str
    entry_block: int  # hash of the entry block: ops of other blocks get no node
    next_id: int = 0


def explorer_node_ids(module: ir.Module) -> dict[int, ExplorerNode]:
    """Module walk index (as `profiled_ops_of` numbers ops) -> Model Explorer node."""
    nodes: dict[int, ExplorerNode] = {}
    index = -1  # the module op itself is not numbered
    functions: dict[int, _OpenFunction] = {}  # func.func hash -> its numbering
    depth_of: dict[int, int] = {}  # op hash -> depth below its function (1 = body op)
    func_of: dict[int, int] = {}  # op hash -> hash of its function

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal index
        key = hash(op)
        parent = op.parent
        parent_key = hash(parent) if parent is not None else 0
        if op.name == "func.func":
            symbol = str(ir.StringAttr(op.attributes["sym_name"]).value)
            entry = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
            functions[key] = _OpenFunction(symbol, hash(entry) if entry is not None else 0)
            depth_of[key] = 0
            func_of[key] = key
        elif parent_key in func_of:
            function = func_of[parent_key]
            depth = depth_of[parent_key] + 1
            func_of[key] = function
            depth_of[key] = depth
            numbering = functions[function]
            in_entry = depth != 1 or hash(op.block) == numbering.entry_block
            if numbering.graph_id != "NoOp" and depth <= 2 and in_entry:
                nodes[index] = ExplorerNode(numbering.graph_id, str(numbering.next_id))
                numbering.next_id += 1
        index += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return nodes


@dataclass(frozen=True)
class NodeDataExport:
    """One annotated level and where its ops sit in Model Explorer."""

    level: str
    profiled: ProfiledModule
    nodes: dict[int, ExplorerNode]  # op walk index -> Model Explorer node


def load_node_data_export(bundle: RunBundle, level: str | None = None) -> NodeDataExport:
    """One annotated level of `bundle` as Model Explorer node data (default: the first)."""
    loaded = load_annotated_level(bundle, level)
    return NodeDataExport(loaded.level, loaded.profiled, explorer_node_ids(loaded.module))
