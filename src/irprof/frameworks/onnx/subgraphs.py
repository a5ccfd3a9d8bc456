"""The subgraphs a node holds: an `If`'s branches, a `Loop`'s or `Scan`'s body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the parent process reads names only; the capture's child has onnx
    import onnx

# `onnx.AttributeProto.AttributeType` values, fixed by onnx.proto.
GRAPH, GRAPHS = 5, 10


def node_subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """(attribute name, graph) of each graph attribute of `node`; a list of graphs gives
    `name[i]` for the i-th."""
    for attribute in node.attribute:
        if attribute.type == GRAPH:
            yield attribute.name, attribute.g
        elif attribute.type == GRAPHS:
            for index, graph in enumerate(attribute.graphs):
                yield f"{attribute.name}[{index}]", graph
