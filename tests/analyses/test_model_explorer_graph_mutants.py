"""Model Explorer's graph JSON of a level (`explorer_graphs`, `graph_collection`), checked on a
small module whose nodes, edges, namespaces and attributes are worked out by hand: two
functions, a call with two results read in swapped order, a loop reading a value from above and
its own induction variable, and ops with and without (estimated) profiles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from iree.compiler import ir

from irprof.analyses.model_explorer_graph import (
    ExplorerGraphs,
    GraphNode,
    explorer_graphs,
    graph_collection,
    load_explorer_graphs,
)
from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.bundle import RunBundle
from irprof.mlir.context import make_context
from irprof.opprofile import ProfileData
from tests.analyses.test_support import make_bundle

MODULE = """
module {
  func.func @main(%a: f32, %b: f32, %n: index) -> f32 {
    %0 = arith.subf %b, %a : f32 loc("net/block/sub"("m.py":3:1))
    %1:2 = func.call @g(%0) : (f32) -> (f32, f32) loc("net/call")
    %2 = arith.mulf %1#1, %1#0 : f32 loc("mul")
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %3 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %2) -> (f32) {
      %4 = arith.addf %acc, %0 : f32
      %5 = arith.index_cast %i : index to i32
      scf.yield %4 : f32
    }
    return %3 : f32
  }
  func.func @g(%x: f32) -> (f32, f32) {
    return %x, %x : f32, f32
  }
}
"""
# Walk indices (the module op is -1): 0 @main, 1 subf, 2 call, 3 mulf, 4-5 constants, 6 for,
# 7 addf, 8 index_cast, 9 yield, 10 return, 11 @g, 12 its return.
MEASURED = ProfileData(
    count=3, total_ns=1_234_567, mean_ns=411_522, min_ns=1, max_ns=2, first_ts_ns=0,
    fraction=0.123456,
)  # fmt: skip
ESTIMATED = replace(
    MEASURED, total_ns=2_000, fraction=0.5, group="fusion.7", group_total_ns=4_000,
    group_size=2, share_basis="flops",
)  # fmt: skip


def _graphs() -> ExplorerGraphs:
    with make_context():
        module = ir.Module.parse(MODULE)
        profiled = profiled_ops_of(module)
        ops = list(profiled.ops)
        ops[1] = replace(ops[1], profile=MEASURED)
        ops[3] = replace(ops[3], profile=ESTIMATED, scope="", runtime_name="outer/inner/mul")
        ops[7] = replace(ops[7], scope="/Xlead/X/", runtime_name="")
        return explorer_graphs(module, ProfiledModule("x", tuple(ops), {}), "lvl")


def _nodes(graphs: ExplorerGraphs, graph: str) -> dict[str, GraphNode]:
    return {node.id: node for node in graphs.graphs[graph]}


def _edges(node: GraphNode) -> list[tuple[str, str, str]]:
    return [
        (e["sourceNodeId"], e["sourceNodeOutputId"], e["targetNodeInputId"])
        for e in node.incomingEdges
    ]


def test_one_graph_per_function_with_the_inputs_the_ops_read_first() -> None:
    graphs = _graphs()
    assert graphs.level == "lvl"
    assert list(graphs.graphs) == ["main", "g"]
    main = graphs.graphs["main"]
    # Nodes of ops are numbered in walk order from 0 within each function (the loop's body
    # included); the three arguments read come first.
    assert {node.id for node in main[:3]} == {"arg0", "arg1", "arg2"}
    assert [node.id for node in main[3:]] == [str(i) for i in range(10)]
    assert {(n.id, n.label) for n in main[:3]} == {
        ("arg0", "Input 0"),
        ("arg1", "Input 1"),
        ("arg2", "Input 2"),
    }
    assert all(not n.attrs and not n.incomingEdges and not n.namespace for n in main[:3])
    g = graphs.graphs["g"]
    assert [(node.id, node.label) for node in g] == [("arg0", "Input 0"), ("0", "func.return")]


def test_edges_follow_def_use_with_operand_and_result_positions() -> None:
    main = _nodes(_graphs(), "main")
    assert _edges(main["0"]) == [("arg1", "0", "0"), ("arg0", "0", "1")]  # subf %b, %a
    assert _edges(main["1"]) == [("0", "0", "0")]
    assert _edges(main["2"]) == [("1", "1", "0"), ("1", "0", "1")]  # mulf %1#1, %1#0
    # The loop: bounds, step and init value; inside it, the value from above but neither
    # the iteration argument nor the induction variable (the loop's own block arguments).
    assert _edges(main["5"]) == [
        ("3", "0", "0"),
        ("arg2", "0", "1"),
        ("4", "0", "2"),
        ("2", "0", "3"),
    ]
    assert _edges(main["6"]) == [("0", "0", "1")]
    assert _edges(main["7"]) == []
    assert _edges(main["8"]) == [("6", "0", "0")]
    assert _edges(main["9"]) == [("5", "0", "0")]
    assert _edges(_nodes(_graphs(), "g")["0"]) == [("arg0", "0", "0"), ("arg0", "0", "1")]


def test_namespaces_are_the_scopes_else_the_runtime_names_prefix() -> None:
    main = _nodes(_graphs(), "main")
    assert main["0"].namespace == "net/block"
    assert main["1"].namespace == "net"
    assert main["2"].namespace == "outer/inner"  # no scope: the runtime name's
    assert main["3"].namespace == ""
    assert main["6"].namespace == "Xlead/X"  # slashes around it stripped, only them


def test_a_torch_module_path_is_one_layer_per_module() -> None:
    """torch scopes are module paths (`enc.layers.0.attn`: `layers` a ModuleList, `0` its
    first block): each module a layer, as Model Explorer's own PyTorch adapter nests them."""
    with make_context():
        module = ir.Module.parse(MODULE)
        ops = list(profiled_ops_of(module).ops)
        ops[1] = replace(ops[1], scope="enc.layers.0.attn")
        ops[3] = replace(ops[3], scope="", runtime_name="head|linear_2|aten.linear")
        main = _nodes(explorer_graphs(module, ProfiledModule("x", tuple(ops), {}), "t"), "main")
    assert main["0"].namespace == "enc/layers/0/attn"
    assert main["2"].namespace == ""  # no scope, and a runtime name with no `/`


def test_attributes_carry_the_location_source_and_profile() -> None:
    main = _nodes(_graphs(), "main")
    assert main["0"].attrs == [
        {"key": "op", "value": "arith.subf"},
        {"key": "location", "value": "'net/block/sub'(m.py:3:1)"},
        {"key": "source", "value": "m.py:3:1"},
        {"key": "irprof.total_us", "value": "1234.567"},
        {"key": "irprof.count", "value": "3"},
        {"key": "irprof.share", "value": "12.35%"},
    ]
    assert main["1"].attrs == [  # no source position, no profile
        {"key": "op", "value": "func.call"},
        {"key": "location", "value": "'net/call'"},
    ]
    assert main["2"].attrs == [
        {"key": "op", "value": "arith.mulf"},
        {"key": "location", "value": "'mul'"},
        {"key": "irprof.total_us", "value": "2.000"},
        {"key": "irprof.count", "value": "3"},
        {"key": "irprof.share", "value": "50.00%"},
        {"key": "irprof.estimated", "value": "share of fusion.7 by flops"},
    ]


def test_the_collection_is_model_explorers_json() -> None:
    graphs = _graphs()
    collection: dict[str, Any] = graph_collection(graphs, "my label")
    assert collection["label"] == "my label"
    assert [graph["id"] for graph in collection["graphs"]] == ["main", "g"]
    (_, g) = collection["graphs"]
    assert g["nodes"] == [
        {
            "id": "arg0",
            "label": "Input 0",
            "namespace": "",
            "attrs": [],
            "incomingEdges": [],
        },
        {
            "id": "0",
            "label": "func.return",
            "namespace": "net/call",  # the call site's scope reaches the callee's ops
            "attrs": [
                {"key": "op", "value": "func.return"},
                {"key": "location", "value": g["nodes"][1]["attrs"][1]["value"]},
                {"key": "source", "value": g["nodes"][1]["attrs"][2]["value"]},
            ],
            "incomingEdges": [
                {"sourceNodeId": "arg0", "sourceNodeOutputId": "0", "targetNodeInputId": "0"},
                {"sourceNodeId": "arg0", "sourceNodeOutputId": "0", "targetNodeInputId": "1"},
            ],
        },
    ]
    main = collection["graphs"][0]["nodes"]
    assert [node["id"] for node in main][3:] == [str(i) for i in range(10)]
    assert main[3]["namespace"] == "net/block" and main[3]["label"] == "arith.subf"


def test_a_bundles_level_is_loaded_by_name(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    manifest = bundle.manifest()
    bundle.write_manifest(type(manifest)(**{**manifest.__dict__, "ir_levels": ("tf", "tf2")}))
    text = bundle.annotated_path("tf").read_text()
    bundle.annotated_path("tf2").write_text(text.replace("tf.Softmax", "tf.Sigmoid"))
    bundle = RunBundle(bundle.root)
    first = load_explorer_graphs(bundle)
    second = load_explorer_graphs(bundle, "tf2")
    assert (first.level, second.level) == ("tf", "tf2")
    labels = [{node.label for node in graphs.graphs["main"]} for graphs in (first, second)]
    assert "tf.Softmax" in labels[0] and "tf.Sigmoid" in labels[1]
    assert "tf.Sigmoid" not in labels[0]


SECOND_BLOCK = """
module {
  func.func @h(%a: f32) -> f32 {
    cf.br ^bb1
  ^bb1:
    %0 = arith.addf %a, %a : f32
    %1 = scf.execute_region -> f32 {
      %2 = arith.mulf %0, %a : f32
      scf.yield %2 : f32
    }
    return %1 : f32
  }
}
"""


def test_a_value_of_an_op_without_a_node_makes_no_edge() -> None:
    """Model Explorer numbers a function's entry block and the regions of its ops: the body
    op of a second block's region reads a value of that block's (unnumbered) addf."""
    with make_context():
        module = ir.Module.parse(SECOND_BLOCK)
        graphs = explorer_graphs(module, profiled_ops_of(module), "lvl")
    nodes = graphs.graphs["h"]
    # cf.br (node 0) and the region's mulf and yield (nodes 1, 2) are drawn; the mulf reads
    # the function's argument only as an edge.
    assert [(node.id, node.label) for node in nodes] == [
        ("arg0", "Input 0"),
        ("0", "cf.br"),
        ("1", "arith.mulf"),
        ("2", "scf.yield"),
    ]
    assert _edges(nodes[2]) == [("arg0", "0", "1")]
