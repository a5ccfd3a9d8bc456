"""Hotspot tables on ops built in code: the caption, estimated shares of groups, per-step
fields, the statistic each row is ranked by, and rows of one name told apart by their arguments.

Written from the mutants of `analyses/hotspots.py`. Every figure is worked out in the test from
the op times and per-step samples it gives.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from irprof.analyses.hotspots import hotspots
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.errors import UsageError
from irprof.opprofile import ProfileData


def op(
    index: int,
    kind: str,
    name: str,
    ns: int,
    *,
    count: int = 1,
    group: str = "",
    group_size: int = 0,
    scope: str = "",
) -> ProfiledOp:
    durations = [ns // count] * (count - 1) + [ns - (ns // count) * (count - 1)]
    data = ProfileData.from_durations(durations, 0, 10_000, kernels=[f"{name}:k"], source="t")
    if group:
        data = ProfileData(
            **{**data.__dict__, "group": group, "group_total_ns": ns, "group_size": group_size}
        )
    return ProfiledOp(
        index=index,
        op_name=kind,
        function="main",
        runtime_name=name,
        scope=scope,
        source=f"model.py:{index + 1}:1",
        chain=(),
        location=name,
        profile=data,
        trivial=False,
    )


OPS = (op(0, "tf.Conv2D", "net/conv", 4_000), op(1, "tf.Relu", "net/relu", 1_000))


def test_the_caption_names_the_level_the_statistic_and_its_note() -> None:
    with_level = hotspots(OPS, level="tf", stat="sum", profiled_ns=6_000)
    assert with_level.table_caption() == (
        "level tf, by op, ranked by sum over steps: 5,000 ns of 6,000 ns profiled"
    )
    without_samples = hotspots(OPS)  # the median asked for, no samples: the sum, with a note
    assert without_samples.table_caption() == (
        "by op, ranked by sum over steps (no per-step samples (no step markers): the sum "
        "instead): 5,000 ns of 5,000 ns profiled"
    )


def test_samples_rank_rows_and_fill_their_step_fields() -> None:
    samples = {0: [1_000_000, 1_000_000, 2_000_000], 1: [100_000, 800_000, 100_000]}
    table = hotspots(OPS, samples=samples, stat="median")
    conv, relu = table.rows
    assert (conv.key, relu.key) == ("net/conv", "net/relu")
    assert conv.stat_ns == statistics.median(samples[0]) * 3 == 3_000_000
    assert relu.stat_ns == statistics.median(samples[1]) * 3 == 300_000
    assert conv.step_ns == tuple(samples[0]) and conv.steps == 3
    assert (conv.step_min_ns, conv.step_median_ns, conv.step_max_ns) == (
        1_000_000,
        1_000_000,
        2_000_000,
    )
    assert (relu.step_min_ns, relu.step_median_ns, relu.step_max_ns) == (
        100_000,
        100_000,
        800_000,
    )
    # 800 us > 3 x 100 us and 700 us above it; 2 ms is not above 3 x 1 ms.
    assert relu.unstable and not conv.unstable
    # Shares are of the rows' statistic: 3 ms and 0.3 ms of 3.3 ms.
    assert conv.share == 3_000_000 / 3_300_000 and relu.share == 300_000 / 3_300_000


def test_members_of_one_event_group_are_one_row_ranked_by_the_median() -> None:
    """Two of a three-op group's members are rows (a name holding `#`), a two-op group has
    one: both rows name their group, hold estimated time only, and use the median."""
    ops = (
        op(0, "tf.Sub", "alone/sub", 2_000, group="h", group_size=2),
        op(1, "tf.Add", "fused#1/add", 3_000, count=2, group="g", group_size=3),
        op(2, "tf.Mul", "fused#1/mul", 1_000, count=2, group="g", group_size=3),
    )
    samples = {
        0: [100_000, 500_000, 1_200_000],
        1: [1_000_000, 1_000_000, 4_000_000],
        2: [200_000, 300_000, 100_000],
    }
    table = hotspots(ops, samples=samples, stat="median")
    by_key = {row.key: row for row in table.rows}
    assert sorted(by_key) == ["alone/sub", "fused#1/add +1 ops"]
    fused, alone = by_key["fused#1/add +1 ops"], by_key["alone/sub"]
    assert (fused.group, alone.group) == ("g", "h")
    assert (fused.op_name, alone.op_name) == ("tf.Add, tf.Mul", "tf.Sub")
    assert (fused.count, fused.ops, fused.total_ns) == (2, 2, 4_000)  # one event ran both
    assert (fused.estimated_ns, alone.estimated_ns) == (4_000, 2_000)  # groups not whole
    per_step = [a + b for a, b in zip(samples[1], samples[2], strict=True)]
    assert fused.step_ns == tuple(per_step)
    assert fused.stat_ns == statistics.median(per_step) * 3 == 3_900_000  # not the mean (6.6 ms)
    assert alone.stat_ns == statistics.median(samples[0]) * 3 == 1_500_000  # not 1.8 ms


def test_a_group_whose_members_are_all_rows_holds_measured_time() -> None:
    ops = (
        op(0, "tf.Add", "f/add", 300, group="g", group_size=2),
        op(1, "tf.Mul", "f/mul", 100, group="g", group_size=2),
    )
    (row,) = hotspots(ops, stat="sum").rows
    assert (row.key, row.estimated_ns, row.total_ns) == ("f/add +1 ops", 0, 400)
    # Expanded, each row holds one member: its time is an estimated share again.
    expanded = hotspots(ops, stat="sum", expand_groups=True).rows
    assert [(r.key, r.estimated_ns, r.group) for r in expanded] == [
        ("f/add", 300, ""),
        ("f/mul", 100, ""),
    ]


def test_limits_keep_the_hottest_rows_and_totals_keep_every_row() -> None:
    assert [row.key for row in hotspots(OPS, limit=1, stat="sum").rows] == ["net/conv"]
    none = hotspots(OPS, limit=-1, stat="sum")
    assert none.rows == () and none.total_ns == 5_000 and none.profiled_ns == 5_000
    assert len(hotspots(OPS, limit=2, stat="sum").rows) == 2


def test_shares_count_the_time_no_op_holds_and_means_are_per_event() -> None:
    ops = (op(0, "tf.Conv2D", "net/conv", 4_001, count=2), op(1, "tf.Relu", "net/relu", 1_000))
    samples = {0: [1_000, 1_000, 1_000], 1: [500, 500, 500]}
    # 1_000 ns profiled outside the ops: the statistic's whole is 3_000 + 1_500 + 999.
    table = hotspots(ops, samples=samples, stat="mean", profiled_ns=6_000)
    conv, relu = table.rows
    assert conv.share == 3_000 / (3_000 + 1_500 + 999)
    assert relu.share == 1_500 / (3_000 + 1_500 + 999)
    assert (conv.mean_ns, conv.count) == (4_001 // 2, 2)
    # Fewer profiled ns than the ops hold adds nothing to the whole.
    short = hotspots(ops, samples=samples, stat="mean", profiled_ns=10)
    assert short.rows[0].share == 3_000 / 4_500


def test_a_row_lists_its_partners_and_an_op_of_no_events_has_no_mean() -> None:
    partnered = ProfileData.from_durations(
        [600], 0, 1_000, kernels=["k"], fused_with=["net/b", "net/c"], source="t"
    )
    eventless = ProfileData(0, 0, 0, 0, 0, 0, 0.0)  # a profile read from IR may count none
    ops = (
        replace(OPS[0], profile=partnered),
        replace(OPS[1], index=1, runtime_name="net/idle", profile=eventless),
    )
    rows = {row.key: row for row in hotspots(ops, stat="sum").rows}
    assert rows["net/conv"].fused_with == ("net/b", "net/c")
    assert (rows["net/conv"].mean_ns, rows["net/conv"].count) == (600, 1)
    assert (rows["net/idle"].mean_ns, rows["net/idle"].count) == (0, 0)


def test_a_scope_row_joins_its_kinds_and_adds_its_unsampled_ops_time() -> None:
    ops = (
        op(0, "tf.Conv2D", "net/conv", 4_000, scope="net"),
        op(1, "tf.Relu", "net/relu", 1_000, scope="net"),
    )
    samples = {0: [1_000, 2_000, 9_000]}  # the Relu has no samples: its total is added
    (row,) = hotspots(ops, by="scope", samples=samples, stat="median").rows
    assert (row.key, row.op_name, row.ops) == ("net", "tf.Conv2D, tf.Relu", 2)
    assert row.stat_ns == statistics.median(samples[0]) * 3 + 1_000 == 7_000
    (mean_row,) = hotspots(ops, by="scope", samples=samples, stat="mean").rows
    assert mean_row.stat_ns == sum(samples[0]) + 1_000 == 13_000
    # With the Conv's typical step (event by event) the median is that times the steps.
    (typical_row,) = hotspots(
        ops, by="scope", samples=samples, stat="median", typical={0: 1_500.0}
    ).rows
    assert typical_row.stat_ns == round(1_500.0 * 3) + 1_000 == 5_500


def test_rows_of_no_time_have_no_share() -> None:
    ops = (op(0, "tf.Relu", "net/relu", 0),)
    (row,) = hotspots(ops, samples={0: [0, 0, 0]}, stat="median", profiled_ns=0).rows
    assert (row.stat_ns, row.share) == (0, 0.0)


def test_an_unknown_statistic_is_refused_with_the_known_ones() -> None:
    with pytest.raises(UsageError) as error:
        hotspots(OPS, stat="p99")  # type: ignore[arg-type]
    assert str(error.value) == "cannot rank hotspots by 'p99'; choose one of median, sum, min, mean"


def test_outliers_are_the_stalled_steps_largest_excess_first_with_their_ops() -> None:
    ops = (op(3, "tf.Add", "a/add", 1_000), op(7, "tf.Mul", "z/mul", 1_000))
    usual = [1_000_000] * 4
    samples = {3: [*usual, 20_000_000], 7: [50_000_000, *usual]}
    outliers = hotspots(ops, samples=samples, stat="median").outliers
    assert [(o.key, o.op_index, o.step, o.excess_ns) for o in outliers] == [
        ("z/mul", 7, 0, 49_000_000),
        ("a/add", 3, 4, 19_000_000),
    ]


def test_every_unsampled_op_of_a_row_adds_its_total_wherever_it_comes() -> None:
    ops = (
        op(0, "tf.Relu", "net/relu", 1_000, scope="net"),
        op(1, "tf.Tanh", "net/tanh", 2_000, scope="net"),
        op(2, "tf.Conv2D", "net/conv", 4_000, scope="net"),
    )
    samples = {2: [1_000, 2_000, 9_000]}  # only the Conv, last in walk order, has samples
    (row,) = hotspots(ops, by="scope", samples=samples, stat="median").rows
    assert row.stat_ns == statistics.median(samples[2]) * 3 + 1_000 + 2_000 == 9_000
    assert row.step_ns == tuple(samples[2])


def test_rows_of_one_name_are_told_apart_by_the_arguments_only_they_read() -> None:
    # `X` and the two pytree paths are read by one dot_general each; `x` by both; the adds
    # read only what the other add reads, and the sub's name is its own.
    query = "state['attn']['query']['kernel'].value"
    ops = [
        replace(op(0, "stablehlo.subtract", "jit(f)/sub", 900), inputs=("X",)),
        replace(op(1, "stablehlo.dot_general", "jit(f)/dot", 800), inputs=(query, "x", "x", "X")),
        replace(op(2, "stablehlo.dot_general", "jit(f)/dot", 700), inputs=("['w']", "x")),
        replace(op(3, "stablehlo.add", "jit(f)/add", 600), inputs=("a", "b")),
        replace(op(4, "stablehlo.add", "jit(f)/add", 500), inputs=("b", "a")),
    ]
    keys = {row.op_index: row.key for row in hotspots(ops).rows}
    assert keys == {
        0: "jit(f)/sub",
        1: "jit(f)/dot [state.attn.query.kernel.value, X]",
        2: "jit(f)/dot [w]",
        3: "jit(f)/add",
        4: "jit(f)/add",
    }


def test_a_rows_kinds_are_ordered_by_their_summed_time() -> None:
    # Two muls of 300 ns (600 ns) outweigh one add of 500 ns, though "add" sorts first.
    ops = [
        op(0, "mul", "blk/a", 300, scope="blk"),
        op(1, "add", "blk/b", 500, scope="blk"),
        op(2, "mul", "blk/c", 300, scope="blk"),
    ]
    (row,) = hotspots(ops, by="scope").rows
    assert (row.key, row.op_name, row.total_ns) == ("blk", "mul, add", 1_100)


def test_an_op_alone_in_its_event_group_is_a_plain_row() -> None:
    # A group of one op is measured, not estimated: no group row, no estimated time.
    (row,) = hotspots([op(0, "tf.MatMul", "net/mm", 700, group="net/mm", group_size=1)]).rows
    assert (row.key, row.group, row.estimated_ns, row.total_ns) == ("net/mm", "", 0, 700)


def test_rows_of_one_name_and_the_same_arguments_are_told_apart_by_their_own_events() -> None:
    """A conv's gradient has two convolutions of one name (for the input and for the kernel):
    each row shows the trace events only it ran; events both ran are not shown, and a row
    with none of its own keeps the name."""
    name = "jit(step)/transpose(jvp(Net))/Conv_1/conv_general_dilated"

    def with_kernels(index: int, ns: int, kernels: tuple[str, ...]) -> ProfiledOp:
        made = op(index, "stablehlo.convolution", name, ns)
        assert made.profile is not None
        return replace(made, profile=replace(made.profile, kernels=kernels))

    ops = [
        with_kernels(0, 900, ("transpose_copy_fusion.2", "ynn_fusion.1")),
        with_kernels(1, 800, ("ynn_fusion.18",)),
        with_kernels(2, 700, ("ynn_fusion.18", "a", "b", "c")),
        with_kernels(3, 600, ("ynn_fusion.1",)),
    ]
    keys = {row.op_index: row.key for row in hotspots(ops).rows}
    assert keys == {
        0: f"{name} [transpose_copy_fusion.2]",
        1: name,
        2: f"{name} [a +2]",
        3: name,
    }


def test_a_row_with_two_events_of_its_own_shows_the_first_and_plus_one() -> None:
    """`+N` counts the row's own events past the first shown: two of its own show `+1`, one
    shows none (its other event is shared with the row beside it)."""
    name = "jit(step)/transpose(jvp(Net))/Conv_0/conv_general_dilated"

    def with_kernels(index: int, ns: int, kernels: tuple[str, ...]) -> ProfiledOp:
        made = op(index, "stablehlo.convolution", name, ns)
        assert made.profile is not None
        return replace(made, profile=replace(made.profile, kernels=kernels))

    ops = [
        with_kernels(0, 900, ("shared.1", "fusion.7", "fusion.8")),
        with_kernels(1, 800, ("shared.1", "convolution.3")),
    ]
    keys = {row.op_index: row.key for row in hotspots(ops).rows}
    assert keys == {0: f"{name} [fusion.7 +1]", 1: f"{name} [convolution.3]"}


def test_event_groups_that_ran_the_same_kernels_show_the_kernel_they_are_named_after() -> None:
    """JAX per-example gradients: two reduce fusions at one line (the mean of each parameter's
    clipped gradients), each holding a broadcast the other's kernel also ran, so no event is
    a row's own; each group row shows the kernel its group is named after."""
    name = "jit(step)/reduce_sum"

    def member(index: int, kind: str, ns: int, group: str) -> ProfiledOp:
        made = op(index, kind, name, ns, group=f"xla:{group}", group_size=2)
        assert made.profile is not None
        return replace(made, profile=replace(made.profile, kernels=("ynn_fusion", "ynn_fusion.1")))

    ops = [
        member(0, "stablehlo.reduce", 600, "ynn_fusion.1"),
        member(1, "stablehlo.broadcast_in_dim", 100, "ynn_fusion.1"),
        member(2, "stablehlo.reduce", 300, "ynn_fusion"),
        member(3, "stablehlo.broadcast_in_dim", 50, "ynn_fusion"),
    ]
    keys = sorted(row.key for row in hotspots(ops).rows)
    assert keys == [f"{name} +1 ops [ynn_fusion.1]", f"{name} +1 ops [ynn_fusion]"]
