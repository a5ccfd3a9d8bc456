"""`export --to model-explorer-graph`: levels Model Explorer's MLIR adapter refuses (torch's
own dialect) still open in Model Explorer, through its JSON loader, with irprof's node data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from iree.compiler import ir

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.mlir.context import make_context

adapter = pytest.importorskip("model_explorer.builtin_mlir_adapter")
graph_builder = pytest.importorskip("model_explorer.graph_builder")

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module", name="torch_run")
def fixture_torch_run(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    root = tmp_path_factory.mktemp("me") / "run"
    shutil.copytree(FIXTURES / "torch" / "cnn", root)
    bundle = RunBundle(root)
    annotate_bundle(bundle, "torch")
    return bundle


def _export(bundle: RunBundle, fmt: str, out: Path) -> Any:
    assert main(["export", str(bundle.root), "--to", fmt, "--level", "torch", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_adapter_refuses_the_torch_level(torch_run: RunBundle) -> None:
    with pytest.raises(Exception):  # noqa: B017  (whatever the adapter raises)
        adapter.BuiltinMlirAdapter().convert(str(torch_run.annotated_path("torch")), {})


def test_graph_json_is_model_explorers_format_and_carries_the_overlay(
    torch_run: RunBundle, tmp_path: Path
) -> None:
    collection = _export(torch_run, "model-explorer-graph", tmp_path / "graph.json")
    node_data = _export(torch_run, "model-explorer", tmp_path / "node_data.json")
    # Model Explorer's own dataclasses accept every graph and node as written.
    (graph,) = [
        graph_builder.Graph(
            id=g["id"],
            nodes=[
                graph_builder.GraphNode(
                    id=n["id"],
                    label=n["label"],
                    namespace=n["namespace"],
                    attrs=[graph_builder.KeyValue(**kv) for kv in n["attrs"]],
                    incomingEdges=[graph_builder.IncomingEdge(**e) for e in n["incomingEdges"]],
                )
                for n in g["nodes"]
            ],
        )
        for g in collection["graphs"]
    ]
    ids = {node.id for node in graph.nodes}
    assert len(ids) == len(graph.nodes)
    assert all(edge.sourceNodeId in ids for node in graph.nodes for edge in node.incomingEdges)
    # The node data written for the .mlir applies to the JSON graph: same graph and node ids.
    results = node_data[graph.id]["results"]
    assert results and set(results) <= ids
    timed = {node.id for node in graph.nodes if any(a.key == "irprof.total_us" for a in node.attrs)}
    assert set(results) == timed


def test_edges_are_the_functions_def_use(torch_run: RunBundle, tmp_path: Path) -> None:
    collection = _export(torch_run, "model-explorer-graph", tmp_path / "graph.json")
    (graph,) = collection["graphs"]
    edges = sum(len(node["incomingEdges"]) for node in graph["nodes"])
    # Independently: operands of the function body's ops that are the function's arguments or
    # results of other body ops (the body's nested regions hold no torch ops here).
    with make_context():
        module = ir.Module.parse(torch_run.annotated_path("torch").read_text())
        (func,) = [op for op in module.body.operations if op.operation.name == "func.func"]
        body = [op.operation for op in func.regions[0].blocks[0].operations]
        produced = {hash(op) for op in body}
        expected = 0
        for op in body:
            for value in op.operands:
                owner = value.owner
                if isinstance(owner, ir.Block) or hash(owner.operation) in produced:
                    expected += 1
    assert edges == expected > 0
