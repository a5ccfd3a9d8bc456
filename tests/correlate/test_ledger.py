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
