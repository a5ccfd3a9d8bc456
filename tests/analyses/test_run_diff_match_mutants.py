"""Which key matches two runs' ops, the order of the pairs, and fusion changes of XLA-style
fusions (partners and a shared kernel) and of groups with a member in one run only.

Written from the mutants of `analyses/run_diff_match.py`. Ops are built in code; each case says
which pass should match which op, worked out from the names, sources and kinds it gives.
"""

from __future__ import annotations

from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.run_diff_match import FusionChange, OpPair, fusion_changes, match_ops
from irprof.opprofile import ProfileData


def profile(
    kernels: tuple[str, ...] = ("k",), *, fused_with: tuple[str, ...] = (), group: str = ""
) -> ProfileData:
    return ProfileData(
        1, 10, 10, 10, 10, 0, 0.5, kernels=kernels, fused_with=fused_with, group=group,
        group_size=2 if group else 0,
    )  # fmt: skip


def op(
    index: int,
    name: str = "",
    source: str = "",
    kind: str = "tf.Add",
    data: ProfileData | None = None,
    *,
    profiled: bool = True,
) -> ProfiledOp:
    return ProfiledOp(
        index=index,
        op_name=kind,
        function="main",
        runtime_name=name,
        scope="",
        source=source,
        chain=(),
        location=f"loc{index}",
        profile=(data or profile()) if profiled else None,
        trivial=False,
    )


def as_tuples(pairs: list[OpPair]) -> list[tuple[int | None, int | None, str]]:
    return [(pair.a, pair.b, pair.match) for pair in pairs]


def test_an_op_without_a_name_or_without_a_source_is_not_matched_by_both() -> None:
    # 0: no name, same source and kind -> source+kind; 1: a name, no source -> name.
    a = [op(0, "", "m.py:1:1", "tf.Mul"), op(1, "n", "", "tf.Add")]
    b = [op(0, "n", "", "tf.Add"), op(1, "", "m.py:1:1", "tf.Mul")]
    assert as_tuples(match_ops(a, b)) == [(1, 0, "name"), (0, 1, "source+kind")]


def test_ops_without_sources_of_one_kind_are_not_matched_by_kind() -> None:
    a = [op(0, "x", "", "tf.Add")]
    b = [op(0, "y", "", "tf.Add")]
    assert as_tuples(match_ops(a, b)) == [(None, 0, "only in B"), (0, None, "only in A")]


def test_ops_of_one_source_and_kind_match_by_source_and_kind_before_source() -> None:
    a = [op(0, "x", "m.py:3:1", "tf.Add")]
    b = [op(0, "y", "m.py:3:1", "tf.Add")]
    assert as_tuples(match_ops(a, b)) == [(0, 0, "source+kind")]


def test_a_unique_source_matches_ops_of_other_names_and_kinds() -> None:
    a = [op(0, "x", "m.py:3:1", "tf.Add"), op(1, "z", "m.py:9:1", "tf.Sub")]
    b = [op(0, "y", "m.py:3:1", "tf.AddV2"), op(1, "w", "m.py:8:1", "tf.Sub")]
    assert as_tuples(match_ops(a, b)) == [
        (0, 0, "source"),
        (None, 1, "only in B"),
        (1, None, "only in A"),
    ]


def test_the_node_is_the_name_before_the_last_bar() -> None:
    # Same module and node, other targets: the names differ, the nodes `m|n1`, `m|n2` do not.
    a = [op(0, "m|n1|t1"), op(1, "m|n2|t1")]
    b = [op(0, "m|n2|t2"), op(1, "m|n1|t2")]
    assert as_tuples(match_ops(a, b)) == [(1, 0, "node"), (0, 1, "node")]


def test_pairs_come_in_bs_order_then_as_only_ops_in_as_order() -> None:
    a = [op(0, "c"), op(1, "b"), op(2, "a"), op(3, "x"), op(4, "y")]
    b = [op(0, "a"), op(1, "b"), op(2, "c"), op(3, "z"), op(4, "w")]
    assert as_tuples(match_ops(a, b)) == [
        (2, 0, "name"),
        (1, 1, "name"),
        (0, 2, "name"),
        (None, 3, "only in B"),
        (None, 4, "only in B"),
        (3, None, "only in A"),
        (4, None, "only in A"),
    ]


def test_an_xla_fusion_split_in_b_is_found_by_its_shared_kernel() -> None:
    a = [
        op(0, "add", data=profile(("fusion.1",), fused_with=("mul",))),
        op(1, "mul", data=profile(("fusion.1",), fused_with=("add",))),
    ]
    b = [op(0, "add", data=profile(("add.k",))), op(1, "mul", data=profile(("mul.k",)))]
    pairs = match_ops(a, b)
    assert fusion_changes(pairs, a, b) == (
        FusionChange("split in B", ("add", "mul"), ("fusion.1",), ("add.k", "mul.k")),
    )


def test_a_group_with_a_member_only_in_a_names_it_by_as_op() -> None:
    a = [
        op(0, "add", data=profile(("fused",), group="g")),
        op(1, "gone", data=profile(("fused",), group="g")),
    ]
    b = [op(0, "add", data=profile(("add.k",)))]
    pairs = match_ops(a, b)
    assert as_tuples(pairs) == [(0, 0, "name"), (1, None, "only in A")]
    assert fusion_changes(pairs, a, b) == (
        FusionChange("split in B", ("add", "gone"), ("fused",), ("add.k",)),
    )


def test_ops_left_out_of_the_diff_are_left_out_of_fusion_groups() -> None:
    # A container holding the group's profile and an unprofiled op are in no pair.
    a = [
        op(0, "body", kind="func.func", data=profile(("fused",), group="g")),
        op(1, "add", data=profile(("fused",), group="g")),
        op(2, "mul", data=profile(("fused",), group="g")),
        op(3, "idle", profiled=False),
    ]
    b = [
        op(0, "body", kind="func.func", data=profile(("fused",), group="g")),
        op(1, "add", data=profile(("fused",), group="g")),
        op(2, "mul", data=profile(("fused",), group="g")),
        op(3, "idle", profiled=False),
    ]
    pairs = match_ops(a, b)
    assert as_tuples(pairs) == [(1, 1, "name"), (2, 2, "name"), (3, 3, "name")]
    assert fusion_changes(pairs, a, b) == ()
