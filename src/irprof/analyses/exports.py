"""What each export format reads from a run bundle, by format name (lazy builders)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from irprof.analyses.bundle_views import load_annotated_level
from irprof.analyses.event_ops import load_trace_export
from irprof.analyses.model_explorer_ids import NodeDataExport, explorer_node_ids
from irprof.bundle import RunBundle
from irprof.registry import Registry

ExportInput = Callable[[RunBundle, str | None], Any]


def _model_explorer_input(bundle: RunBundle, level: str | None) -> Any:
    loaded = load_annotated_level(bundle, level)
    return NodeDataExport(loaded.level, loaded.profiled, explorer_node_ids(loaded.module))


_INPUTS: Registry[ExportInput] = Registry("export format")
_INPUTS.register("perfetto", lambda: load_trace_export)
_INPUTS.register("chrome", lambda: load_trace_export)
_INPUTS.register("model-explorer", lambda: _model_explorer_input)


def get_export_inputs() -> Registry[ExportInput]:
    """Format name -> builder of that renderer's input from a bundle and an optional level."""
    return _INPUTS
