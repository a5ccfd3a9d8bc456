"""The renderer contract and the registries that find renderers by name or file extension."""

from __future__ import annotations

import importlib
from collections.abc import Callable
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


def _lazy(module: str, attribute: str = "RENDERER") -> Renderer:
    loaded: Renderer = getattr(importlib.import_module(module), attribute)
    return loaded


def _factory(module: str, attribute: str) -> Callable[[], Renderer]:
    return lambda: _lazy(module, attribute)


def _registry(kind: str, entries: tuple[tuple[str, str, str], ...]) -> Registry[Renderer]:
    registry: Registry[Renderer] = Registry(kind)
    for name, module, attribute in entries:
        registry.register(name, _factory(module, attribute))
    return registry


# Op graph format by file extension, so choosing a format imports only its renderer.
OP_GRAPH_EXTENSIONS = {
    ".dot": "dot",
    ".gv": "dot",
    ".svg": "svg",
    ".graphml": "graphml",
    ".html": "html",
}


_OP_GRAPH = _registry(
    "op graph format",
    (
        ("dot", "irprof.renderers.op_graph_dot", "RENDERER"),
        ("svg", "irprof.renderers.op_graph_svg", "RENDERER"),
        ("graphml", "irprof.renderers.op_graph_graphml", "RENDERER"),
        ("html", "irprof.renderers.op_graph_html", "RENDERER"),
    ),
)

_EXPORTS = _registry(
    "export format",
    (
        ("perfetto", "irprof.renderers.perfetto", "PERFETTO"),
        ("chrome", "irprof.renderers.perfetto", "CHROME"),
        ("model-explorer", "irprof.renderers.model_explorer", "RENDERER"),
    ),
)


def get_op_graph_renderers() -> Registry[Renderer]:
    """Op graph renderers by format name (`dot`, `svg`, `graphml`, `html`)."""
    return _OP_GRAPH


def get_export_renderers() -> Registry[Renderer]:
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
