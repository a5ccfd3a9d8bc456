"""Locations for the nodes of a `torch.onnx.export(dynamo=True)` model (the default exporter
since torch 2.9).

Its node names (`node_MatMul_12`, `node_linear_1`) say nothing of the model, unlike the
TorchScript exporter's `/encoder/layers.0/attn/MatMul`. Each node's metadata carries what it
lost: the module path of the call (`pkg.torch.onnx.name_scopes`, cumulative dotted paths, the
FX node's own name last) and its Python stack (`pkg.torch.onnx.stack_trace`). Their ops get the
torch level's kind of location, `NameLoc("<module path>|<node>", callsite(<frames>))`, so name
scopes, source lines and `top --by scope` work as on a torch capture; the ONNX node is the part
after the separator (`node_name`). Nodes without that metadata keep their plain NameLoc.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from iree.compiler import ir

from irprof.frameworks.onnx.subgraphs import node_subgraphs
from irprof.mlir.python_frames import SourceFrame, frames_location, parse_stack_trace

if TYPE_CHECKING:  # the parent process reads names only; the capture's child has onnx
    import onnx

SEPARATOR = "|"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
STACK_TRACE = "pkg.torch.onnx.stack_trace"
# Folders libraries are installed in: a frame's file is shown from the folder below (the
# exporting machine's absolute paths mean nothing where the model is profiled).
LIBRARY_FOLDERS = frozenset({"site-packages", "dist-packages"})
# torch's own frames (`torch/nn/modules/linear.py` for every `nn.Linear`) are dropped, as on a
# torch capture, so the innermost frame is the model's line making the call.
FRAMEWORK_PREFIX = "torch/"


def node_name(location_name: str, nodes: set[str] | frozenset[str]) -> str:
    """The ONNX node an op's NameLoc names: the name itself when it is one of `nodes`, else
    the part after the module path."""
    if location_name in nodes:
        return location_name
    return location_name.partition(SEPARATOR)[2] or location_name


def module_path(metadata: dict[str, str]) -> str | None:
    """The module path of the call a node came from (`m.encoder.layers.0.attn`; "" for the
    model's own `forward`), or None when the node has no readable `name_scopes`."""
    text = metadata.get(NAME_SCOPES)
    if text is None:
        return None
    try:
        scopes = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(scopes, list) or len(scopes) < 2:
        return None
    path = scopes[-2]
    if not isinstance(path, str) or SEPARATOR in path:
        return None
    return path


def shown_file(file: str) -> str:
    """A library file from its install folder (`transformers/models/bert/modeling_bert.py`),
    any other file by its name."""
    parts = [part for part in re.split(r"[\\/]", file) if part]
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in LIBRARY_FOLDERS and index + 1 < len(parts):
            return "/".join(parts[index + 1 :])
    return parts[-1] if parts else file


def source_frames(metadata: dict[str, str]) -> tuple[SourceFrame, ...]:
    """The node's Python frames, outermost first, torch's own dropped unless nothing else."""
    frames = [
        SourceFrame(shown_file(file), line, function)
        for file, line, function in parse_stack_trace(metadata.get(STACK_TRACE))
    ]
    kept = [frame for frame in frames if not frame.file.startswith(FRAMEWORK_PREFIX)]
    return tuple(kept or frames)


def _nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Every node of `graph` and of its subgraphs (`If`, `Loop`, `Scan` bodies)."""
    for node in graph.node:
        yield node
        for _, subgraph in node_subgraphs(node):
            yield from _nodes(subgraph)


def stamp_torch_export_locations(module: ir.Operation, graph: onnx.GraphProto) -> int:
    """Give the op of every node with the exporter's metadata its module path and frames;
    returns how many ops were stamped."""
    metadata = {
        node.name: {entry.key: entry.value for entry in node.metadata_props}
        for node in _nodes(graph)
        if node.name and node.metadata_props
    }
    stamped = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal stamped
        if op.name != "torch.operator":
            return ir.WalkResult.ADVANCE
        try:
            name = str(op.location.name_str)
        except (AttributeError, ValueError, TypeError):  # not a NameLoc
            return ir.WalkResult.ADVANCE
        found = metadata.get(name)
        path = module_path(found) if found is not None else None
        if found is None or path is None:
            return ir.WalkResult.ADVANCE
        frames = frames_location(source_frames(found), op.context)
        op.location = ir.Location.name(
            f"{path}{SEPARATOR}{name}", childLoc=frames, context=op.context
        )
        stamped += 1
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return stamped
