"""Op graph -> one self-contained HTML page (inline SVG viewer with pan, zoom, search)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irprof.analyses.op_graph import OpGraph
from irprof.renderers.colormap import get_all_colormaps
from irprof.renderers.html_page import page
from irprof.renderers.op_graph_dot import node_colours
from irprof.renderers.op_graph_svg import SvgRenderer


def graph_payload(graph: OpGraph, *, colormap: str = "inferno") -> dict[str, Any]:
    """The laid-out SVG and per-node data the viewer script reads."""
    cmap = get_all_colormaps().get(colormap)
    return {
        "function": graph.function,
        "op_count": graph.op_count,
        "svg": SvgRenderer().render(graph).decode("utf-8"),
        "nodes": {
            node.id: {
                "id": node.id,
                "kind": node.kind,
                "label": node.label,
                "title": node.title,
                "location": node.location,
                "scope": node.scope,
                "total_ns": node.total_ns,
                "share": node.share,
                "ops": node.ops,
                "op_index": node.op_index,
                "detail": node.detail,
                "runtime_name": node.runtime_name,
                "colour": node_colours(node, graph, cmap)[0],
            }
            for node in graph.nodes
        },
    }


@dataclass(frozen=True)
class HtmlGraphRenderer:
    """`graph.html`."""

    name: str = "html"
    extension: str = ".html"

    def render(self, data: OpGraph) -> bytes:
        """The page as UTF-8."""
        return page(
            title=f"irprof op graph @{data.function}",
            data=graph_payload(data),
            scripts=("graph_view.js", "graph_page.js"),
            styles=("report.css",),
        ).encode("utf-8")


RENDERER = HtmlGraphRenderer()
