"""The kinds of a row that holds several ops are listed by their time, the most first.

A torch event group named after its `aten.bmm` (attention's `+26 ops`) begins in walk order
with a `mul.Scalar`; a narrow kind column cut after the first kind must show what dominates.
"""

from __future__ import annotations

from irprof.analyses.hotspots import hotspots
from irprof.analyses.profiled_ops import ProfiledOp
from tests.analyses.test_hotspots_mutants import op


def test_a_groups_kinds_are_ordered_by_their_summed_time() -> None:
    ops = (
        op(0, "torch.aten.mul.Scalar", "attn#1/scale", 1_000, group="g", group_size=4),
        op(1, "torch.aten.bmm", "attn#1/bmm", 3_000, group="g", group_size=4),
        op(2, "torch.aten.mul.Scalar", "attn#1/mask", 2_500, group="g", group_size=4),
        op(3, "torch.aten.softmax", "attn#1/softmax", 2_000, group="g", group_size=4),
    )
    (row,) = hotspots(ops, stat="sum").rows
    # mul.Scalar: 1,000 + 2,500 = 3,500 ns > bmm 3,000 > softmax 2,000
    assert row.op_name == "torch.aten.mul.Scalar, torch.aten.bmm, torch.aten.softmax"


def test_kinds_of_equal_time_keep_walk_order() -> None:
    ops = (
        op(0, "tf.Relu", "net/relu", 2_000, scope="net"),
        op(1, "tf.Conv2D", "net/conv", 2_000, scope="net"),
        op(2, "tf.BiasAdd", "net/bias", 2_500, scope="net"),
    )
    (row,) = hotspots(ops, by="scope", stat="sum").rows
    assert row.op_name == "tf.BiasAdd, tf.Relu, tf.Conv2D"


def test_an_op_holding_more_than_its_group_measured_is_its_own_row() -> None:
    """Below the torch level, three layers' matmuls each took their own torch op's time and a
    share of a 1,353 ns `clone` folded into all of them: the clone's group must not make them
    one row summing three layers (each holds more than the whole group measured)."""
    from dataclasses import replace

    def in_clone_group(member: ProfiledOp) -> ProfiledOp:
        assert member.profile is not None
        profile = replace(member.profile, group="clone", group_size=4, group_total_ns=1_353)
        return replace(member, profile=profile)

    ops = tuple(
        in_clone_group(member)
        for member in (
            op(0, "linalg.matmul", "dec0.k|linear_17", 122_000),
            op(1, "linalg.matmul", "dec1.k|linear_27", 160_000),
            op(2, "linalg.matmul", "dec1.v|linear_28", 175_000),
            op(3, "tensor.collapse_shape", "dec0.k|view", 1_000),
        )
    )
    rows = hotspots(ops, stat="sum").rows
    assert sorted((row.key, row.total_ns) for row in rows) == [
        ("dec0.k|linear_17", 122_000),
        ("dec0.k|view", 1_000),
        ("dec1.k|linear_27", 160_000),
        ("dec1.v|linear_28", 175_000),
    ]
