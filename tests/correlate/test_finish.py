"""The ledger's partial records and inclusive views, and the ending every correlator shares."""

from __future__ import annotations

import pytest

from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.errors import CorrelationError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.locations import render
from irprof.mlir.op_index import derive_op_infos

MODULE = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32> loc("add")
  %1 = arith.mulf %0, %0 : tensor<4xf32> loc("mul")
  %2 = func.call @g(%1) : (tensor<4xf32>) -> tensor<4xf32> loc("call")
  return %2 : tensor<4xf32>
}
func.func private @g(%b: tensor<4xf32>) -> tensor<4xf32> {
  return %b : tensor<4xf32>
}
"""


def test_an_event_partly_reaching_ops_splits_once_and_adds_up() -> None:
    ledger = Ledger()
    shares = ledger.record_with_rest(
        "dispatch", 0, 101, [0, 1], [2.0, 1.0], (1.0, "dispatch (rest)", "no origin"),
        basis="flops", group="g",
    )  # fmt: skip
    rest = ledger.unattributed_events["dispatch (rest)"]
    assert sum(shares) + sum(rest) == 101
    assert (shares, rest) == ([51, 25], [25])  # 50.5, 25.25, 25.25: the 0.5 gets the leftover
    assert ledger.groups["g"].total_ns == 76
    ledger.close(101, "test")


def test_an_inclusive_view_is_rounded_per_event_and_is_not_attributed_time() -> None:
    ledger = Ledger()
    ledger.record("k", 10, 7, [0])
    ledger.include(5, 3, "k", 10, 2.5)
    ledger.include(5, 3, "k", 10, 1.0)  # the same event reached through a second op: 3.5
    ledger.include(5, 1, "j", 4, 2.5)
    assert ledger.attributed_ns == 7
    data = ledger.inclusive_data(5, 100, source="inclusive")
    assert (data.total_ns, data.count, data.first_ts_ns) == (6, 2, 4)  # round(2.5) + round(3.5)
    assert data.kernels == ("j", "k") and data.source == "inclusive"
    ledger.include(0, 3, "k", 10, 3.0)
    assert ledger.inclusive_data(0, 100, source="", with_own=True).total_ns == 10


def test_finish_level_counts_coverage_and_carries_totals_and_training() -> None:
    module = load_module(MODULE, make_context())
    infos = derive_op_infos(module)
    position_of = {info.op_name: position for position, info in enumerate(infos)}
    add, mul = position_of["arith.addf"], position_of["arith.mulf"]
    ledger = Ledger()
    ledger.record("kernel", 0, 90, [add, mul], weights=[1, 2], basis="flops")
    ledger.unattributed("copy", 10, "no op")
    entries = ledger.entries(infos, 100, location_of=lambda info: render(info.loc))
    training = {"phases_ns": {"forward": 90}, "backward_by_forward": [1]}
    result = finish_level(
        ledger, infos, entries, level="l", framework="fw", profiled_ns=100, where="here",
        reasons={mul + 1: "the call's callee ran nothing"}, totals={"steps": 2, "groups": -1},
        coverage_extra={"source": "x"}, training=training, source_trace="t.json",
    )  # fmt: skip
    coverage, opprofile = result.coverage, result.opprofile
    assert (coverage.profiled_ns, coverage.attributed_ns, coverage.ops_annotated) == (100, 90, 2)
    assert [(e.name, e.total_ns) for e in coverage.unmatched_events] == [("copy", 10)]
    assert [op.reason for op in coverage.unmatched_ops] == ["the call's callee ran nothing"]
    assert [e.data.total_ns for e in opprofile.entries] == [30, 60]
    assert opprofile.totals["steps"] == 2 and opprofile.totals["groups"] == 1  # the ledger wins
    assert opprofile.totals["training"] == training
    assert coverage.extra["source"] == "x" and coverage.extra["estimated_ns"] == 90
    assert coverage.extra["training"] == {"phases_ns": {"forward": 90}}  # no per-op rows
    assert (opprofile.framework, opprofile.source_trace) == ("fw", "t.json")


def test_finish_level_refuses_lost_time() -> None:
    module = load_module(MODULE, make_context())
    infos = derive_op_infos(module)
    ledger = Ledger()
    ledger.record("kernel", 0, 90, [0])
    with pytest.raises(CorrelationError, match="here: time not conserved"):
        finish_level(ledger, infos, {}, level="l", framework="fw", profiled_ns=100, where="here")
