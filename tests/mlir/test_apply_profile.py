"""`apply_opprofile` / `annotate_module` / `write_summary` on a hand-written module.

Which ops each entry reaches, what is left unmatched, the layout written and the module summary
(from a given coverage, or counted from the annotated module when there is none).
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.coverage import Coverage
from irprof.mlir.apply_profile import ApplyResult, annotate_module, apply_opprofile, write_summary
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import OpIndex, derive_op_keys, walk_ops
from irprof.mlir.profile_attrs import (
    PROFILE_ATTR,
    SUMMARY_ATTR,
    TS_DUR_ATTR,
    get_profile,
    get_summary,
)
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

# Walk order: 0 func.func, 1 x.mm (dense/MatMul), 2 x.mm (dense/MatMul again),
# 3 x.relu (dense/Relu), 4 x.src (m.py:4:1), 5 func.return.
MODULE = """
func.func @f() {
  "x.mm"() : () -> () loc("dense/MatMul")
  "x.mm"() : () -> () loc("dense/MatMul")
  "x.relu"() : () -> () loc("dense/Relu")
  "x.src"() : () -> () loc("m.py":4:1)
  return loc(unknown)
} loc(unknown)
"""


def _data(total_ns: int, first_ts_ns: int = 0) -> ProfileData:
    return ProfileData.from_durations([total_ns], first_ts_ns, 1000, kernels=[f"k{total_ns}"])


def _module() -> tuple[ir.Module, list[ir.Operation]]:
    module = load_module(MODULE, make_context())
    return module, walk_ops(module)


def _opprofile(*entries: OpProfileEntry, **totals: object) -> OpProfile:
    return OpProfile(
        level="tf", framework="tf", entries=entries, totals=dict(totals),
        source_trace="trace/x.xplane.pb",
    )  # fmt: skip


def _apply(root: ir.Module | ir.Operation, *entries: OpProfileEntry) -> ApplyResult:
    return apply_opprofile(root, _opprofile(*entries))


MATMUL = OpProfileEntry(OpKey(name="dense/MatMul"), _data(100, 5))
SECOND_MATMUL = OpProfileEntry(OpKey(name="dense/MatMul", ordinal=1), _data(30))
SOURCE = OpProfileEntry(OpKey(source="m.py:4:1"), _data(40))
MISSING = OpProfileEntry(OpKey(name="dense/Softmax"), _data(7))
EMPTY = OpProfileEntry(OpKey(), _data(9))


def test_each_entry_annotates_every_op_its_key_matches() -> None:
    """An entry keyed by name reaches all ops of that name; entries of no op are returned."""
    module, ops = _module()
    result = _apply(module, MATMUL, SOURCE, MISSING)
    assert result.annotated == frozenset({1, 2, 4})
    assert result.unmatched_entries == (MISSING,)
    assert [get_profile(op) for op in ops] == [
        None, MATMUL.data, MATMUL.data, None, SOURCE.data, None,
    ]  # fmt: skip
    # One attribute shared by the ops of one entry; no summary is written.
    assert ops[1].attributes[PROFILE_ATTR] == ops[2].attributes[PROFILE_ATTR]
    assert SUMMARY_ATTR not in module.operation.attributes
    assert len(result.index) == 6


def test_a_key_without_fields_matches_no_op() -> None:
    """An empty key would match every op: it is reported unmatched and annotates nothing."""
    module, ops = _module()
    result = _apply(module, EMPTY)
    assert result.annotated == frozenset()
    assert result.unmatched_entries == (EMPTY,)
    assert not any(PROFILE_ATTR in op.attributes for op in ops)


def test_a_later_entry_overwrites_an_op_an_earlier_one_annotated() -> None:
    """Entries are applied in order: the ordinal-1 entry replaces the name entry on op 2."""
    module, ops = _module()
    result = _apply(module.operation, MATMUL, SECOND_MATMUL)
    assert result.annotated == frozenset({1, 2})
    assert result.unmatched_entries == ()
    assert get_profile(ops[1]) == MATMUL.data
    assert get_profile(ops[2]) == SECOND_MATMUL.data


def test_the_thesis_layout_writes_profiler_data_only() -> None:
    """`layout="ts-dur"` writes `{ts, dur}` and no `irprof.profile`."""
    module, ops = _module()
    apply_opprofile(module, _opprofile(MATMUL), layout="ts-dur")
    assert str(ops[1].attributes[TS_DUR_ATTR]) == "{dur = 100 : i64, ts = 5 : i64}"
    assert PROFILE_ATTR not in ops[1].attributes


def test_a_given_index_is_used_and_returned() -> None:
    """With an index, entries are matched against it (here one over x.relu only)."""
    module, ops = _module()
    index = OpIndex(derive_op_keys(module)[3:4])  # only x.relu, at position 0 of this index
    result = apply_opprofile(
        module, _opprofile(OpProfileEntry(OpKey(name="dense/Relu"), _data(5)), MATMUL),
        index=index,
    )  # fmt: skip
    assert result.index is index
    assert result.annotated == frozenset({0})
    assert result.unmatched_entries == (MATMUL,)
    assert get_profile(ops[3]) == _data(5)
    assert get_profile(ops[1]) is None


def test_nothing_matched_leaves_the_module_unchanged() -> None:
    """No matching entry: no attribute is written."""
    module, ops = _module()
    before = str(module)
    result = _apply(module, MISSING)
    assert result.annotated == frozenset() and result.unmatched_entries == (MISSING,)
    assert str(module) == before
    assert all(get_profile(op) is None for op in ops)


def test_annotate_without_coverage_counts_the_summary_from_the_module() -> None:
    """The summary counts ops and annotated ops of the module; totals come from the profile."""
    module, _ = _module()
    opprofile = _opprofile(
        MATMUL, MISSING, EMPTY, profiled_ns=1000, attributed_ns=100, reattached_from="torch"
    )
    result = annotate_module(module, opprofile)
    assert result.unmatched_entries == (MISSING, EMPTY)
    assert get_summary(module) == {
        "source_trace": "trace/x.xplane.pb", "framework": "tf", "level": "tf",
        "profiled_ns": 1000, "attributed_ns": 100, "ops_total": 6, "ops_annotated": 2,
        "entries_unmatched": 2, "time_coverage": 0.1,
        # x.mm, x.mm, x.relu, x.src are non-trivial; the two x.mm are annotated.
        "nontrivial_coverage": 0.5, "reattached_from": "torch",
    }  # fmt: skip


def test_summary_without_totals_reads_zero_times() -> None:
    """Missing totals are 0 (and the coverages 0.0); `reattached_from` defaults to ""."""
    module, _ = _module()
    annotate_module(module, _opprofile(SOURCE), layout="ts-dur")
    summary = get_summary(module)
    assert summary is not None
    assert (summary["profiled_ns"], summary["attributed_ns"], summary["time_coverage"]) == (
        0, 0, 0.0,
    )  # fmt: skip
    # Thesis attributes count as annotated too: x.src only.
    assert (summary["ops_annotated"], summary["nontrivial_coverage"]) == (1, 0.25)
    assert summary["reattached_from"] == ""
    assert summary["entries_unmatched"] == 0


def test_a_given_coverage_is_the_summary() -> None:
    """With the correlator's coverage, its counts are written, not the module's."""
    module, _ = _module()
    coverage = Coverage(
        level="stablehlo", profiled_ns=800, attributed_ns=200, ops_total=50, ops_nontrivial=10,
        ops_annotated=7, ops_nontrivial_annotated=4,
    )  # fmt: skip
    annotate_module(module, _opprofile(MATMUL, profiled_ns=1, attributed_ns=1), coverage=coverage)
    summary = get_summary(module)
    assert summary is not None
    assert {k: summary[k] for k in ("level", "profiled_ns", "attributed_ns", "ops_total")} == {
        "level": "stablehlo", "profiled_ns": 800, "attributed_ns": 200, "ops_total": 50,
    }  # fmt: skip
    assert (summary["ops_annotated"], summary["time_coverage"]) == (7, 0.25)
    assert summary["nontrivial_coverage"] == 0.4


def test_write_summary_counts_profiles_already_on_the_module() -> None:
    """`write_summary` alone (a pass applying no entries) counts what the module carries."""
    module, _ = _module()
    _apply(module, SOURCE, MATMUL)
    write_summary(module.operation, _opprofile(profiled_ns=70.9), entries_unmatched=3)
    summary = get_summary(module)
    assert summary is not None
    assert (summary["ops_annotated"], summary["entries_unmatched"]) == (3, 3)
    assert (summary["profiled_ns"], summary["nontrivial_coverage"]) == (70, 0.75)


def test_write_summary_defaults_to_no_unmatched_entries() -> None:
    """Without `entries_unmatched`, the summary records 0."""
    module, _ = _module()
    write_summary(module, _opprofile())
    summary = get_summary(module)
    assert summary is not None and summary["entries_unmatched"] == 0
    assert (summary["ops_total"], summary["ops_annotated"]) == (6, 0)
