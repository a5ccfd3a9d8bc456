"""Model Explorer node data checked against Model Explorer itself (its MLIR adapter and its
node-data dataclasses), on real annotated TF and JAX captures."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.model_explorer_ids import NodeDataExport, explorer_node_ids
from irprof.analyses.trace_export import load_trace_export
from irprof.bundle import RunBundle
from irprof.renderers.chrome_trace import chrome_trace
from irprof.renderers.model_explorer import RENDERER
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    fixture_jax_bundle,
    fixture_tf_bundle,
)

adapter = pytest.importorskip("model_explorer.builtin_mlir_adapter")
builder = pytest.importorskip("model_explorer.node_data_builder")


def explorer_graphs(path: str) -> dict[str, dict[str, Any]]:
    """graph id -> node id -> node, as Model Explorer's own MLIR adapter builds them."""
    collections = adapter.BuiltinMlirAdapter().convert(path, {})["graphCollections"]
    return {
        graph["id"]: {node["id"]: node for node in graph["nodes"]}
        for collection in collections
        for graph in collection.graphs
    }


@pytest.mark.parametrize(
    ("bundle_name", "level"), [("tf_bundle", "tf"), ("jax_bundle", "stablehlo")]
)
def test_node_ids_match_model_explorers_mlir_adapter(
    bundle_name: str, level: str, request: pytest.FixtureRequest
) -> None:
    bundle: RunBundle = request.getfixturevalue(bundle_name)
    loaded = load_annotated_level(bundle, level)
    ours = explorer_node_ids(loaded.module)
    theirs = explorer_graphs(str(loaded.path))
    op_nodes = {
        (graph, node_id)
        for graph, nodes in theirs.items()
        for node_id in nodes
        if not node_id.startswith(("arg", "pid"))
    }
    assert {(node.graph_id, node.node_id) for node in ours.values()} == op_nodes
    for index, node in ours.items():
        op = loaded.profiled.ops[index]
        label = theirs[node.graph_id][node.node_id]["label"]
        assert label in (op.op_name, op.op_name.split(".", 1)[1], "Outputs"), (op, label)


def test_node_data_loads_into_model_explorers_dataclasses(jax_bundle: RunBundle) -> None:
    loaded = load_annotated_level(jax_bundle, "stablehlo")
    export = NodeDataExport(loaded.level, loaded.profiled, explorer_node_ids(loaded.module))
    ours = json.loads(RENDERER.render(export))
    model = builder.ModelNodeData(
        graphsData={
            graph_id: builder.GraphNodeData(
                results={k: builder.NodeDataResult(**v) for k, v in graph["results"].items()},
                gradient=[builder.GradientItem(**item) for item in graph["gradient"]],
            )
            for graph_id, graph in ours.items()
        }
    )
    theirs = json.loads(model.to_json_string())  # adds Model Explorer's defaults
    assert set(theirs) == set(ours)
    for graph_id, graph in ours.items():
        assert theirs[graph_id]["results"] == graph["results"]
        assert theirs[graph_id]["gradient"] == graph["gradient"]
    conv_index = next(op.index for op in loaded.profiled.ops if op.op_name.endswith("convolution"))
    conv = export.nodes[conv_index]
    assert ours[conv.graph_id]["results"][conv.node_id]["value"] == pytest.approx(
        loaded.profiled.ops[conv_index].total_ns / 1000, abs=1e-3
    )


def _chrome_events(bundle: RunBundle) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = chrome_trace(load_trace_export(bundle))["traceEvents"]
    return events


def test_trace_export_names_private_function_ops_through_their_call(
    jax_bundle: RunBundle,
) -> None:
    events = _chrome_events(jax_bundle)
    refs = [
        ref
        for e in events
        if e.get("cat") != "irprof.op"
        for ref in e.get("args", {}).get("irprof", [])
    ]
    maxima = [ref for ref in refs if ref["op"] == "stablehlo.maximum"]
    assert maxima, "relu's maximum is attributed to kernels"
    for ref in maxima:
        assert ref["name"] == "jit(mlp)/jit(relu)/max"  # as `irprof top` names it
        assert ref["runtime_name"] == "max"  # the IR's own name stays at hand
        assert ref["function"].startswith("relu")
        assert re.fullmatch(r".*jax_mlp\.py:\d+:\d+", ref["location"]), ref
    # The two relu calls are two lines of the model.
    assert len({ref["location"] for ref in maxima}) == 2
    assert not [ref for ref in refs if "/" not in ref["name"]], "a bare primitive name"
    # The IR-level track's slices carry the same names.
    slices = {e["name"] for e in events if e.get("cat") == "irprof.op"}
    assert "jit(mlp)/jit(relu)/max" in slices
    assert "max" not in slices


def test_trace_export_of_named_ops_has_no_runtime_name_copy(tf_bundle: RunBundle) -> None:
    refs = [ref for e in _chrome_events(tf_bundle) for ref in e.get("args", {}).get("irprof", [])]
    assert refs
    # TF node names are never bare primitives: args keep their shape, names as the IR says.
    assert all("runtime_name" not in ref for ref in refs)
