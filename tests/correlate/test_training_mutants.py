"""The training record's pieces on small inputs: def-use edges of a function's ops (uses
counted once each, block arguments and operands past the end are no op), their closures, the
phase of each op, the record every framework reports, and the summary's ranking of backward
time by forward op set (ties by name, rows capped, estimated shares per phase).

Written from the mutants of `correlate/training.py`. The expected edges are read off the IR
text below; the expected times are added up here from the events recorded.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.correlate.ledger import Ledger
from irprof.correlate.training import (
    MAX_LISTED_LINKS,
    PHASES,
    TRAINING_ROWS,
    DefUse,
    TrainingPhases,
    label_phases,
    phase_record,
    training_brief,
    training_record,
    training_summary,
)
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos

# Walk positions: 0 func.func, 1 %0 = addf(%a, %a), 2 %1 = mulf(%0, %0), 3 %2 = subf(%1, %a),
# 4 %3 = addf(%2, %0), 5 return %3.
FUNCTION = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  %2 = arith.subf %1, %a : tensor<4xf32>
  %3 = arith.addf %2, %0 : tensor<4xf32>
  return %3 : tensor<4xf32>
}
"""


def def_use() -> tuple[ir.Module, DefUse]:
    module = parse_module(FUNCTION, make_context())
    infos = derive_op_infos(module)
    assert [info.op_name for info in infos] == [
        "func.func", "arith.addf", "arith.mulf", "arith.subf", "arith.addf", "func.return",
    ]  # fmt: skip
    return module, DefUse(infos)


def test_users_are_listed_once_per_use() -> None:
    module, edges = def_use()
    assert sorted(edges.users(1)) == [2, 2, 4]  # %0: twice by mulf, once by the last addf
    assert edges.users(2) == [3]
    assert edges.users(4) == [5]
    assert edges.users(5) == [] and edges.users(0) == []
    del module


def test_producers_in_operand_order_without_block_arguments() -> None:
    module, edges = def_use()
    assert edges.producers(2) == [1, 1]
    assert edges.producers(3) == [2]  # %a is a block argument: no op
    assert edges.producers(4) == [3, 1]
    assert edges.producers(1) == []
    assert (edges.producer(4, 0), edges.producer(4, 1)) == (3, 1)
    assert edges.producer(3, 1) is None  # %a
    assert edges.producer(4, 2) is None  # past the last operand
    assert edges.producer(5, 1) is None and edges.producer(5, 0) == 4
    del module


def test_only_the_ops_given_positions_are_found() -> None:
    module = parse_module(FUNCTION, make_context())
    infos = derive_op_infos(module)
    some = DefUse(infos, {infos[1].op: 1, infos[2].op: 2})
    assert some.users(1) == [2, 2]
    assert some.producers(4) == [1]
    assert some.producer(4, 0) is None
    none = DefUse(infos, {})
    assert none.users(1) == [] and none.producers(4) == []
    del module


def test_closures_follow_users_or_producers_and_stop_at_blocked_ops() -> None:
    module, edges = def_use()
    assert edges.closure([1], down=True) == {2, 3, 4, 5}
    assert edges.closure([4], down=False) == {1, 2, 3}
    assert edges.closure([1], down=True, blocked=[3]) == {2, 4, 5}
    assert edges.closure([3], down=False, blocked=[2]) == set()
    assert edges.closure([5], down=True) == set()
    # a start is in the closure only when another start reaches it
    assert edges.closure([2, 1], down=True) == {2, 3, 4, 5}
    assert edges.closure([1, 2], down=True) == {2, 3, 4, 5}
    assert edges.closure([], down=True) == set()
    del module


def test_phases_follow_backward_then_optimizer_then_forward() -> None:
    phases = label_phases(
        range(6), backward={1, 4}, forward={0, 1, 2, 3}, optimizer={2, 4}
    )  # fmt: skip
    assert phases == {
        0: "forward",
        1: "backward",
        2: "optimizer",
        3: "forward",
        4: "backward",
        5: "other",
    }
    assert label_phases([], {1}, {2}, {3}) == {}


def test_phase_record_lists_every_phase_and_the_unlinked_backward_time() -> None:
    record = phase_record(
        {"forward": 10, "backward": 40},
        7,
        {"backward": 45, "forward": 10, "optimizer": 3},
        buckets=("optimizer",),
        backward_linked_ns=30,
    )
    assert record == {
        "phases_ns": {"forward": 10, "backward": 40, "optimizer": 0, "other": 0, "unattributed": 7},
        "phases_profiled_ns": {"backward": 45, "forward": 10, "optimizer": 3},
        "buckets": ["optimizer"],
        "backward_linked_ns": 30,
        "backward_unlinked_ns": 45 - 30,
    }
    assert list(record["phases_ns"]) == [*PHASES, "unattributed"]
    bare = phase_record({}, 0, {}, backward_linked_ns=0)
    assert bare["buckets"] == [] and bare["backward_unlinked_ns"] == 0
    assert bare["phases_ns"] == dict.fromkeys([*PHASES, "unattributed"], 0)


def names(position: int) -> str:
    return f"op{position}"


def test_backward_time_is_ranked_by_forward_set_with_ties_by_name() -> None:
    ledger = Ledger()
    for position, ns in {0: 11, 1: 12, 2: 13, 3: 20, 4: 20, 5: 5, 6: 5, 7: 9}.items():
        ledger.record(f"k{position}", 0, ns, [position])
    phases = TrainingPhases(
        phase_of={0: "forward", 1: "forward", 2: "forward", 3: "backward", 4: "backward",
                  5: "backward", 6: "backward", 7: "backward"},
        # 3 and 5 differentiate the same set given in two orders; 4 ties with them on time
        forward_of={5: (1, 0), 3: (0, 1), 4: (2,), 6: (9,)},
        unlinked={7: "no scope"},
    )  # fmt: skip
    summary = training_summary(ledger, phases, names)
    assert summary["backward_by_forward"] == [
        {"forward": ["op0", "op1"], "forward_ns": 23, "backward_ns": 25,
         "backward_ops": ["op3", "op5"]},
        {"forward": ["op2"], "forward_ns": 13, "backward_ns": 20, "backward_ops": ["op4"]},
        # an op the ledger never timed counts 0
        {"forward": ["op9"], "forward_ns": 0, "backward_ns": 5, "backward_ops": ["op6"]},
    ]  # fmt: skip
    assert summary["backward_linked_ns"] == 20 + 20 + 5 + 5
    assert summary["phases_ns"]["backward"] == 20 + 20 + 5 + 5 + 9
    assert summary["backward_unlinked_ns"] == 9
    assert (summary["backward_ops"], summary["backward_ops_linked"]) == (5, 4)
    # equal backward time: the forward names decide
    tie = Ledger()
    for position in range(4):
        tie.record(f"k{position}", 0, 10, [position])
    tied = TrainingPhases({2: "backward", 3: "backward"}, {2: (1,), 3: (0,)}, {})
    rows = training_summary(tie, tied, names)["backward_by_forward"]
    assert [row["forward"] for row in rows] == [["op0"], ["op1"]]


def test_unlinked_backward_ops_hottest_first_then_by_name() -> None:
    ledger = Ledger()
    for position, ns in {0: 5, 1: 9, 2: 5}.items():
        ledger.record(f"k{position}", 0, ns, [position])
    phases = TrainingPhases(
        dict.fromkeys(range(4), "backward"),
        {},
        {2: "b", 0: "a", 1: "c", 3: "d"},
    )
    summary = training_summary(ledger, phases, names)
    assert summary["unlinked_backward"] == [
        {"op": "op1", "ns": 9, "reason": "c"},
        {"op": "op0", "ns": 5, "reason": "a"},
        {"op": "op2", "ns": 5, "reason": "b"},
        {"op": "op3", "ns": 0, "reason": "d"},
    ]
    assert summary["backward_linked_ns"] == 0
    assert summary["backward_unlinked_ns"] == 9 + 5 + 5


def test_unlinked_rows_are_capped_too() -> None:
    ledger = Ledger()
    count = MAX_LISTED_LINKS + 1
    for position in range(count):
        ledger.record(f"k{position}", 0, position + 1, [position])
    phases = TrainingPhases({}, {}, {p: "none" for p in range(count)})
    rows = training_summary(ledger, phases, names)["unlinked_backward"]
    assert len(rows) == MAX_LISTED_LINKS
    assert rows[0] == {"op": f"op{count - 1}", "ns": count, "reason": "none"}
    assert rows[-1]["ns"] == count - MAX_LISTED_LINKS + 1


def test_estimated_shares_and_ops_without_a_phase() -> None:
    ledger = Ledger()
    ledger.record("fused", 0, 30, [0, 1], weights=[2, 1])  # 20 + 10, estimated
    ledger.record("alone", 0, 7, [1])
    ledger.record("stray", 0, 4, [2])  # no phase given: "other"
    ledger.unattributed("idle", 6, "no op")
    phases = TrainingPhases({0: "forward", 1: "backward"}, {1: (0,)}, {})
    summary = training_summary(ledger, phases, names)
    assert summary["phases_ns"] == {
        "forward": 20, "backward": 10 + 7, "optimizer": 0, "other": 4, "unattributed": 6,
    }  # fmt: skip
    assert summary["phases_estimated_ns"] == {"forward": 20, "backward": 10, "optimizer": 0,
                                              "other": 0}  # fmt: skip
    assert summary["phases_profiled_ns"] == {"forward": 20, "backward": 17, "optimizer": 0,
                                             "other": 4}  # fmt: skip
    assert summary["buckets"] == []
    assert summary["backward_by_forward"] == [
        {"forward": ["op0"], "forward_ns": 20, "backward_ns": 17, "backward_ops": ["op1"]}
    ]


def test_a_record_only_for_a_step_with_phases_and_a_brief_without_rows() -> None:
    ledger = Ledger()
    ledger.record("k", 0, 3, [0])
    assert training_record(None, ledger, names) is None
    phases = TrainingPhases({0: "backward"}, {0: (1,)}, {})
    record = training_record(phases, ledger, names)
    assert record == training_summary(ledger, phases, names)
    brief = training_brief(record)
    assert set(record) - set(brief) == set(TRAINING_ROWS)
    assert all(brief[key] == record[key] for key in brief)


def test_backward_ops_the_ledger_never_timed_count_zero() -> None:
    # op 0 ran for 0 ns (recorded), op 1 never ran (no account): both count 0, so the names
    # decide the order; no linked or unlinked time comes from them
    ledger = Ledger()
    ledger.record("k0", 0, 0, [0])
    ledger.record("k2", 0, 0, [2])
    phases = TrainingPhases(
        {0: "backward", 1: "backward", 2: "backward", 3: "backward"},
        {1: (6,), 0: (5,)},
        {3: "none", 2: "none"},
    )
    summary = training_summary(ledger, phases, names)
    assert summary["backward_by_forward"] == [
        {"forward": ["op5"], "forward_ns": 0, "backward_ns": 0, "backward_ops": ["op0"]},
        {"forward": ["op6"], "forward_ns": 0, "backward_ns": 0, "backward_ops": ["op1"]},
    ]
    assert [row["op"] for row in summary["unlinked_backward"]] == ["op2", "op3"]
    assert [row["ns"] for row in summary["unlinked_backward"]] == [0, 0]
    assert summary["backward_linked_ns"] == 0 and summary["backward_unlinked_ns"] == 0
