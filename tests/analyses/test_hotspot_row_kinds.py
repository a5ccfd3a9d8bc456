"""The kinds of a row that holds several ops are listed by their time, the most first.

A torch event group named after its `aten.bmm` (attention's `+26 ops`) begins in walk order
with a `mul.Scalar`; a narrow kind column cut after the first kind must show what dominates.
"""

from __future__ import annotations

from irprof.analyses.hotspots import hotspots
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
