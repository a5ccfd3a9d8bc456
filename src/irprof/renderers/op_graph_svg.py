"""Op graph -> SVG through Graphviz `dot` (Debian package `graphviz`)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass

from irprof.analyses.op_graph import OpGraph
from irprof.errors import IrprofError
from irprof.renderers.op_graph_dot import render_dot

LAYOUT_TIMEOUT_S = 120
# Graphviz `dot` is super-linear: a chain of ops that all also read one input took 80 s and
# 21 GB at 5,000 nodes, 3.2 GB and past 70 s at 1,000, and still over 60 s at 300 (that shape
# is left to LAYOUT_TIMEOUT_S). Refuse big graphs before starting rather than await the OOM killer.
MAX_LAYOUT_NODES = 600


def layout_svg(dot_text: str, *, engine: str = "dot") -> str:
    """Run Graphviz on DOT text and return the SVG; errors name the fix."""
    binary = shutil.which(engine)
    if binary is None:
        raise IrprofError(
            f"Graphviz `{engine}` is not on PATH; install it (Debian: apt-get install graphviz) "
            "or write .dot / .graphml instead"
        )
    try:
        done = subprocess.run(
            [binary, "-Tsvg"],
            input=dot_text.encode("utf-8"),
            capture_output=True,
            timeout=LAYOUT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise IrprofError(
            f"Graphviz `{engine}` took over {LAYOUT_TIMEOUT_S} s; collapse more scopes "
            "(lower max nodes) or write .dot"
        ) from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise IrprofError(f"Graphviz `{engine}` failed: {message}")
    return done.stdout.decode("utf-8")


@dataclass(frozen=True)
class SvgRenderer:
    """`graph.svg`."""

    name: str = "svg"
    extension: str = ".svg"

    def render(self, data: OpGraph) -> bytes:
        """Laid-out SVG."""
        check_layout_size(data)
        return layout_svg(render_dot(data)).encode("utf-8")


def check_layout_size(graph: OpGraph) -> None:
    """Refuse graphs too big for Graphviz to lay out in reasonable time and memory."""
    if len(graph.nodes) > MAX_LAYOUT_NODES:
        kinds: Counter[str] = Counter(node.kind for node in graph.nodes)
        parts = ", ".join(
            f"{kinds[kind]} {label}"
            for kind, label in (("op", "ops"), ("group", "scope groups"), ("input", "inputs"))
            if kinds[kind]
        )
        raise IrprofError(
            f"@{graph.function}: {len(graph.nodes)} nodes ({parts}) are too many to lay out "
            f"(limit {MAX_LAYOUT_NODES}); lower --max-nodes to collapse more scopes, draw a "
            "smaller function with --function, or write .dot or .graphml instead"
        )


RENDERER = SvgRenderer()
