"""Model Explorer node data: per-op time on the graph Model Explorer draws from the same MLIR.

Format of google-ai-edge/model-explorer's `node_data_builder.ModelNodeData`: graph id ->
`{"results": {node_id: {"value": ...}}, "gradient": [{"stop", "bgColor"}, ...]}`. Values are
microseconds of attributed time (inclusive for calls); load the annotated `.mlir` in Model
Explorer and this file as its node data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from irprof.analyses.model_explorer_ids import NodeDataExport
from irprof.renderers.colormap import get_all_colormaps


def node_data(export: NodeDataExport, *, colormap: str = "inferno") -> dict[str, Any]:
    """The `ModelNodeData` JSON object (graph id -> GraphNodeData)."""
    cmap = get_all_colormaps().get(colormap)
    gradient = [{"stop": stop, "bgColor": colour} for stop, colour in cmap.stops(6)]
    graphs: dict[str, dict[str, Any]] = {}
    for index, node in export.nodes.items():
        op = export.profiled.ops[index]
        if op.profile is None:
            continue
        graph = graphs.setdefault(node.graph_id, {"results": {}, "gradient": gradient})
        graph["results"][node.node_id] = {"value": round(op.profile.total_ns / 1000.0, 3)}
    return graphs


@dataclass(frozen=True)
class ModelExplorerRenderer:
    """`node_data.json`."""

    name: str = "model-explorer"
    extension: str = ".json"
    # What the renderer reads from a run bundle: `(bundle, level | None) -> NodeDataExport`.
    input: str = "irprof.analyses.model_explorer_ids:load_node_data_export"

    def render(self, data: NodeDataExport) -> bytes:
        """JSON bytes."""
        return orjson.dumps(node_data(data), option=orjson.OPT_INDENT_2)


RENDERER = ModelExplorerRenderer()
