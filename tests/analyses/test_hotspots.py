"""Hotspot ranking and rollups on op records built in code; scope derivation per framework."""

from __future__ import annotations

from dataclasses import replace

import pytest

from irprof.analyses.hotspots import hotspots
from irprof.analyses.profiled_ops import ProfiledOp, name_scope, scope_depth, scope_prefix
from irprof.errors import UsageError
from irprof.opprofile import ProfileData


def op(index: int, kind: str, name: str, ns: int | None, *, callee: str = "") -> ProfiledOp:
    """A profiled op whose share is its time over 10 us."""
    profile = (
        None
        if ns is None
        else ProfileData.from_durations([ns], 0, 10_000, kernels=[f"{name}:k"], source="test")
    )
    return ProfiledOp(
        index=index,
        op_name=kind,
        function="main",
        runtime_name=name,
        scope=name_scope(name),
        source=f"model.py:{index + 1}:1",
        chain=(f"model.py:{index + 1}:1",),
        location=name,
        profile=profile,
        trivial=False,
        callee=callee,
    )


OPS = (
    op(0, "tf.Conv2D", "net/conv/Conv2D", 4_000),
    op(1, "tf.Relu", "net/conv/Relu", 1_000),
    op(2, "tf.MatMul", "net/dense/MatMul", 3_000),
    op(3, "tf.Relu", "net/dense/Relu", 500),
    op(4, "tf.Const", "net/dense/c", None),
)


@pytest.mark.parametrize(
    ("name", "scope"),
    [
        ("sequential/dense1/MatMul", "sequential/dense1"),
        ("sequential/dense1/MatMul@inner_fn", "sequential/dense1"),
        ("jit(f)/jit(main)/dense/dot_general[precision=None]", "jit(f)/jit(main)/dense"),
        ("encoder.layers.0.fc1 | linear | aten.linear.default", "encoder.layers.0.fc1"),
        ("max", ""),
        ("", ""),
    ],
)
def test_name_scope_per_framework(name: str, scope: str) -> None:
    assert name_scope(name) == scope


def test_scope_prefix_uses_the_scope_separator() -> None:
    assert scope_prefix("a/b/c", 2) == "a/b"
    assert scope_prefix("encoder.layers.0", 2) == "encoder.layers"
    # ONNX names start with the separator: it is kept, and not a component of its own.
    assert scope_prefix("/m/encoder/layers.0", 1) == "/m"
    assert scope_prefix("/m/encoder/layers.0", 2) == "/m/encoder"
    assert scope_prefix("/m/encoder/layers.0", 9) == "/m/encoder/layers.0"
    assert scope_depth("/m/encoder/layers.0") == 3 and scope_depth("/m") == 1


def test_by_op_ranks_measured_ops_hottest_first() -> None:
    table = hotspots(OPS)
    assert [row.key for row in table.rows] == [
        "net/conv/Conv2D",
        "net/dense/MatMul",
        "net/conv/Relu",
        "net/dense/Relu",
    ]
    assert table.total_ns == 8_500
    assert table.rows[0].share == pytest.approx(0.4)
    assert table.rows[0].kernels == ("net/conv/Conv2D:k",)
    assert table.rows[0].location == "model.py:1:1"


def test_by_type_and_scope_sum_their_members() -> None:
    by_type = {row.key: row for row in hotspots(OPS, by="type").rows}
    assert by_type["tf.Relu"].total_ns == 1_500
    assert by_type["tf.Relu"].ops == 2
    assert by_type["tf.Relu"].count == 2
    by_scope = hotspots(OPS, by="scope").rows
    assert [(row.key, row.total_ns) for row in by_scope] == [
        ("net/conv", 5_000),
        ("net/dense", 3_500),
    ]
    assert by_scope[0].location == "model.py:1:1"  # the hottest member's place


def test_limit_keeps_the_total_of_all_rows() -> None:
    table = hotspots(OPS, limit=1, profiled_ns=10_000)
    assert len(table.rows) == 1
    assert table.total_ns == 8_500
    assert table.profiled_ns == 10_000


def test_inclusive_calls_are_not_counted_twice() -> None:
    with_call = (*OPS, op(5, "func.call", "net/block", 8_500, callee="block"))
    assert hotspots(with_call).total_ns == 8_500
    assert "func.call" not in {row.key for row in hotspots(with_call, by="type").rows}


def test_unknown_grouping_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="op, type, scope"):
        hotspots(OPS, by="layer")  # type: ignore[arg-type]


def test_ops_reached_through_a_call_are_keyed_and_placed_by_it() -> None:
    called = replace(
        op(6, "stablehlo.maximum", "max", 2_000),
        function="relu",
        call_name="jit(f)/jit(relu)",
        call_sites=1,
        call_chain=("model.py:40:5",),
    )
    twice = replace(called, index=7, call_name="jit(relu)", call_sites=2)
    rows = {row.op_index: row for row in hotspots((*OPS, called, twice)).rows}
    assert rows[6].key == "jit(f)/jit(relu)/max"
    assert rows[6].location == "model.py:40:5"  # the call site, not the op's own frame
    assert rows[7].key == "jit(relu)/max (2 call sites)"
    assert rows[0].key == "net/conv/Conv2D"  # ops not reached through a call keep their name


def grouped(base: ProfiledOp, group: str, size: int) -> ProfiledOp:
    """`base` as a member of an event group of `size` ops (its time an estimated share)."""
    assert base.profile is not None
    profile = replace(
        base.profile, group=group, group_size=size, group_total_ns=5_000, share_basis="flops"
    )
    return replace(base, profile=profile)


FUSED = (
    grouped(OPS[0], "tf:net/conv/Relu", 2),
    grouped(OPS[1], "tf:net/conv/Relu", 2),
    OPS[2],
    OPS[3],
)


def test_a_fused_group_is_one_measured_row_by_default() -> None:
    table = hotspots(FUSED, by="op")
    first = table.rows[0]
    assert first.key == "net/conv/Conv2D +1 ops" and first.group == "tf:net/conv/Relu"
    assert first.total_ns == 5_000 and first.count == 1 and first.ops == 2
    assert first.estimated_ns == 0  # the whole group's events: measured
    assert table.total_ns == sum(op.total_ns for op in FUSED)


def test_expanded_group_members_are_marked_estimated() -> None:
    table = hotspots(FUSED, by="op", expand_groups=True)
    rows = {row.key: row for row in table.rows}
    assert rows["net/conv/Conv2D"].estimated_ns == 4_000
    assert rows["net/dense/MatMul"].estimated_ns == 0
    # A rollup that splits a group keeps the split part estimated; a whole group is measured.
    by_type = {row.key: row for row in hotspots(FUSED, by="type").rows}
    assert by_type["tf.Conv2D"].estimated_ns == 4_000
    assert hotspots(FUSED, by="scope").rows[0].estimated_ns == 0
