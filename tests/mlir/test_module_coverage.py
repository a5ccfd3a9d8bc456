"""`coverage_for`: counts and reasons a correlator gets for one level."""

from __future__ import annotations

from pathlib import Path

from irprof.coverage import UnmatchedEvent
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import derive_op_keys

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"


def test_counts_trivial_ops_apart_and_explains_unmatched_ones() -> None:
    keyed = derive_op_keys(load_module(FIXTURES / "jax.stablehlo.mlir", make_context()))
    names = [op.name for op, _ in keyed]
    first_dot = names.index("stablehlo.dot_general")
    tanh = names.index("stablehlo.tanh")
    maximum = names.index("stablehlo.maximum")
    events = [UnmatchedEvent(f"e{n}", n * 10, 1, "no op") for n in range(40)]
    coverage = coverage_for(
        keyed, [first_dot, tanh], level="stablehlo", profiled_ns=1000, attributed_ns=800,
        unmatched_events=events, reasons={maximum: "fused into ynn_fusion.1 by XLA"},
        max_listed=5,
    )  # fmt: skip
    assert coverage.ops_total == len(keyed) == 11
    # func.func x2, constant, return x2 are trivial.
    assert coverage.ops_nontrivial == 6
    assert coverage.ops_annotated == 2 and coverage.ops_nontrivial_annotated == 2
    assert coverage.time_coverage == 0.8
    listed = [e.name for e in coverage.unmatched_events]
    assert listed == ["e39", "e38", "e37", "e36", "e35", "35 more event names"]
    # The tail is summed, not dropped: listed time is all unattributed time.
    assert sum(e.total_ns for e in coverage.unmatched_events) == sum(n * 10 for n in range(40))
    assert coverage.unmatched_events[-1].count == 35
    reasons = {op.op_name: op.reason for op in coverage.unmatched_ops}
    assert reasons["stablehlo.maximum"] == "fused into ynn_fusion.1 by XLA"
    assert (
        reasons["stablehlo.dot_general"] == "no profiled event named after 'jit(mlp)/dot_general'"
    )
    assert reasons["stablehlo.broadcast_in_dim"] == "no profiled event named after 'max'"
