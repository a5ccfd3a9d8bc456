"""TF control flow and rewrites on real captures (tests/fixtures/tf/README.md; no TensorFlow):
a `tf.cond` the runtime lowered to Switch/Merge, an add tree grappler's arithmetic optimizer
rewrote under a fused MatMul, and a conv + fused batch norm + ReLU folded into one kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.frameworks.tf.coverage import NEVER_RAN
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.opprofile import OpProfileEntry

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tf"


def correlate(name: str, level: str = "tf", reference_time: bool = False) -> CorrelationResult:
    options = CorrelationOptions(reference_time=reference_time)
    return CORRELATOR.correlate(RunBundle(FIXTURES / name), level, options)


def by_name(result: CorrelationResult) -> dict[str, OpProfileEntry]:
    return {e.key.name: e for e in result.opprofile.entries if e.key.name}


def test_lowered_branch_nodes_resolve_into_the_branch_functions() -> None:
    """GIVEN runtime names `cond/then/_0/<node>` THEN the node of the If's then_branch."""
    bundle = RunBundle(FIXTURES / "cond")
    view = TfOpIndex.of(bundle.ir("tf"))
    (if_op,) = view.resolve("cond")
    then_function = view.branches_of[if_op]["then"]
    (position,) = view.resolve("cond/then/_0/cond/wide_1/MatMul")
    assert view.function_of[position] == then_function
    assert view.infos[position].op_name == "tf.MatMul"
    assert view.control_flow_owner("cond/branch_executed/_11") == if_op
    assert view.control_flow_owner("ConstantFoldingCtrl/cond/switch_pred/_2_1") == if_op
    assert view.control_flow_owner("trunk_1/Relu") is None


@pytest.mark.parametrize("level", ["tf", "tf-standard"])
def test_taken_branch_is_measured_and_the_idle_one_never_ran(level: str) -> None:
    """GIVEN one profiled branch THEN its ops have time, the Switch/Merge plumbing goes to the
    If op, and only the other branch's ops are "never ran", out of the non-trivial count.
    (The Switch/Merge kernels are cheap: only the reference steps record them.)"""
    result = correlate("cond", level, reference_time=True)
    coverage = result.coverage
    entries = by_name(result)
    (matmul,) = [e for name, e in entries.items() if name.startswith("cond/wide_1/MatMul@")]
    assert matmul.data.total_ns > 0
    assert {"Switch", "Merge"} <= {k.rsplit(":", 1)[1] for k in entries["cond"].data.kernels}
    idle = [op for op in coverage.unmatched_ops if op.reason.startswith(NEVER_RAN)]
    assert idle and all("`else` function" in op.reason for op in idle)
    assert all("narrow" in op.location or "Sigmoid" in op.location for op in idle)
    assert coverage.nontrivial_coverage == 1.0
    assert not [e for e in coverage.unmatched_events if not e.name.endswith(("_Arg", "_Retval"))]


def test_an_add_tree_rewrite_keeps_its_ops_away_from_the_fused_consumer() -> None:
    """GIVEN AddOpsRewrite_add_2 (+ its AddN leaf) read by a fused MatMul THEN both rewrite
    nodes share the layer norm's add_1/add_2, and the MatMul kernel keeps its MatMul+BiasAdd."""
    result = correlate("dynamic-batch")
    entries = by_name(result)
    scope = "sequential_1/norm_1"
    for add in ("add_1", "add_2"):
        kernels = entries[f"{scope}/{add}"].data.kernels
        assert {k.split(":")[0].rsplit("/", 1)[1] for k in kernels} == {
            "AddOpsRewrite_add_2",
            "AddOpsRewrite_Leaf_1_add_2",
        }
    matmul = entries["sequential_1/down_1/MatMul"].data
    assert set(matmul.fused_with) == {"sequential_1/down_1/BiasAdd"}
    assert not [e for e in result.coverage.unmatched_events if "ArithmeticOptimizer" in e.name]


def test_folded_batch_norm_shares_the_fused_convolution() -> None:
    """GIVEN `_MklNativeFusedConv2D(fused_ops=[FusedBatchNorm, Relu])` named after the Relu THEN
    the Conv2D, the FusedBatchNormV3 and the Relu share its time as one group."""
    entries = by_name(correlate("conv-bn-folded"))
    conv = next(e for e in entries.values() if e.op_name == "tf.Conv2D")
    members = {conv.key.name, *conv.data.fused_with}
    kinds = {entries[m].op_name for m in members if m in entries}
    assert {"tf.Conv2D", "tf.FusedBatchNormV3", "tf.Relu"} <= kinds
    assert conv.data.group_size >= 3 and conv.data.kernels == ("block1/Relu:_MklNativeFusedConv2D",)
