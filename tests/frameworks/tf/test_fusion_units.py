"""The runtime graph as read from a bundle, and TF's node-name rules, exactly.

test_tf_fusion.py checks fused-group attribution on real captures; these pin how the recorded
graph is read (ops, fused ops, data and control inputs with their ports, consumer edges, nodes
constant folding replaced) and refused, on a copy of a real bundle whose graph is replaced.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.frameworks.tf.fusion import ExecutedGraph, _data_input, name_scope

RESIDUAL = Path(__file__).parents[2] / "fixtures" / "tf" / "residual"
GRAPH = {
    "source": "runtime dump",
    "nodes": {
        "x": {"op": "_Arg"},
        "w": {"op": "Const"},
        "m/conv": {"op": "_FusedConv2D", "fused_ops": ["BiasAdd", "Relu"], "inputs": ["x", "w"]},
        "m/split": {"op": "Split", "inputs": ["m/conv:0"]},
        "m/add": {"op": "AddV2", "inputs": ["m/split:1", "m/split", "^w"]},
        "ConstantFolding/m/scale-folded-1": {"op": "Const"},
    },
}


def _bundle(tmp_path: Path, graph: object, name: str | None = "graph.json") -> RunBundle:
    """A copy of a real TF bundle whose runtime graph is `graph` in `name` (None: no graph)."""
    folder = tmp_path / "run"
    shutil.copytree(RESIDUAL, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / manifest["options"].pop("runtime_graph")).unlink()
    if name is not None:
        manifest["options"]["runtime_graph"] = name
        (folder / name).write_text(json.dumps(graph))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return RunBundle(folder)


def test_the_recorded_graph_is_read_whole(tmp_path: Path) -> None:
    graph = ExecutedGraph.of_bundle(_bundle(tmp_path, GRAPH))
    assert graph is not None
    assert graph.source == "runtime dump"
    conv = graph.nodes["m/conv"]
    assert (conv.name, conv.op, conv.fused_ops) == ("m/conv", "_FusedConv2D", ("BiasAdd", "Relu"))
    add = graph.nodes["m/add"]
    assert add.inputs == ("m/split", "m/split", "w")  # ports and control marks dropped
    assert add.data_inputs == (("m/split", 1), ("m/split", 0))  # control inputs are not data
    assert graph.nodes["x"].inputs == () and graph.nodes["x"].fused_ops == ()
    assert dict(graph.consumers) == {
        "x": ["m/conv"],
        "w": ["m/conv", "m/add"],
        "m/conv": ["m/split"],
        "m/split": ["m/add", "m/add"],
    }
    assert graph.folded == {"m/scale"}


def test_a_graph_without_a_source_says_offline_grappler(tmp_path: Path) -> None:
    graph = ExecutedGraph.of_bundle(_bundle(tmp_path, {"nodes": {}}))
    assert graph is not None and graph.source == "offline grappler" and graph.nodes == {}


def test_a_bundle_without_a_runtime_graph_has_none(tmp_path: Path) -> None:
    assert ExecutedGraph.of_bundle(_bundle(tmp_path, None, name=None)) is None


@pytest.mark.parametrize(
    "graph",
    [
        {"nodes": {"a": {}}},
        {"nodes": []},
        {"graph": {}},
        {"nodes": {"a": {"op": "X", "inputs": 3}}},
    ],
)
def test_a_malformed_graph_is_refused_naming_the_file(tmp_path: Path, graph: object) -> None:
    with pytest.raises(BundleError, match=r"run/graph\.json: malformed runtime graph"):
        ExecutedGraph.of_bundle(_bundle(tmp_path, graph))


def test_a_runtime_graph_outside_the_bundle_is_refused(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, GRAPH)
    manifest = json.loads(bundle.manifest_path.read_text())
    manifest["options"]["runtime_graph"] = "../graph.json"
    bundle.manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=r"'\.\./graph\.json' points outside the bundle"):
        ExecutedGraph.of_bundle(RunBundle(bundle.manifest_path.parent))


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("node:1", ("node", 1)), ("node", ("node", 0)), ("a:b:2", ("a:b", 2)), ("n:x", ("n:x", 0))],
)
def test_data_input(text: str, parsed: tuple[str, int]) -> None:
    assert _data_input(text) == parsed


@pytest.mark.parametrize(
    ("node", "scope"),
    [
        ("m/dense/MatMul", "m/dense"),
        ("MatMul", ""),
        ("m/ArithmeticOptimizer/AddOpsRewrite_add", "m"),
        ("m/ArithmeticOptimizer/x/ArithmeticOptimizer/y", "m"),
    ],
)
def test_name_scope(node: str, scope: str) -> None:
    assert name_scope(node) == scope
