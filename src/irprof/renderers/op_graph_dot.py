"""Op graph -> Graphviz DOT: heat-coloured nodes, scope clusters, a legend."""

from __future__ import annotations

from dataclasses import dataclass

from irprof.analyses.op_graph import GraphNode, OpGraph
from irprof.renderers.colormap import (
    NO_DATA_FILL,
    NO_DATA_TEXT,
    ColorMap,
    get_all_colormaps,
    heat_scale,
)
from irprof.renderers.html_page import reveal_bidi
from irprof.renderers.units import format_ns, format_share, shorten

LABEL_WIDTH = 44
# Edge labels (value types) help on small graphs and only add clutter on big ones.
EDGE_LABEL_LIMIT = 80


def dot_string(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines kept as `\\n`.

    Bidi controls are drawn as their `\\u202e` escape (the backslash doubled for DOT), so a
    label cannot display reordered text.
    """
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = reveal_bidi(escaped, backslash="\\\\")
    escaped = escaped.replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def short_location(location: str) -> str:
    """`dir/model.py:12:5` -> `model.py:12:5`; other locations shortened from the left."""
    head, sep, tail = location.rpartition("/")
    if sep and tail.count(":") >= 2 and head:
        return tail
    return shorten(location, LABEL_WIDTH)


def node_label(node: GraphNode) -> str:
    """The text lines drawn in a node."""
    timing = (
        f"{format_ns(node.total_ns)} · {format_share(node.share)}"
        if node.total_ns is not None
        else "no data"
    )
    if node.kind == "input":
        return f"{node.label}\n{shorten(node.detail, LABEL_WIDTH)}"
    if node.kind == "group":
        return f"▸ {shorten(node.title, LABEL_WIDTH)}\n{node.ops} ops\n{timing}"
    lines = [node.label]
    if node.title and node.title != node.label:
        lines.append(shorten(node.title, LABEL_WIDTH))
    if node.location:
        lines.append(short_location(node.location))
    if node.kind == "op":
        lines.append(timing)
    return "\n".join(lines)


def node_colours(node: GraphNode, graph: OpGraph, cmap: ColorMap) -> tuple[str, str]:
    """(fill, text) colours of a node: heat for measured ops, grey for the rest."""
    position = heat_scale(node.share, graph.max_share)
    if position is None or node.kind in ("input", "output"):
        return NO_DATA_FILL, NO_DATA_TEXT
    return cmap.hex(position), cmap.text_on(position)


def _legend(graph: OpGraph, cmap: ColorMap) -> str:
    cells = "".join(
        f'<TD BGCOLOR="{colour}" WIDTH="28" HEIGHT="14"></TD>' for _, colour in cmap.stops(8)
    )
    top = format_share(graph.max_share)
    return (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0">'
        f'<TR><TD COLSPAN="8" ALIGN="LEFT">share of profiled time ({cmap.name})</TD></TR>'
        f"<TR>{cells}</TR>"
        f'<TR><TD COLSPAN="4" ALIGN="LEFT">0%</TD><TD COLSPAN="4" ALIGN="RIGHT">{top}</TD></TR>'
        f'<TR><TD COLSPAN="8" ALIGN="LEFT" BGCOLOR="{NO_DATA_FILL}">grey: no data</TD></TR>'
        "</TABLE>>"
    )


@dataclass(frozen=True)
class DotOptions:
    """Look of the DOT output."""

    colormap: str = "inferno"
    clusters: bool = True  # draw expanded ops of one scope inside a box


def render_dot(graph: OpGraph, options: DotOptions = DotOptions()) -> str:
    """The DOT text of `graph`."""
    cmap = get_all_colormaps().get(options.colormap)
    lines = [
        f"digraph {dot_string(graph.function)} {{",
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=10, labelloc=t, '
        f"label={dot_string(f'@{graph.function}: {graph.op_count} ops')}];",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=9, '
        'margin="0.08,0.04"];',
        '  edge [color="#777777", arrowsize=0.6, fontname="Helvetica", fontsize=7];',
    ]
    clusters: dict[str, list[GraphNode]] = {}
    for node in graph.nodes:
        if options.clusters and node.kind == "op" and node.scope:
            clusters.setdefault(node.scope, []).append(node)
    clustered = {node.id for members in clusters.values() for node in members}
    for index, (scope, members) in enumerate(clusters.items()):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(
            f'    label={dot_string(shorten(scope, 60))}; style="rounded,dashed"; '
            'color="#9a9a9a"; fontcolor="#555555";'
        )
        lines.extend(f"    {_node_line(node, graph, cmap)}" for node in members)
        lines.append("  }")
    lines.extend(
        f"  {_node_line(node, graph, cmap)}" for node in graph.nodes if node.id not in clustered
    )
    with_labels = len(graph.nodes) <= EDGE_LABEL_LIMIT
    for edge in graph.edges:
        attributes = [f"tooltip={dot_string(edge.label)}"]
        if edge.values > 1:
            attributes.append(f'label="×{edge.values}"')
        elif with_labels:
            attributes.append(f"label={dot_string(shorten(edge.label, 28))}")
        lines.append(f"  {edge.src} -> {edge.dst} [{', '.join(attributes)}];")
    lines.append(f'  legend [shape=plaintext, style="", label={_legend(graph, cmap)}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_line(node: GraphNode, graph: OpGraph, cmap: ColorMap) -> str:
    fill, text = node_colours(node, graph, cmap)
    attributes = [
        f"id={dot_string('node-' + node.id)}",
        f"label={dot_string(node_label(node))}",
        f"tooltip={dot_string(node.title or node.label)}",
        f'fillcolor="{fill}"',
        f'fontcolor="{text}"',
    ]
    if node.kind == "input" or node.kind == "output":
        attributes.append("shape=ellipse")
    elif node.kind == "group":
        attributes.append('style="filled,bold"')
        attributes.append("penwidth=2")
    if node.kind == "op" and node.total_ns is None:
        attributes.append('style="rounded,filled,dashed"')
    return f"{node.id} [{', '.join(attributes)}];"


@dataclass(frozen=True)
class DotRenderer:
    """`graph.dot`."""

    name: str = "dot"
    extension: str = ".dot"

    def render(self, data: OpGraph) -> bytes:
        """DOT text as UTF-8."""
        return render_dot(data).encode("utf-8")


RENDERER = DotRenderer()
