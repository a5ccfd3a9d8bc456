"""EventDag -> SVG laid out by Graphviz `dot` (Debian package `graphviz`)."""

from __future__ import annotations

from dataclasses import dataclass

from irprof.event_dag.model import EventDag
from irprof.renderers.dag_dot import DEFAULT_MAX_NODES, render_dag_dot
from irprof.renderers.op_graph_svg import layout_svg


@dataclass(frozen=True)
class DagSvgRenderer:
    """`dag.svg`: nodes coloured by duration with a legend ."""

    name: str = "svg"
    extension: str = ".svg"
    max_nodes: int = DEFAULT_MAX_NODES
    highlight: tuple[int, ...] = ()  # a path of nodes to draw in thick blue

    def render(self, data: EventDag) -> bytes:
        """Laid-out SVG."""
        dot = render_dag_dot(data, self.max_nodes, highlight=self.highlight)
        return layout_svg(dot).encode("utf-8")


RENDERER = DagSvgRenderer()
