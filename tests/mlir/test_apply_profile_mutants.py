"""`mlir/apply_profile.py`: the op index `apply_opprofile` builds is what the module summary is
counted from (the module is walked once, not again for the summary), and `write_summary` counts
over the index it is given."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from irprof.mlir import apply_profile
from irprof.mlir.apply_profile import annotate_module, write_summary
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import OpIndex, derive_op_keys
from irprof.mlir.profile_attrs import get_summary
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

# Walk order: 0 func.func, 1 x.mm, 2 x.relu, 3 func.return.
MODULE = """
func.func @f() {
  "x.mm"() : () -> () loc("dense/MatMul")
  "x.relu"() : () -> () loc("dense/Relu")
  return loc(unknown)
} loc(unknown)
"""

MATMUL = OpProfileEntry(
    OpKey(name="dense/MatMul"), ProfileData.from_durations([100], 0, 1000, kernels=["k"])
)


def _opprofile(*entries: OpProfileEntry) -> OpProfile:
    return OpProfile(
        level="tf", framework="tf", entries=entries, totals={"profiled_ns": 400,
        "attributed_ns": 100}, source_trace="t.xplane.pb",
    )  # fmt: skip


def _no_second_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def walk(root: ir.Module | ir.Operation) -> None:
        raise AssertionError("the module was walked again for its summary")

    monkeypatch.setattr(apply_profile, "derive_op_keys", walk)


def test_annotate_counts_the_summary_from_the_index_it_applied_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No coverage given: the summary's op counts come from `ApplyResult.index`; 4 ops, 1 of 2
    non-trivial ops (x.mm, x.relu) annotated, 100 of 400 ns."""
    module = load_module(MODULE, make_context())
    _no_second_walk(monkeypatch)
    annotate_module(module, _opprofile(MATMUL))
    summary = get_summary(module)
    assert summary is not None
    assert (summary["ops_total"], summary["ops_annotated"]) == (4, 1)
    assert (summary["nontrivial_coverage"], summary["time_coverage"]) == (0.5, 0.25)


def test_write_summary_counts_over_the_given_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """A given index is what the summary counts: here one over x.relu alone (1 op, none
    annotated), where the whole module holds 4 ops."""
    module = load_module(MODULE, make_context())
    index = OpIndex(derive_op_keys(module)[2:3])
    _no_second_walk(monkeypatch)
    write_summary(module, _opprofile(), index=index)
    summary = get_summary(module)
    assert summary is not None
    assert (summary["ops_total"], summary["ops_annotated"]) == (1, 0)
