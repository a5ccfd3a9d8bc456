"""The SSA op graph from real bindings: nodes, edges, nested regions, grouping; its renderers."""

from __future__ import annotations

import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.op_graph import OpGraph, OpGraphOptions, build_op_graph
from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.errors import UsageError
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.renderers.base import get_op_graph_renderers, op_graph_renderer_for
from irprof.renderers.colormap import NO_DATA_FILL, get_all_colormaps, relative_luminance
from irprof.renderers.op_graph_dot import render_dot
from tests.analyses.test_support import fixture_jax_bundle  # noqa: F401  (found by its name)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_views import synthetic_module


def profile(total: int, fraction: float) -> str:
    """An `irprof.profile` attribute as docs/architecture.md spells it."""
    return (
        f"irprof.profile = {{count = 1 : i64, total_ns = {total} : i64, mean_ns = {total} : i64, "
        f"min_ns = {total} : i64, max_ns = {total} : i64, first_ts_ns = 0 : i64, "
        f'fraction = {fraction} : f64, kernels = ["k"], fused_with = [], source = "t"}}'
    )


T = "tensor<4xf32>"
MODULE = f"""
module {{
  func.func @helper(%arg0: {T}) -> {T} {{
    return %arg0 : {T}
  }}
  func.func @main(%arg0: {T}, %arg1: {T}) -> {T} {{
    %0 = "tf.AddV2"(%arg0, %arg1) {{{profile(600, 0.6)}}} : ({T}, {T}) -> {T}
        loc(fused["AddV2:", "net/a/add"])
    %1 = "test.loop"(%0) ({{
    ^bb0(%i: {T}):
      %2 = "tf.Mul"(%i, %arg1) {{{profile(200, 0.2)}}} : ({T}, {T}) -> {T} loc("net/b/mul")
      %3 = "tf.Neg"(%2) {{{profile(100, 0.1)}}} : ({T}) -> {T} loc("net/b/neg")
      "test.yield"(%3) : ({T}) -> ()
    }}) : ({T}) -> {T} loc("net/b/loop")
    %4 = "tf.Const"() {{value = dense<1.0> : {T}}} : () -> {T} loc("net/c/const")
    %5 = "tf.Sub"(%1, %4) : ({T}, {T}) -> {T} loc("net/c/sub")
    return %5 : {T}
  }}
}}
"""


@pytest.fixture(scope="module")
def parsed() -> tuple[object, ProfiledModule]:
    module = parse_module(MODULE, make_context())
    return module, profiled_ops_of(module)


def graph_of(parsed: tuple[object, ProfiledModule], **options: object) -> OpGraph:
    module, profiled = parsed
    return build_op_graph(module, profiled, OpGraphOptions(**options))  # type: ignore[arg-type]


def test_nodes_are_ops_inputs_and_the_return(parsed: tuple[object, ProfiledModule]) -> None:
    graph = graph_of(parsed)
    assert graph.function == "main"  # the function holding the time, not the first one
    kinds = [(node.kind, node.label) for node in graph.nodes]
    assert kinds == [
        ("input", "%arg0"),
        ("input", "%arg1"),
        ("op", "tf.AddV2"),
        ("op", "test.loop"),
        ("op", "tf.Const"),
        ("op", "tf.Sub"),
        ("output", "return"),
    ]
    assert graph.op_count == 5


def test_edges_follow_values_including_captures_into_regions(
    parsed: tuple[object, ProfiledModule],
) -> None:
    graph = graph_of(parsed)
    label = {node.id: node.label for node in graph.nodes}
    edges = {(label[e.src], label[e.dst]) for e in graph.edges}
    assert edges == {
        ("%arg0", "tf.AddV2"),
        ("%arg1", "tf.AddV2"),
        ("tf.AddV2", "test.loop"),
        ("%arg1", "test.loop"),  # used inside the loop body: still an input of the loop
        ("test.loop", "tf.Sub"),
        ("tf.Const", "tf.Sub"),
        ("tf.Sub", "return"),
    }


def test_region_ops_carry_their_body_time_and_unmeasured_ops_stay(
    parsed: tuple[object, ProfiledModule],
) -> None:
    nodes = {node.label: node for node in graph_of(parsed).nodes}
    assert nodes["test.loop"].total_ns == 300
    assert nodes["test.loop"].share == pytest.approx(0.3)
    assert nodes["tf.Sub"].total_ns is None  # drawn grey, not hidden
    assert nodes["tf.AddV2"].title == "net/a/add"


def test_grouping_collapses_scopes_with_summed_time(parsed: tuple[object, ProfiledModule]) -> None:
    graph = graph_of(parsed, grouping="always")
    groups = {node.title: node for node in graph.nodes if node.kind == "group"}
    assert set(groups) == {"net/c"}  # net/a and net/b hold one op each: drawn as the op
    assert groups["net/c"].total_ns is None
    assert groups["net/c"].ops == 2
    assert "net/a/add" in {node.title for node in graph.nodes}
    label = {node.id: node.title for node in graph.nodes}
    edges = {(label[e.src], label[e.dst]) for e in graph.edges}
    assert ("net/c", "func.return") in edges
    assert ("net/b/loop", "net/c") in edges


def test_expand_keeps_one_scope_open(parsed: tuple[object, ProfiledModule]) -> None:
    graph = graph_of(parsed, grouping="always", expand=("net/c",))
    titles = {node.title for node in graph.nodes}
    assert {"net/c/const", "net/c/sub"} <= titles
    assert "net/c" not in {node.title for node in graph.nodes if node.kind == "group"}


def test_unknown_function_names_the_choices(parsed: tuple[object, ProfiledModule]) -> None:
    with pytest.raises(UsageError, match="helper, main"):
        graph_of(parsed, function="nope")


def test_ten_thousand_ops_collapse_to_a_drawable_graph() -> None:
    module = parse_module(synthetic_module(10_200), make_context())
    graph = build_op_graph(module, profiled_ops_of(module), OpGraphOptions(max_nodes=300))
    assert graph.op_count == 10_201
    drawn = [node for node in graph.nodes if node.kind != "input"]
    assert 250 <= len(drawn) <= 300  # opened up to the budget, not collapsed to one box
    groups = [node for node in graph.nodes if node.kind == "group"]
    assert sum(node.ops for node in groups) + len(graph.nodes) - len(groups) - 1 == 10_201
    assert sum(node.total_ns or 0 for node in groups) == sum(
        op.total_ns for op in profiled_ops_of(module).ops
    )


def test_auto_grouping_opens_the_hottest_scopes_first() -> None:
    module = parse_module(synthetic_module(3_000, ops_per_layer=10), make_context())
    profiled = profiled_ops_of(module)
    graph = build_op_graph(module, profiled, OpGraphOptions(max_nodes=40))
    groups = [node for node in graph.nodes if node.kind == "group"]
    assert len([node for node in graph.nodes if node.kind != "input"]) <= 40
    assert sum(node.ops for node in groups) + len(graph.nodes) - len(groups) - 1 == 3_001
    assert sum(node.total_ns or 0 for node in groups) == sum(op.total_ns for op in profiled.ops)


def test_colormaps_run_dark_to_light() -> None:
    for name in get_all_colormaps().names():
        cmap = get_all_colormaps().get(name)
        lightness = [relative_luminance(cmap.rgb(t / 10)) for t in range(11)]
        assert lightness == sorted(lightness), name
        assert cmap.text_on(0.0) == "#ffffff"
        assert cmap.text_on(1.0) == "#000000"


def test_dot_escapes_names_and_marks_unmeasured_ops() -> None:
    text = MODULE.replace('"net/a/add"', '"net/a/\\"q\\\\n<b>"')
    module = parse_module(text, make_context())
    dot = render_dot(build_op_graph(module, profiled_ops_of(module)))
    assert 'net/a/\\"q\\\\n<b>' in dot
    assert f'fillcolor="{NO_DATA_FILL}"' in dot
    assert "share of profiled time" in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz dot")
def test_svg_has_one_element_per_node(parsed: tuple[object, ProfiledModule]) -> None:
    graph = graph_of(parsed)
    svg = get_op_graph_renderers().get("svg").render(graph)
    root = ET.fromstring(svg)
    ids = {g.get("id") for g in root.iter("{http://www.w3.org/2000/svg}g")}
    assert {f"node-{node.id}" for node in graph.nodes} <= ids


def test_graphml_round_trips_through_networkx(
    parsed: tuple[object, ProfiledModule], tmp_path: Path
) -> None:
    graph = graph_of(parsed)
    path = tmp_path / "g.graphml"
    path.write_bytes(op_graph_renderer_for(path).render(graph))
    loaded = nx.read_graphml(path)
    assert loaded.number_of_nodes() == len(graph.nodes)
    assert loaded.number_of_edges() == len(graph.edges)
    add = next(n for n, d in loaded.nodes(data=True) if d.get("label") == "tf.AddV2")
    assert loaded.nodes[add]["total_ns"] == 600
    assert (
        "total_ns"
        not in loaded.nodes[
            next(n for n, d in loaded.nodes(data=True) if d.get("label") == "tf.Sub")
        ]
    )


def test_unknown_extension_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"\.svg"):
        op_graph_renderer_for("graph.pdf")


def test_graph_names_private_function_ops_through_their_call(
    jax_bundle: RunBundle, tmp_path: Path
) -> None:
    output = tmp_path / "relu.graphml"
    mlir = jax_bundle.annotated_path("stablehlo")
    assert main(["graph", str(mlir), "--function", "relu", "-o", str(output)]) == 0
    graph = nx.read_graphml(output)
    (maximum,) = [
        data for _, data in graph.nodes(data=True) if data["detail"] == "stablehlo.maximum"
    ]
    # Named and placed as `irprof top` shows it, with the IR's own name beside it.
    assert maximum["title"] == "jit(mlp)/jit(relu)/max"
    assert maximum["runtime_name"] == "max"
    assert re.fullmatch(r".*jax_mlp\.py:\d+:\d+", maximum["location"]), maximum
    # The drawn label ends with the op's own part, and the call site's line.
    dot = render_dot(build_op_graph(*_loaded(jax_bundle), OpGraphOptions(function="relu")))
    assert "relu)/max" in dot and "jax_mlp.py:" in dot


def _loaded(bundle: RunBundle) -> tuple[Any, ProfiledModule]:
    loaded = load_annotated_level(bundle, "stablehlo")
    return loaded.module, loaded.profiled


def _many_arguments_module(arguments: int, ops: int) -> str:
    """`@main` taking `arguments` tensors; op k adds up its share of them (no scopes)."""
    per_op = arguments // ops
    params = ", ".join(f"%arg{i}: {T}" for i in range(arguments))
    lines = [f"func.func @main({params}) -> {T} {{"]
    for k in range(ops):
        operands = ", ".join(f"%arg{i}" for i in range(k * per_op, (k + 1) * per_op))
        types = ", ".join([T] * per_op)
        lines.append(
            f'  %v{k} = "test.sum"({operands}) {{{profile(100, 0.2)}}} : ({types}) -> {T} '
            f'loc("sum{k}")'
        )
    lines.append(f"  return %v0 : {T}")
    lines.append("}")
    return "\n".join(lines)


def test_more_arguments_than_max_nodes_draw_as_one_input_node() -> None:
    # 25 arguments (a TF function takes every weight variable as one), 5 ops of 5 each.
    module = parse_module(_many_arguments_module(25, 5), make_context())
    graph = build_op_graph(module, profiled_ops_of(module), OpGraphOptions(max_nodes=20))
    inputs = [node for node in graph.nodes if node.kind == "input"]
    assert [(node.id, node.title, node.label) for node in inputs] == [
        ("args", "25 function arguments", "%arg0..%arg24")
    ]
    assert inputs[0].detail == f"{T} x25"
    from_inputs = sorted((edge.dst, edge.values) for edge in graph.edges if edge.src == "args")
    # Each op reads 5 arguments: one edge per op, counting its 5 values.
    ops = sorted(node.id for node in graph.nodes if node.kind == "op")
    assert from_inputs == [(op, 5) for op in ops] and len(ops) == 5
    assert all(edge.src in {"args"} | set(ops) for edge in graph.edges)


def test_as_many_arguments_as_max_nodes_stay_one_node_each() -> None:
    module = parse_module(_many_arguments_module(20, 5), make_context())
    graph = build_op_graph(module, profiled_ops_of(module), OpGraphOptions(max_nodes=20))
    inputs = [node.id for node in graph.nodes if node.kind == "input"]
    assert inputs == [f"arg{i}" for i in range(20)]
    assert sorted(edge.src for edge in graph.edges if edge.src.startswith("arg")) == sorted(inputs)


def test_a_run_folder_draws_its_annotated_level(
    jax_bundle: RunBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`graph RUN` draws `RUN/annotated/<first level>.mlir`, byte for byte."""
    by_run, by_file = tmp_path / "run.dot", tmp_path / "file.dot"
    assert main(["graph", str(jax_bundle.root), "-o", str(by_run)]) == 0
    assert main(["graph", str(jax_bundle.annotated_path("stablehlo")), "-o", str(by_file)]) == 0
    assert by_run.read_bytes() == by_file.read_bytes()
    capsys.readouterr()
    missing = tmp_path / "none.svg"
    assert main(["graph", str(jax_bundle.root), "--level", "tf", "-o", str(missing)]) == 2
    said = "".join(capsys.readouterr().err.split())  # the console wraps long paths
    assert "level'tf'isnotannotated;annotated:stablehlo" in said
    assert not missing.exists()
