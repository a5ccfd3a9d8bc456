"""Op graph -> GraphML (NetworkX), with times, shares and colours as node data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx

from irprof.analyses.op_graph import OpGraph
from irprof.renderers.colormap import get_all_colormaps
from irprof.renderers.op_graph_dot import node_colours


def to_networkx(graph: OpGraph, *, colormap: str = "inferno") -> Any:
    """A `networkx.DiGraph` of `graph`; missing measurements are absent attributes."""
    cmap = get_all_colormaps().get(colormap)
    digraph = nx.DiGraph(function=graph.function, op_count=graph.op_count)
    for node in graph.nodes:
        fill, _ = node_colours(node, graph, cmap)
        attributes: dict[str, Any] = {
            "kind": node.kind,
            "label": node.label,
            "title": node.title,
            "location": node.location,
            "scope": node.scope,
            "ops": node.ops,
            "detail": node.detail,
            "color": fill,
        }
        if node.total_ns is not None:
            attributes["total_ns"] = int(node.total_ns)
        if node.share is not None:
            attributes["share"] = float(node.share)
        if node.op_index is not None:
            attributes["op_index"] = int(node.op_index)
        if node.runtime_name and node.runtime_name != node.title:
            # A private-function op titled through its call keeps its IR name beside it.
            attributes["runtime_name"] = node.runtime_name
        digraph.add_node(node.id, **attributes)
    for edge in graph.edges:
        digraph.add_edge(edge.src, edge.dst, type=edge.label, values=edge.values)
    return digraph


@dataclass(frozen=True)
class GraphmlRenderer:
    """`graph.graphml`."""

    name: str = "graphml"
    extension: str = ".graphml"

    def render(self, data: OpGraph) -> bytes:
        """GraphML XML as UTF-8."""
        return ("\n".join(nx.generate_graphml(to_networkx(data))) + "\n").encode("utf-8")


RENDERER = GraphmlRenderer()
