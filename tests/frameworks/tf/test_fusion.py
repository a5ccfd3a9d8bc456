"""Fused TF kernels and grappler rewrites resolved from the executed graph and def-use chains."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.frameworks.tf.fusion import ExecutedGraph, ExecutedNode, Membership
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.opprofile import OpProfileEntry
from irprof.trace.model import EventKind

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


def test_a_rewrite_outside_the_absent_ops_scope_claims_nothing() -> None:
    rewrite = "u/ArithmeticOptimizer/AddOpsRewrite_x"
    found, _ = membership(
        [
            node(rewrite, "AddN", "x", "y", "z"),
            node("s/relu", "Relu", rewrite),
            node("t/mul", "Mul", "x", "y"),
            node("t/out", "AddV2", "s/relu", "t/mul"),
        ]
    )
    assert found.members_of(rewrite) == []


def test_fused_kernel_stops_at_a_value_another_node_reads() -> None:
    # t/out ran as a kernel fusing Relu's input chain, but %d (t/mul) also ran by itself.
    found, view = membership(
        [
            ExecutedNode("t/out", "_FusedThing", ("Relu",), ("x", "y", "z", "t/mul")),
            node("t/mul", "Mul", "x", "y"),
        ]
    )
    assert names(view, found.members_of("t/out")) == ["t/out", "s/relu", "s/add_1", "s/add"]
