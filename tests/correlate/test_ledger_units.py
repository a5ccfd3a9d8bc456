"""The ledger's exact arithmetic and bookkeeping, on hand-made events.

test_attribution_ledger.py checks conservation and the group fields on real runs; these pin
each rule: largest-remainder rounding, default and zero weights, duplicate members, what a
group record and an op account accumulate over several events, the errors, the training
summary's sums and ordering.
"""

from __future__ import annotations

import pytest

from irprof.correlate.ledger import Ledger, split_exact
from irprof.correlate.training import (
    MAX_LISTED_LINKS,
    TrainingPhases,
    training_brief,
    training_summary,
)
from irprof.errors import CorrelationError


@pytest.mark.parametrize(
    ("duration", "weights", "shares"),
    [
        (10, [1, 1, 1], [4, 3, 3]),  # the leftover ns goes to the largest remainder, first wins
        (10, [1, 2], [3, 7]),  # 3.33 and 6.67: the 0.67 remainder gets the leftover
        (11, [3, 1], [8, 3]),  # 8.25 and 2.75: the 0.75 remainder gets it, not the 0.25
        (5, [0, 0], [3, 2]),  # all-zero weights split evenly
        (1, [1, 1], [1, 0]),
        (0, [1, 2], [0, 0]),
        (-4, [1, 2], [0, 0]),  # a negative duration gives nothing
        (7, [], []),
        (9, [0.5, 0.25, 0.25], [5, 2, 2]),  # fractional weights: 4.5, 2.25, 2.25
    ],
)
def test_split_exact(duration: int, weights: list[float], shares: list[int]) -> None:
    assert split_exact(duration, weights) == shares


def test_a_single_op_event_is_measured_not_estimated() -> None:
    ledger = Ledger()
    assert ledger.record("k", 100, 40, [3], source="trace") == [40]
    assert ledger.groups == {}
    assert ledger.estimated_ns == 0
    account = ledger.accounts[3]
    assert (account.durations, account.first_ts_ns, account.kernels) == ([40], 100, ["k"])
    assert account.groups == {} and account.partners == {}
    assert account.source == "trace"
    assert ledger.group_of(3) is None
    assert ledger.group_of(99) is None  # an op that received nothing


def test_a_group_accumulates_over_its_events_and_each_op_knows_its_partners() -> None:
    ledger = Ledger()
    assert ledger.record("fusion", 50, 10, [1, 2, 2], basis="flops", weights=[1, 1]) == [5, 5]
    assert ledger.record("fusion", 20, 4, [1, 2], basis="flops", weights=[3, 1]) == [3, 1]
    group = ledger.groups["fusion"]
    assert (group.members, group.basis, group.total_ns, group.count) == ((1, 2), "flops", 14, 2)
    assert ledger.estimated_ns == 14
    assert ledger.attributed_ns == 14
    assert ledger.accounts[1].durations == [5, 3]
    assert ledger.accounts[1].first_ts_ns == 20  # the earliest start, not the first recorded
    assert ledger.accounts[1].groups == {"fusion": 8}
    assert ledger.accounts[2].groups == {"fusion": 6}
    assert list(ledger.accounts[1].partners) == [2]
    assert list(ledger.accounts[2].partners) == [1]
    assert ledger.group_of(1) == ("fusion", group)
    assert ledger.totals() == {
        "attributed_ns": 14,
        "unattributed_ns": 0,
        "estimated_ns": 14,
        "groups": 1,
    }


def test_an_explicit_group_id_joins_events_of_different_names() -> None:
    ledger = Ledger()
    ledger.record("a", 0, 6, [1, 2], group="call#1")
    ledger.record("b", 0, 2, [1, 2], group="call#1")
    assert list(ledger.groups) == ["call#1"]
    assert ledger.groups["call#1"].total_ns == 8
    assert ledger.accounts[1].kernels == ["a", "b"]


def test_an_op_belongs_to_the_group_it_received_most_from() -> None:
    ledger = Ledger()
    ledger.record("small", 0, 4, [1, 2])
    ledger.record("large", 0, 10, [1, 3])
    assert ledger.group_of(1) is not None
    assert ledger.group_of(1)[0] == "large"  # type: ignore[index]
    ledger.record("tie", 0, 10, [1, 4])
    # Equal time: the larger group id wins, so the choice never depends on recording order.
    assert ledger.group_of(1)[0] == "tie"  # type: ignore[index]


def test_the_first_source_sticks() -> None:
    ledger = Ledger()
    ledger.record("k", 0, 1, [1])
    ledger.record("k", 0, 1, [1], source="first")
    ledger.record("k", 0, 1, [1], source="second")
    assert ledger.accounts[1].source == "first"


def test_unattributed_events_are_summed_by_name_with_their_first_reason() -> None:
    ledger = Ledger()
    ledger.unattributed("memcpy", 3, "host copy")
    ledger.unattributed("memcpy", 4, "another reason")
    ledger.unattributed("idle", 1, "no op")
    events = {event.name: event for event in ledger.unmatched_events()}
    assert (events["memcpy"].total_ns, events["memcpy"].count) == (7, 2)
    assert events["memcpy"].reason == "host copy"
    assert ledger.unattributed_ns == 8
    ledger.record("k", 0, 2, [1])
    assert ledger.accounted_ns == 10
    ledger.close(10, "here")
    with pytest.raises(CorrelationError, match=r"here: time not conserved.*off by 1 ns"):
        ledger.close(9, "here")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda ledger: ledger.record("k", 0, 1, []), "'k': recorded with no ops"),
        (lambda ledger: ledger.record("k", 0, 1, [1], basis="time"), "unknown share basis 'time'"),
        (lambda ledger: ledger.record("k", 0, 1, [1, 2], weights=[1]), "'k': 2 ops, 1 weights"),
    ],
)
def test_bad_records_are_refused(call: object, message: str) -> None:
    ledger = Ledger()
    with pytest.raises(CorrelationError, match=message):
        call(ledger)  # type: ignore[operator]
    assert ledger.accounted_ns == 0


def test_training_summary_sums_phases_and_ranks_backward_links() -> None:
    ledger = Ledger()
    ledger.record("fwd_a", 0, 10, [0])
    ledger.record("fwd_b", 0, 20, [1])
    ledger.record("bwd_a", 0, 30, [2])
    ledger.record("bwd_b", 0, 5, [3, 4])  # a group over two backward ops: 3 + 2
    ledger.record("sgd", 0, 7, [5])
    ledger.record("misc", 0, 1, [6])
    ledger.unattributed("idle", 9, "no op")
    names = {p: f"op{p}" for p in range(7)}
    phases = TrainingPhases(
        phase_of={
            0: "forward",
            1: "forward",
            2: "backward",
            3: "backward",
            4: "backward",
            5: "optimizer",
        },
        forward_of={2: (0,), 3: (1,)},
        unlinked={4: "no gradient scope"},
    )
    summary = training_summary(ledger, phases, names.__getitem__)
    assert summary["phases_ns"] == {
        "forward": 30,
        "backward": 35,
        "optimizer": 7,
        "other": 1,
        "unattributed": 9,
    }
    assert sum(summary["phases_ns"].values()) == ledger.accounted_ns
    assert summary["phases_estimated_ns"] == {
        "forward": 0,
        "backward": 5,
        "optimizer": 0,
        "other": 0,
    }
    assert summary["backward_linked_ns"] == 33
    assert summary["backward_unlinked_ns"] == 2
    assert (summary["backward_ops"], summary["backward_ops_linked"]) == (3, 2)
    assert summary["backward_by_forward"] == [
        {"forward": ["op0"], "forward_ns": 10, "backward_ns": 30, "backward_ops": ["op2"]},
        {"forward": ["op1"], "forward_ns": 20, "backward_ns": 3, "backward_ops": ["op3"]},
    ]
    assert summary["unlinked_backward"] == [{"op": "op4", "ns": 2, "reason": "no gradient scope"}]
    brief = training_brief(summary)
    assert "backward_by_forward" not in brief and "unlinked_backward" not in brief
    assert brief["phases_ns"] == summary["phases_ns"]


def test_training_summary_refuses_an_unknown_phase_and_caps_its_rows() -> None:
    ledger = Ledger()
    ledger.record("k", 0, 1, [0])
    with pytest.raises(CorrelationError, match="op 'op0': unknown phase 'warmup'"):
        training_summary(ledger, TrainingPhases({0: "warmup"}, {}, {}), lambda p: f"op{p}")
    many = Ledger()
    count = MAX_LISTED_LINKS + 5
    for position in range(count):
        many.record(f"k{position}", 0, position + 1, [position])
    phases = TrainingPhases(
        {p: "backward" for p in range(count)},
        {p: (p,) for p in range(count)},
        {},
    )
    rows = training_summary(many, phases, lambda p: f"op{p:04d}")["backward_by_forward"]
    assert len(rows) == MAX_LISTED_LINKS
    assert rows[0]["backward_ns"] == count  # largest first
