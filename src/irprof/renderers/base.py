"""The renderer contract and the registries that find renderers by name or file extension."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from irprof.errors import UsageError
from irprof.registry import Registry


class Renderer(Protocol):
    """Turns one kind of analysis data into the bytes of one file format."""

    name: str
    extension: str  # with the dot, e.g. ".svg"

    def render(self, data: Any) -> bytes:
        """The file's bytes."""
        ...


class ExportRenderer(Renderer, Protocol):
    """A renderer of a whole run bundle; `input` names `(bundle, level | None) -> data`."""

    input: str  # "module:function" building the renderer's data from a `RunBundle`


# Op graph format by file extension, so choosing a format imports only its renderer.
OP_GRAPH_EXTENSIONS = {
    ".dot": "dot",
    ".gv": "dot",
    ".svg": "svg",
    ".graphml": "graphml",
    ".html": "html",
}


_OP_GRAPH: Registry[Renderer] = Registry("op graph format")
_OP_GRAPH.register("dot", "irprof.renderers.op_graph_dot:RENDERER")
_OP_GRAPH.register("svg", "irprof.renderers.op_graph_svg:RENDERER")
_OP_GRAPH.register("graphml", "irprof.renderers.op_graph_graphml:RENDERER")
_OP_GRAPH.register("html", "irprof.renderers.op_graph_html:RENDERER")

# Export formats read a run bundle: each renderer names its input builder in `input`.
_EXPORTS: Registry[ExportRenderer] = Registry("export format")
_EXPORTS.register("perfetto", "irprof.renderers.perfetto_proto:RENDERER")
_EXPORTS.register("chrome", "irprof.renderers.chrome_trace:CHROME")
_EXPORTS.register("model-explorer", "irprof.renderers.model_explorer:RENDERER")
_EXPORTS.register("model-explorer-graph", "irprof.renderers.model_explorer_graph:RENDERER")
_EXPORTS.register("mlgo-log", "irprof.renderers.mlgo_log:RENDERER")


def get_op_graph_renderers() -> Registry[Renderer]:
    """Op graph renderers by format name (`dot`, `svg`, `graphml`, `html`)."""
    return _OP_GRAPH


# Event DAG formats: renderer classes, built per call with the drawing options of `irprof dag`.
_DAG: Registry[type[Any]] = Registry("event DAG format")
_DAG.register("dot", "irprof.renderers.dag_dot:DagDotRenderer")
_DAG.register("svg", "irprof.renderers.dag_svg:DagSvgRenderer")


def get_dag_renderers() -> Registry[type[Any]]:
    """Event DAG renderer classes by format (`dot`, `svg`); `cls(max_nodes=, highlight=)`."""
    return _DAG


def get_export_renderers() -> Registry[ExportRenderer]:
    """Run-bundle export renderers by format name (`perfetto`, `chrome`, `model-explorer`)."""
    return _EXPORTS


def op_graph_renderer_for(path: str | Path) -> Renderer:
    """The op graph renderer for `path`'s extension (case-insensitive)."""
    suffix = Path(path).suffix.lower()
    name = OP_GRAPH_EXTENSIONS.get(suffix)
    if name is None:
        known = ", ".join(OP_GRAPH_EXTENSIONS)
        raise UsageError(
            f"{path}: cannot tell the graph format from {suffix or 'no extension'!r}; use {known}"
        )
    return _OP_GRAPH.get(name)
