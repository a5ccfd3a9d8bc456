"""Which source nodes each ORT node runs, from the two graphs' def-use alone (graphs built here)."""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import pytest

from irprof.errors import BundleError
from irprof.frameworks.onnx.graph import (
    Graph,
    GraphNode,
    OnnxGraphs,
    Subgraph,
    parse_graphs,
    removed_nodes,
    runtime_regions,
    subgraph_regions,
)


def node(name: str, op: str, inputs: list[str], outputs: list[str]) -> GraphNode:
    return GraphNode(name, op, "", tuple(inputs), tuple(outputs))


def graphs(
    source: list[GraphNode],
    optimized: list[GraphNode],
    *,
    weights: Sequence[str],
    folded: Sequence[str] = (),
) -> OnnxGraphs:
    return OnnxGraphs(
        Graph("source", tuple(source), ("x",), tuple(weights), ("y",)),
        Graph("optimized", tuple(optimized), ("x",), (*weights, *folded), ("y",)),
    )


def test_matmul_and_add_replaced_by_one_gemm() -> None:
    model = graphs(
        [node("mm", "MatMul", ["x", "w"], ["m"]), node("bias", "Add", ["m", "b"], ["y"])],
        [node("fused/gemm", "Gemm", ["x", "w", "b"], ["y"])],
        weights=["w", "b"],
    )
    assert runtime_regions(model)["fused/gemm"].members == ("mm", "bias")
    assert removed_nodes(model, runtime_regions(model)) == []


def test_a_layout_chain_of_ort_tensors_is_one_region() -> None:
    model = graphs(
        [node("conv", "Conv", ["x", "w"], ["c"]), node("relu", "Relu", ["c"], ["y"])],
        [
            node("in", "ReorderInput", ["x"], ["t0"]),
            node("conv_nchwc", "Conv", ["t0", "w_packed"], ["t1"]),
            node("out", "ReorderOutput", ["t1"], ["y"]),
        ],
        weights=["w"],
        folded=["w_packed"],
    )
    regions = runtime_regions(model)
    assert {regions[name].members for name in ("in", "conv_nchwc", "out")} == {("conv", "relu")}
    assert regions["in"].nodes == ("in", "conv_nchwc", "out")


def test_constant_folded_nodes_belong_to_no_region() -> None:
    model = graphs(
        [node("shape", "Shape", ["w"], ["s"]), node("reshape", "Reshape", ["x", "s"], ["y"])],
        [node("reshape", "Reshape", ["x", "s"], ["y"])],
        weights=["w"],
        folded=["s"],  # ORT evaluated the shape and kept it as an initializer
    )
    regions = runtime_regions(model)
    assert regions["reshape"].members == ("reshape",)
    assert removed_nodes(model, regions) == ["shape"]


def test_a_constant_node_absorbed_into_a_fusion_is_not_run_by_it() -> None:
    model = graphs(
        [
            node("scale", "Constant", [], ["k"]),
            node("mm", "MatMul", ["x", "w"], ["m"]),
            node("div", "Div", ["m", "k"], ["y"]),
        ],
        [node("fused", "FusedMatMul", ["x", "w"], ["y"])],  # alpha = 1/k, an attribute
        weights=["w"],
    )
    regions = runtime_regions(model)
    assert regions["fused"].members == ("mm", "div")
    assert removed_nodes(model, regions) == ["scale"]


def test_duplicates_merged_by_ort_are_not_given_to_the_consumer() -> None:
    # Three `Shape(x)` as an exporter writes them; ORT keeps the last and feeds every Gather
    # from it. Each Gather then runs only itself, and the dropped twins ran nowhere.
    source = [
        node("shape_a", "Shape", ["x"], ["sa"]),
        node("shape_b", "Shape", ["x"], ["sb"]),
        node("gather_a", "Gather", ["sa", "i"], ["ga"]),
        node("gather_b", "Gather", ["sb", "i"], ["gb"]),
        node("unsq_a", "Unsqueeze", ["ga", "axes"], ["ua"]),
        node("unsq_b", "Unsqueeze", ["gb", "axes"], ["ub"]),
        node("concat", "Concat", ["ua", "ub"], ["y"]),
    ]
    optimized = [
        node("shape_b", "Shape", ["x"], ["sb"]),
        node("gather_b", "Gather", ["sb", "i"], ["gb"]),
        node("unsq_b", "Unsqueeze", ["gb", "axes"], ["ub"]),
        node("concat", "Concat", ["ub", "ub"], ["y"]),
    ]
    model = graphs(source, optimized, weights=["i", "axes"])
    regions = runtime_regions(model)
    assert {name: regions[name].members for name in regions} == {
        "shape_b": ("shape_b",),
        "gather_b": ("gather_b",),
        "unsq_b": ("unsq_b",),
        "concat": ("concat",),
    }
    assert removed_nodes(model, regions) == ["shape_a", "gather_a", "unsq_a"]


def test_a_bad_graphs_file_names_itself() -> None:
    data = orjson.dumps({"format": "irprof-onnx-graphs", "source": {"nodes": [{"name": 3}]}})
    with pytest.raises(BundleError, match=r"RUN/ir/onnx.graphs.json: source.nodes\[0\]"):
        parse_graphs(data, "RUN/ir/onnx.graphs.json")


def test_a_bad_subgraph_record_names_its_place() -> None:
    record = {"nodes": [], "subgraphs": [{"owner": "if", "graph": {"nodes": [{"name": 3}]}}]}
    data = orjson.dumps(
        {"format": "irprof-onnx-graphs", "source": record, "optimized": {"nodes": []}}
    )
    with pytest.raises(BundleError, match=r"source\.subgraphs\[0\]\.nodes\[0\] must be"):
        parse_graphs(data, "RUN/ir/onnx.graphs.json")
    data = orjson.dumps({"format": "irprof-onnx-graphs", "source": {"nodes": [], "subgraphs": 1}})
    with pytest.raises(BundleError, match=r"source\.subgraphs must be a list"):
        parse_graphs(data, "RUN/ir/onnx.graphs.json")
    old = orjson.dumps(
        {"format": "irprof-onnx-graphs", "source": {"nodes": []}, "optimized": {"nodes": []}}
    )
    assert parse_graphs(old, "RUN/ir/onnx.graphs.json").source.subgraphs == ()


def _with_subgraphs(graph_nodes: list[GraphNode], subgraphs: list[Subgraph]) -> Graph:
    return Graph("main", tuple(graph_nodes), ("x",), (), ("y",), tuple(subgraphs))


def test_subgraph_regions_pair_each_subgraph_with_its_optimized_twin() -> None:
    """An `If` whose branches both name a node `act` (which ran is not in a nested event's
    name): left out. The `then` branch's MatMul + Add became one Gemm; a `Loop` nested in the
    `else` branch has its own scope; a source subgraph ORT dropped has none."""

    def branch(name: str, members: list[GraphNode], nested: tuple[Subgraph, ...] = ()) -> Graph:
        return Graph(name, tuple(members), (), (), ("h",), nested)

    loop_body = branch("body", [node("tanh", "Tanh", ["s"], ["t"])])
    source = _with_subgraphs(
        [node("if", "If", ["c"], ["h"]), node("gone", "If", ["c"], ["g"])],
        [
            Subgraph("if", "then_branch", branch("then", [
                node("mm", "MatMul", ["x", "w"], ["m"]), node("add", "Add", ["m", "b"], ["a"]),
                node("act", "Relu", ["a"], ["h"])])),
            Subgraph("if", "else_branch", branch("else", [
                node("loop", "Loop", ["n"], ["l"]), node("act", "Tanh", ["l"], ["h"])],
                (Subgraph("loop", "body", loop_body),))),
            Subgraph("gone", "then_branch", branch("g", [node("neg", "Neg", ["x"], ["g"])])),
        ],
    )  # fmt: skip
    optimized = _with_subgraphs(
        [node("if", "If", ["c"], ["h"])],
        [
            Subgraph("if", "then_branch", branch("then", [
                node("gemm", "Gemm", ["x", "w", "b"], ["a"]), node("act", "Relu", ["a"], ["h"])])),
            Subgraph("if", "else_branch", branch("else", [
                node("loop", "Loop", ["n"], ["l"]), node("act", "Tanh", ["l"], ["h"])],
                (Subgraph("loop", "body", loop_body),))),
        ],
    )  # fmt: skip
    scopes = subgraph_regions(OnnxGraphs(source, optimized))
    assert set(scopes) == {"if", "loop"}
    assert {name: region.members for name, region in scopes["if"].items()} == {
        "gemm": ("mm", "add"),
        "loop": ("loop",),
    }
    assert {name: region.members for name, region in scopes["loop"].items()} == {"tanh": ("tanh",)}
