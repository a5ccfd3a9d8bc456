"""`export --to model-explorer-graph`: an annotated level as Model Explorer's graph JSON (its JSON
loader reads it), for levels its MLIR adapter refuses; the node data of `--to model-explorer`
uses the same node ids, so one overlay serves both."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from irprof.analyses.model_explorer_graph import ExplorerGraphs, graph_collection


@dataclass(frozen=True)
class ModelExplorerGraphRenderer:
    """`<level>.graph.json`."""

    name: str = "model-explorer-graph"
    extension: str = ".json"
    # What the renderer reads from a run bundle: `(bundle, level | None) -> ExplorerGraphs`.
    input: str = "irprof.analyses.model_explorer_graph:load_explorer_graphs"

    def render(self, data: ExplorerGraphs) -> bytes:
        """JSON bytes."""
        return orjson.dumps(graph_collection(data, f"irprof {data.level}"))


RENDERER = ModelExplorerGraphRenderer()
