"""The shared attribution ledger: exact shares, groups, conservation on every fixture level."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.correlate.ledger import Ledger, split_exact
from irprof.correlate.training import (
    MAX_LISTED_LINKS,
    TrainingPhases,
    training_brief,
    training_summary,
)
from irprof.errors import CorrelationError
from irprof.mlir.cost_model import estimate_flops, share_weights
from irprof.mlir.profile_attrs import attach_profile, get_profile, has_profile, strip_profiles

FIXTURES = Path(__file__).parents[1] / "fixtures"
BUNDLES = [
    ("tf", "cnn-infer"),
    ("tf", "cnn-train"),
    ("tf", "nested"),
    ("tf", "depthwise"),
    ("tf", "residual"),
    ("tf", "cnn-eager"),
    ("torch", "cnn"),
    ("torch", "attention"),
    ("jax", "mlp_run"),
    ("jax", "transformer_run"),
]


@given(
    st.integers(min_value=0, max_value=10**12),
    st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=40),
)
def test_split_exact_adds_up_and_never_goes_negative(duration: int, weights: list[float]) -> None:
    shares = split_exact(duration, weights)
    assert sum(shares) == duration
    assert all(share >= 0 for share in shares)


def test_split_exact_follows_the_weights() -> None:
    assert split_exact(100, [3, 1]) == [75, 25]
    assert split_exact(10, [1, 1, 1]) == [4, 3, 3]
    assert split_exact(7, [0, 0]) == [4, 3]  # no estimate: even


def test_group_members_record_the_measured_total_size_and_basis() -> None:
    ledger = Ledger()
    ledger.record("k", 5, 90, [0, 1], weights=[2, 1], basis="flops", group="g")
    ledger.record("k", 9, 30, [0, 1], weights=[2, 1], basis="flops", group="g")
    ledger.record("solo", 1, 7, [2])
    ledger.unattributed("lost", 3, "no op")
    ledger.close(130, "test")
    first = ledger.profile_data(0, 130, str)
    assert (first.total_ns, first.count, first.first_ts_ns) == (80, 2, 5)
    assert (first.group, first.group_total_ns, first.group_size) == ("g", 120, 2)
    assert first.share_basis == "flops" and first.estimated
    solo = ledger.profile_data(2, 130, str)
    assert not solo.group and not solo.estimated
    assert ledger.estimated_ns == 120
    assert [(e.name, e.total_ns, e.reason) for e in ledger.unmatched_events()] == [
        ("lost", 3, "no op")
    ]


def test_close_refuses_time_that_was_lost_or_invented() -> None:
    ledger = Ledger()
    ledger.record("k", 0, 10, [0])
    with pytest.raises(CorrelationError, match="not conserved"):
        ledger.close(11, "where")


def test_group_fields_round_trip_through_the_ir_attribute() -> None:
    ledger = Ledger()
    ledger.record("kernel", 1, 50, [0, 1], weights=[4, 1], basis="flops", group="tf:n")
    data = ledger.profile_data(0, 100, lambda p: f"op{p}")
    with ir.Context():
        module = ir.Module.parse("func.func @f() { return }")
        op = module.body.operations[0]
        text = str(module)
        attach_profile(op, data)
        assert has_profile(op) and get_profile(op) == data
        assert 'share_basis = "flops"' in str(module) and "group_size = 2" in str(module)
        strip_profiles(module)
        assert str(module) == text


def test_flop_estimate_ranks_a_matmul_above_its_bias_add() -> None:
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(
            """
            func.func @f(%a: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) {
              %m = "tf.MatMul"(%a, %w) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
              %s = "tf.BiasAdd"(%m, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
              %u = "tf.MatMul"(%a, %w) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<*xf32>
              return
            }
            """
        )
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        assert estimate_flops(ops[0]) == 2 * 8 * 32 * 64
        assert estimate_flops(ops[1]) == 8 * 32
        assert share_weights(ops[:2]) == ([2.0 * 8 * 32 * 64, 256.0], "flops")
        # An unknown shape means no estimate: the split falls back to even, and says so.
        assert share_weights([ops[1], ops[2]]) == ([1.0, 1.0], "even")


@pytest.mark.parametrize(("framework", "name"), BUNDLES)
def test_time_is_conserved_at_every_level(framework: str, name: str) -> None:
    correlator = importlib.import_module(f"irprof.frameworks.{framework}.correlate").CORRELATOR
    bundle = RunBundle(FIXTURES / framework / name)
    for level in correlator.levels:
        if level not in bundle.manifest().ir_levels:
            continue
        result = correlator.correlate(bundle, level, CorrelationOptions())
        coverage, entries = result.coverage, result.opprofile.entries
        listed = sum(event.total_ns for event in coverage.unmatched_events)
        assert coverage.attributed_ns + listed == coverage.profiled_ns, (name, level)
        # The entries hold exactly the attributed time (call ops are inclusive views: skip).
        own = sum(e.data.total_ns for e in entries if "inclusive" not in e.data.source)
        if framework != "jax":
            assert own == coverage.attributed_ns, (name, level)
        for entry in entries:
            if entry.data.group:
                assert entry.data.group_size > 1
                assert entry.data.share_basis in ("flops", "bytes", "even")


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
