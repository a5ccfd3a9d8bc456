"""Fused TF kernels and grappler rewrites resolved from the executed graph and def-use chains."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.errors import BundleError
from irprof.frameworks.tf.correlate import (
    CORRELATOR,
    EAGER_OUTSIDE,
    INPUT_PIPELINE,
    _resolve_event,
)
from irprof.frameworks.tf.fusion import (
    ExecutedGraph,
    ExecutedNode,
    Membership,
    _data_input,
    name_scope,
)
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.opprofile import OpProfileEntry
from irprof.trace.model import EventKind

NEEDS_FRAMEWORK = False  # shipped fixtures and MLIR only: tests/frameworks/conftest.py

RESIDUAL = Path(__file__).parents[2] / "fixtures" / "tf" / "residual"
SKIP_KERNEL = "functional_1/skip_1/Add:_MklNativeFusedConv2D"


def residual_entries(level: str = "tf") -> dict[str, OpProfileEntry]:
    result = CORRELATOR.correlate(RunBundle(RESIDUAL), level, CorrelationOptions())
    return {e.key.name or "": e for e in result.opprofile.entries}


def kernel_time(name: str) -> int:
    """Time of the kernel's events inside the profiled steps (the capture runs one untimed
    step in the profiler window before them)."""
    trace = RunBundle(RESIDUAL).trace()
    steps = [
        (int(trace.ts_ns[r]), int(trace.end_ns[r]))
        for r in trace.rows_of_kind(EventKind.STEP).tolist()
    ]
    totals: dict[str, int] = defaultdict(int)
    for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
        if any(b <= trace.ts_ns[row] and trace.end_ns[row] <= e for b, e in steps):
            totals[trace.name_of(row)] += int(trace.dur_ns[row])
    return totals[name]


def test_residual_add_fused_into_the_1x1_conv_goes_to_that_conv_not_the_stem() -> None:
    entries = residual_entries()
    members = {
        "functional_1/project_1/convolution",
        "functional_1/project_1/BiasAdd",
        "functional_1/skip_1/Add",
    }
    got = {name for name, e in entries.items() if SKIP_KERNEL in e.data.kernels}
    assert got == members
    steps = RunBundle(RESIDUAL).manifest().steps
    stem = entries["functional_1/stem_1/convolution"].data
    assert stem.count == steps and SKIP_KERNEL not in stem.kernels
    shares = [entries[name].data for name in members]
    assert sum(d.total_ns for d in shares) == kernel_time(SKIP_KERNEL)
    assert {(d.group_size, d.group_total_ns) for d in shares} == {(3, kernel_time(SKIP_KERNEL))}


def test_no_member_of_a_fused_node_is_reported_as_never_ran() -> None:
    coverage = CORRELATOR.correlate(RunBundle(RESIDUAL), "tf", CorrelationOptions()).coverage
    assert coverage.ops_not_executed == 0
    assert not [op for op in coverage.unmatched_ops if op.reason.startswith("never ran")]


SYNTHETIC = """
func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %a = "tf.AddV2"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("s/add")
  %b = "tf.AddV2"(%a, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("s/add_1")
  %c = "tf.Relu"(%b) : (tensor<4xf32>) -> tensor<4xf32> loc("s/relu")
  %d = "tf.Mul"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("t/mul")
  %e = "tf.AddV2"(%c, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("t/out")
  return %e : tensor<4xf32>
}
"""


def node(name: str, op: str, *inputs: str) -> ExecutedNode:
    return ExecutedNode(name, op, (), tuple(inputs))


def membership(nodes: list[ExecutedNode]) -> tuple[Membership, TfOpIndex]:
    graph = ExecutedGraph({n.name: n for n in nodes}, "test")
    for item in nodes:
        for producer in item.inputs:
            graph.consumers[producer].append(item.name)
    context = ir.Context()
    context.allow_unregistered_dialects = True
    view = TfOpIndex.of(ir.Module.parse(SYNTHETIC, context))
    return Membership.build(view, graph), view


def names(view: TfOpIndex, positions: list[int]) -> list[str | None]:
    return [view.infos[p].keys.name for p in positions]


def test_arithmetic_optimizer_rewrite_takes_the_adds_it_replaced() -> None:
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add_1"
    found, view = membership(
        [
            node(rewrite, "AddN", "x", "y", "z"),
            node("s/relu", "Relu", rewrite),
            node("t/mul", "Mul", "x", "y"),
            node("t/out", "AddV2", "s/relu", "t/mul"),
        ]
    )
    assert names(view, found.members_of(rewrite)) == ["s/add_1", "s/add"]
    # Ops that ran as their own nodes keep their own events.
    assert names(view, found.members_of("t/out")) == ["t/out"]


def test_a_rewrite_is_matched_by_def_use_not_by_its_name_scope() -> None:
    """`u/...` sums x, y and z as s/add_1 does, and s/relu reads it where the IR reads s/add_1:
    the names share no scope, the def-use decides."""
    rewrite = "u/ArithmeticOptimizer/AddOpsRewrite_x"
    found, view = membership(
        [
            node(rewrite, "AddN", "x", "y", "z"),
            node("s/relu", "Relu", rewrite),
            node("t/mul", "Mul", "x", "y"),
            node("t/out", "AddV2", "s/relu", "t/mul"),
        ]
    )
    assert names(view, found.members_of(rewrite)) == ["s/add_1", "s/add"]


def test_fused_kernel_stops_at_a_value_another_node_reads() -> None:
    # t/out ran as a kernel fusing Relu's input chain, but %d (t/mul) also ran by itself.
    found, view = membership(
        [
            ExecutedNode("t/out", "_FusedThing", ("Relu",), ("x", "y", "z", "t/mul")),
            node("t/mul", "Mul", "x", "y"),
        ]
    )
    assert names(view, found.members_of("t/out")) == ["t/out", "s/relu", "s/add_1", "s/add"]


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


def test_an_eager_op_outside_the_function_says_so() -> None:
    """TF names an op run eagerly after its type (`Cast:Cast`); Keras' input pipeline for NumPy
    arrays (`TensorSliceDataset:TensorSliceDataset`) and a distribution strategy's iterators are
    tf.data ops; a scoped node absent from the IR keeps the general reason."""
    context = ir.Context()
    context.allow_unregistered_dialects = True
    view = TfOpIndex.of(ir.Module.parse(SYNTHETIC, context))
    eager = _resolve_event(view, lambda: None, None, "Cast", "Cast")
    assert eager == ([], EAGER_OUTSIDE)
    # tf.data's ops, eager (Keras' pipeline for arrays) or in a graph of their own (the
    # iterators of a distribution strategy) are named as the input pipeline
    for node, kind in [
        ("TensorSliceDataset", "TensorSliceDataset"),
        ("TensorDataset/_2", "TensorDataset"),
        ("MultiDeviceIteratorFromStringHandle", "MultiDeviceIteratorFromStringHandle"),
        ("ParallelMapDatasetV2", "ParallelMapDatasetV2"),
    ]:
        assert _resolve_event(view, lambda: None, None, node, kind) == (
            [],
            INPUT_PIPELINE.format(type=kind),
        )
    scoped = _resolve_event(view, lambda: None, None, "model/GatherV2", "GatherV2")
    assert scoped[0] == [] and scoped[1] != EAGER_OUTSIDE and "not in the IR" in scoped[1]
    named = _resolve_event(view, lambda: None, None, "s/relu", "Relu")
    assert names(view, named[0]) == ["s/relu"]
