"""EventDag -> Graphviz DOT: nodes coloured by duration (log scale), a legend, short labels.

A duration-coloured DAG drawing, made readable at a few thousand nodes: above `max_nodes` only the
longest events are drawn (a parent is never shorter than its children, so the outline of the
run survives) and the legend says how many were left out.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from irprof.event_dag.model import EDGE_KIND_LABELS, EventDag
from irprof.renderers.colormap import get_all_colormaps
from irprof.renderers.units import format_ns

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

DEFAULT_MAX_NODES = 2000
LABEL_CHARS = 28
EDGE_STYLES = {"nest": "solid", "sequence": "dashed", "flow": "bold", "level": "solid"}
LEGEND_STOPS = 6
PATH_COLOR = "#1f6feb"  # blue: apart from every colour of the duration maps


def short_label(name: str, limit: int = LABEL_CHARS) -> str:
    """The tail of a long name (op names end in what matters: `.../dense1/MatMul:_MklMatMul`)."""
    return name if len(name) <= limit else "…" + name[-(limit - 1) :]


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _scale(dur: I64) -> tuple[F64, float, float]:
    """Position in [0, 1] of each duration on a log scale, and the scale's ends in ns."""
    positive = np.maximum(dur.astype(np.float64), 1.0)
    low, high = float(positive.min(initial=1.0)), float(positive.max(initial=1.0))
    if high <= low:
        return np.ones(len(dur)), low, high
    return (np.log(positive) - math.log(low)) / (math.log(high) - math.log(low)), low, high


def render_dag_dot(
    dag: EventDag,
    max_nodes: int = DEFAULT_MAX_NODES,
    colormap: str = "inferno",
    highlight: tuple[int, ...] = (),
) -> str:
    """DOT text of the DAG (at most `max_nodes` nodes, the longest ones, plus every node of
    `highlight`: a path, e.g. the critical path, drawn with thick outlines and links)."""
    cmap = get_all_colormaps().get(colormap)
    shown = np.arange(len(dag))
    if len(dag) > max_nodes:
        longest = np.lexsort((shown, -dag.dur_ns))[:max_nodes]
        shown = np.union1d(longest, np.asarray(highlight, dtype=np.int64))
    on_path = set(highlight)
    keep = np.zeros(len(dag), dtype=bool)
    keep[shown] = True
    position, low, high = _scale(dag.dur_ns[shown])
    title = _title(dag, len(shown))
    if highlight:
        title += f" · critical path: {len(highlight)} events (thick blue)"
    lines = [
        "digraph events {",
        '  graph [rankdir=TB, nodesep=0.15, ranksep=0.3, fontname="Helvetica", '
        f"label={_quote(title)}, labelloc=t];",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=9, '
        'height=0.25, margin="0.06,0.02"];',
        '  edge [arrowsize=0.5, color="#00000066"];',
    ]
    for node, where in zip(shown.tolist(), position.tolist(), strict=True):
        name = dag.node_name(node)
        dur = int(dag.dur_ns[node])
        tooltip = (
            f"{name}\n{dag.track_labels[int(dag.track[node])]}\n"
            f"ts {int(dag.ts_ns[node])} ns, duration {format_ns(dur)}"
        )
        outline = f", color={_quote(PATH_COLOR)}, penwidth=3" if node in on_path else ""
        lines.append(
            f"  n{node} [label={_quote(short_label(name) + chr(10) + format_ns(dur))}, "
            f"fillcolor={_quote(cmap.hex(where))}, fontcolor={_quote(cmap.text_on(where))}, "
            f"tooltip={_quote(tooltip)}{outline}];"
        )
    links = set(itertools.pairwise(highlight))
    for src, dst, kind in zip(
        dag.edge_src.tolist(), dag.edge_dst.tolist(), dag.edge_kind.tolist(), strict=True
    ):
        if keep[src] and keep[dst]:
            style = EDGE_STYLES[EDGE_KIND_LABELS[kind]]
            if (src, dst) in links:
                links.discard((src, dst))
                style += f", color={_quote(PATH_COLOR)}, penwidth=2.5"
            lines.append(f"  n{src} -> n{dst} [style={style}];")
    # Path steps the DAG draws no edge for (a nested chain returning to its caller's next
    # event): dotted, and left out of the layout's ranking.
    for src, dst in sorted(links):
        lines.append(
            f"  n{src} -> n{dst} [style=dotted, color={_quote(PATH_COLOR)}, penwidth=2.5, "
            "constraint=false];"
        )
    lines.extend(_legend(cmap_name=colormap, low=low, high=high))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _title(dag: EventDag, shown: int) -> str:
    omitted = f" (the {shown:,} longest of {len(dag):,} events)" if shown < len(dag) else ""
    return f"{Path(dag.source).name} · {dag.mode} DAG · {len(dag):,} events{omitted}"


def _legend(cmap_name: str, low: float, high: float) -> list[str]:
    """A row of swatches from shortest to longest duration, plus the edge styles."""
    cmap = get_all_colormaps().get(cmap_name)
    lines = ["  subgraph cluster_legend {", '    label="duration (log scale)"; fontsize=10;']
    previous = None
    for index in range(LEGEND_STOPS):
        where = index / (LEGEND_STOPS - 1)
        value = round(math.exp(math.log(low) + where * (math.log(high) - math.log(low))))
        fill, text = _quote(cmap.hex(where)), _quote(cmap.text_on(where))
        lines.append(
            f"    legend{index} [label={_quote(format_ns(value))}, fillcolor={fill}, "
            f"fontcolor={text}];"
        )
        if previous is not None:
            lines.append(f"    {previous} -> legend{index} [style=invis];")
        previous = f"legend{index}"
    lines.append("    { rank=same; " + " ".join(f"legend{i};" for i in range(LEGEND_STOPS)) + " }")
    lines.append("  }")
    return lines


@dataclass(frozen=True)
class DagDotRenderer:
    """`dag.dot`."""

    name: str = "dot"
    extension: str = ".dot"
    max_nodes: int = DEFAULT_MAX_NODES
    highlight: tuple[int, ...] = ()  # a path of nodes to draw in thick blue

    def render(self, data: EventDag) -> bytes:
        """DOT text as UTF-8."""
        return render_dag_dot(data, self.max_nodes, highlight=self.highlight).encode("utf-8")


RENDERER = DagDotRenderer()
