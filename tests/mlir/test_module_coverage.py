"""`coverage_for`: counts and reasons a correlator gets for one level."""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from irprof.coverage import UnmatchedEvent, UnmatchedOp
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.module_coverage import (
    MAX_LOCATION_CHARS,
    MAX_UNMATCHED,
    coverage_for,
    default_unmatched_reason,
)
from irprof.mlir.op_index import derive_op_keys
from irprof.opprofile import OpKey

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


UNKNOWN_REASON = "location has no name and no source position (unknown location)"
SUMMED = "smaller unattributed events, summed:"

# Walk order: 0 func.func, 1 x.named, 2 x.placed, 3 x.unknown, 4 x.done, 5 x.gone,
# 6 x.both, 7 func.return. func.func and func.return are trivial.
MODULE = """
func.func @f() {
  "x.named"() : () -> () loc("dense/MatMul")
  "x.placed"() : () -> () loc("model.py":7:3)
  "x.unknown"() : () -> () loc(unknown)
  "x.done"() : () -> () loc("dense/Relu")
  "x.gone"() : () -> () loc("dense/Add")
  "x.both"() : () -> () loc("dense/Mul"("lib.py":2:1))
  return loc(unknown)
} loc(unknown)
"""


def _keyed(text: str = MODULE) -> list[tuple[ir.Operation, OpKey]]:
    return derive_op_keys(load_module(text, make_context()))


def _ops_module(locations: list[str]) -> str:
    body = "".join(f'  "x.op{n}"() : () -> () loc({loc})\n' for n, loc in enumerate(locations))
    return f"func.func @f() {{\n{body}  return\n}}"


def test_default_reason_names_the_key_field_that_found_nothing() -> None:
    """No name and no source: unknown location; a name wins over a source; else the source."""
    assert default_unmatched_reason(OpKey()) == (UNKNOWN_REASON)
    assert default_unmatched_reason(OpKey(origin="tf#1", ordinal=0)) == (UNKNOWN_REASON)
    assert default_unmatched_reason(OpKey(name="a/b")) == "no profiled event named after 'a/b'"
    assert default_unmatched_reason(OpKey(name="a/b", source="m.py:1:2")) == (
        "no profiled event named after 'a/b'"
    )
    assert default_unmatched_reason(OpKey(source="m.py:1:2")) == (
        "no profiled event attributed to source m.py:1:2"
    )


def test_counts_split_trivial_annotated_removed_and_unmatched_ops() -> None:
    """Trivial ops count only in ops_total; removed ops leave ops_nontrivial but stay listed."""
    keyed = _keyed()
    assert [op.name for op, _ in keyed] == [
        "func.func", "x.named", "x.placed", "x.unknown", "x.done", "x.gone", "x.both",
        "func.return",
    ]  # fmt: skip
    coverage = coverage_for(
        keyed, [4, 4, 0], level="tf", profiled_ns=2000, attributed_ns=500, not_executed={5}
    )
    assert coverage.level == "tf"
    assert (coverage.profiled_ns, coverage.attributed_ns) == (2000, 500)
    assert coverage.ops_total == 8
    # x.named, x.placed, x.unknown, x.done, x.both; x.gone was removed.
    assert coverage.ops_nontrivial == 5
    assert coverage.ops_not_executed == 1
    # Positions 4 and 0 (a trivial op still counts as annotated, not as non-trivial annotated).
    assert coverage.ops_annotated == 2
    assert coverage.ops_nontrivial_annotated == 1
    by_name, by_source = "no profiled event named after", "no profiled event attributed to source"
    assert coverage.unmatched_ops == (
        UnmatchedOp("x.named", "'dense/MatMul'", f"{by_name} 'dense/MatMul'"),
        UnmatchedOp("x.placed", "model.py:7:3", f"{by_source} model.py:7:3"),
        UnmatchedOp("x.unknown", "?", UNKNOWN_REASON),
        UnmatchedOp("x.both", "'dense/Mul'(lib.py:2:1)", f"{by_name} 'dense/Mul'"),
        # removed ops after the ones that lower the coverage
        UnmatchedOp("x.gone", "'dense/Add'", f"{by_name} 'dense/Add'"),
    )  # fmt: skip
    assert coverage.unmatched_events == ()
    assert coverage.warnings == ()


def test_given_reasons_replace_the_default_unless_empty() -> None:
    """A reason given for a position is listed as is; an empty one falls back to the key's."""
    coverage = coverage_for(
        _keyed(), [], level="tf", profiled_ns=0, attributed_ns=0,
        reasons={1: "fused into fusion.3 by XLA", 2: "", 5: "pruned by grappler"},
        not_executed=[5], warnings=["w1", "w2"],
    )  # fmt: skip
    reasons = [(op.op_name, op.reason) for op in coverage.unmatched_ops]
    assert reasons == [
        ("x.named", "fused into fusion.3 by XLA"),
        ("x.placed", "no profiled event attributed to source model.py:7:3"),
        ("x.unknown", UNKNOWN_REASON),
        ("x.done", "no profiled event named after 'dense/Relu'"),
        ("x.both", "no profiled event named after 'dense/Mul'"),
        ("x.gone", "pruned by grappler"),
    ]
    assert coverage.ops_nontrivial == 5 and coverage.ops_not_executed == 1
    assert coverage.ops_annotated == 0 and coverage.ops_nontrivial_annotated == 0
    assert coverage.warnings == ("w1", "w2")


def test_time_totals_are_stored_as_ints() -> None:
    """Float totals (from JSON) become ints."""
    coverage = coverage_for(_keyed(), [], level="l", profiled_ns=10.9, attributed_ns=3.2)  # type: ignore[arg-type]
    assert (coverage.profiled_ns, coverage.attributed_ns) == (10, 3)
    assert type(coverage.profiled_ns) is int and type(coverage.attributed_ns) is int


def test_at_most_max_listed_ops_are_listed_but_all_are_counted() -> None:
    """The listing stops at `max_listed` (default MAX_UNMATCHED = 25), the counts do not."""
    assert MAX_UNMATCHED == 25
    keyed = _keyed(_ops_module([f'"n{k}"' for k in range(27)]))
    coverage = coverage_for(keyed, [], level="l", profiled_ns=0, attributed_ns=0)
    assert coverage.ops_nontrivial == 27
    assert [op.op_name for op in coverage.unmatched_ops] == [f"x.op{k}" for k in range(25)]
    limited = coverage_for(
        keyed, [1], level="l", profiled_ns=0, attributed_ns=0, not_executed=[2, 3, 4],
        max_listed=2,
    )  # fmt: skip
    # Position 0 is func.func; x.op0 is annotated; the missed ops come before removed ones.
    assert [op.op_name for op in limited.unmatched_ops] == ["x.op4", "x.op5"]
    assert limited.ops_nontrivial == 24 and limited.ops_not_executed == 3


def test_missed_ops_are_listed_before_untimed_and_removed_ones() -> None:
    """Walk order within each group: missed (they lower the coverage), seen only untimed, removed;
    each group is cut at `max_listed` and so is the whole list."""
    keyed = _keyed(_ops_module([f'"n{k}"' for k in range(10)]))
    # positions 1..10 are x.op0..x.op9; removed: op0, op5; untimed: op1, op6; annotated: op2
    removed, untimed = [1, 6], [2, 7]
    coverage = coverage_for(
        keyed, [3], level="l", profiled_ns=0, attributed_ns=0, not_executed=removed,
        untimed=untimed,
    )  # fmt: skip
    assert [op.op_name for op in coverage.unmatched_ops] == [
        "x.op3", "x.op4", "x.op7", "x.op8", "x.op9",  # missed
        "x.op1", "x.op6",  # seen only untimed
        "x.op0", "x.op5",  # removed
    ]  # fmt: skip
    assert coverage.ops_nontrivial == 8 and coverage.ops_untimed == 2
    assert coverage.ops_not_executed == 2 and coverage.ops_nontrivial_annotated == 1
    limited = coverage_for(
        keyed, [3], level="l", profiled_ns=0, attributed_ns=0, not_executed=removed,
        untimed=untimed, max_listed=6,
    )  # fmt: skip
    assert [op.op_name for op in limited.unmatched_ops] == [
        "x.op3", "x.op4", "x.op7", "x.op8", "x.op9", "x.op1",
    ]  # fmt: skip
    only_removed = coverage_for(
        keyed, list(range(2, 11)), level="l", profiled_ns=0, attributed_ns=0,
        not_executed=[1, 2], max_listed=1,
    )  # fmt: skip
    assert [op.op_name for op in only_removed.unmatched_ops] == ["x.op0"]


def test_long_locations_are_cut_to_max_location_chars() -> None:
    """A rendered location over MAX_LOCATION_CHARS (160) ends in '...' at exactly 160 chars."""
    assert MAX_LOCATION_CHARS == 160
    fits = "a" * 158  # rendered with quotes: 160 chars
    too_long = "b" * 159  # 161 chars
    coverage = coverage_for(
        _keyed(_ops_module([f'"{fits}"', f'"{too_long}"'])), [], level="l", profiled_ns=0,
        attributed_ns=0,
    )  # fmt: skip
    first, second = (op.location for op in coverage.unmatched_ops)
    assert first == f"'{fits}'"
    assert second == "'" + "b" * 156 + "..."
    assert len(second) == 160


def _event(name: str, total_ns: int, count: int = 1, reason: str = "no op") -> UnmatchedEvent:
    return UnmatchedEvent(name, total_ns, count, reason)


def test_events_are_listed_largest_first_without_a_tail_when_all_fit() -> None:
    """Up to `max_listed` events are listed by time, largest first, ties in input order."""
    events = [_event("a", 5), _event("b", 9), _event("c", 5), _event("d", 1)]
    coverage = coverage_for(
        _keyed(), [], level="l", profiled_ns=0, attributed_ns=0, unmatched_events=iter(events),
        max_listed=4,
    )  # fmt: skip
    assert [e.name for e in coverage.unmatched_events] == ["b", "a", "c", "d"]
    default = coverage_for(
        _keyed(), [], level="l", profiled_ns=0, attributed_ns=0,
        unmatched_events=[_event(f"e{k}", k) for k in range(25)],
    )  # fmt: skip
    assert len(default.unmatched_events) == 25
    assert default.unmatched_events[0].name == "e24"


def test_events_past_the_limit_are_summed_into_one_row() -> None:
    """The tail row names how many events it holds and sums their time, counts and reasons."""
    events = [
        _event("big", 100, 1, "r-big"),
        _event("mid", 50, 2, "r-mid"),
        _event("t1", 7, 3, "zeta"),
        _event("t2", 4, 4, "alpha"),
        _event("t3", 2, 5, "zeta"),
    ]
    coverage = coverage_for(
        _keyed(), [], level="l", profiled_ns=0, attributed_ns=0, unmatched_events=events,
        max_listed=2,
    )  # fmt: skip
    assert coverage.unmatched_events == (
        events[0],
        events[1],
        UnmatchedEvent("3 more event names", 13, 12, f"{SUMMED} alpha; zeta"),
    )  # fmt: skip
    default = coverage_for(
        _keyed(), [], level="l", profiled_ns=0, attributed_ns=0,
        unmatched_events=[_event(f"e{k}", k + 1) for k in range(26)],
    )  # fmt: skip
    assert len(default.unmatched_events) == 26
    assert default.unmatched_events[-1] == UnmatchedEvent(
        "1 more event names", 1, 1, f"{SUMMED} no op"
    )


def test_the_summed_reasons_are_cut_to_300_chars() -> None:
    """The joined reasons of the tail are cut at 300 chars (after the fixed prefix)."""
    events = [_event("top", 10)] + [_event(f"t{k}", 1, 1, f"{k:02d}" + "r" * 48) for k in range(8)]
    coverage = coverage_for(
        _keyed(), [], level="l", profiled_ns=0, attributed_ns=0, unmatched_events=events,
        max_listed=1,
    )  # fmt: skip
    joined = "; ".join(f"{k:02d}" + "r" * 48 for k in range(8))
    assert len(joined) > 300
    tail = coverage.unmatched_events[-1]
    assert tail.reason == f"{SUMMED} {joined[:300]}"
