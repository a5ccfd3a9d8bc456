"""Per-step statistics: a planted stall is flagged, kept out of the median ranking and still
counted in the sums; the spread, outlier and noise rules at their boundaries."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from irprof.analyses.hotspots import HotspotTable, hotspots
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.step_stats import (
    OUTLIER_FLOOR_NS,
    OUTLIER_MADS,
    load_step_samples,
    noise_verdict,
    parse_stat,
    step_outliers,
    step_spread,
    step_totals,
)
from irprof.capture.noise import NoiseSnapshot, noise_record, noise_snapshot
from irprof.errors import UsageError
from irprof.opprofile import ProfileData
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

STEPS = 5
STEP_NS = 20_000_000  # each step window is 20 ms long
STALLED_STEP = 2
STALL = 50  # the stalled step of `relu` takes 50x its usual time
# op name -> its kernel's time in an ordinary step
USUAL_NS = {"matmul": 400_000, "relu": 100_000, "add": 50_000}


def per_step_ns(name: str) -> list[int]:
    """The planted per-step times: `relu` stalls once, every other step is the usual time."""
    usual = USUAL_NS[name]
    return [
        usual * STALL if name == "relu" and step == STALLED_STEP else usual for step in range(STEPS)
    ]


def stalled_trace(*, markers: bool = True) -> Trace:
    """Five step markers; in each, one kernel event per op (two halves for `matmul`)."""
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    for step in range(STEPS):
        start = step * STEP_NS
        if markers:
            builder.add(start, STEP_NS - 1_000, track, "ProfilerStep", EventKind.STEP)
        cursor = start + 1_000
        for name in USUAL_NS:
            value = per_step_ns(name)[step]
            halves = [value // 2, value - value // 2] if name == "matmul" else [value]
            for part in halves:
                builder.add(cursor, part, track, f"{name}_kernel", EventKind.FRAMEWORK_OP)
                cursor += part + 1_000
    return builder.build()


def profiled(index: int, name: str, profiled_ns: int) -> ProfiledOp:
    """An op whose profile holds every event of its kernel (as a correlator writes it)."""
    return kernel_op(index, name, per_step_ns(name), profiled_ns, kind=f"test.{name}")


def kernel_op(
    index: int, name: str, durations: list[int], profiled_ns: int, *, kind: str
) -> ProfiledOp:
    """Op `name` of `kind` whose profile holds `durations`, the events of `<name>_kernel`."""
    data = ProfileData.from_durations(
        durations, 0, profiled_ns, kernels=[f"{name}_kernel"], source="test"
    )
    return ProfiledOp(
        index=index,
        op_name=kind,
        function="main",
        runtime_name=name,
        scope="",
        source=f"model.py:{index + 1}:1",
        chain=(),
        location=name,
        profile=data,
        trivial=False,
    )


UNATTRIBUTED_NS = 1_000_000  # profiled time no op holds
ALL_NS = sum(sum(per_step_ns(name)) for name in USUAL_NS)
PROFILED_NS = ALL_NS + UNATTRIBUTED_NS
OPS = [profiled(index, name, PROFILED_NS) for index, name in enumerate(USUAL_NS)]


def ranked(stat: str, *, markers: bool = True) -> tuple[list[str], HotspotTable]:
    samples = load_step_samples(stalled_trace(markers=markers), OPS, STEPS)
    table = hotspots(OPS, profiled_ns=PROFILED_NS, samples=samples.values, stat=parse_stat(stat))
    return [row.key for row in table.rows], table


def test_samples_are_the_planted_per_step_times() -> None:
    samples = load_step_samples(stalled_trace(), OPS, STEPS)
    assert samples.steps == STEPS and samples.method == "step-markers"
    for index, name in enumerate(USUAL_NS):
        assert list(samples.values[index]) == per_step_ns(name)
    assert step_totals(samples) == [
        sum(per_step_ns(name)[step] for name in USUAL_NS) for step in range(STEPS)
    ]


def test_a_stall_is_flagged_with_its_step_and_kept_out_of_the_median_ranking() -> None:
    keys, table = ranked("median")
    # By the median step, relu holds its usual 100 us per step: below matmul's 400 us.
    expected = sorted(USUAL_NS, key=lambda name: -statistics.median(per_step_ns(name)))
    assert keys == expected == ["matmul", "relu", "add"]
    relu = next(row for row in table.rows if row.key == "relu")
    assert relu.stat_ns == USUAL_NS["relu"] * STEPS
    assert (relu.step_min_ns, relu.step_median_ns, relu.step_max_ns) == (
        USUAL_NS["relu"],
        USUAL_NS["relu"],
        USUAL_NS["relu"] * STALL,
    )
    assert relu.unstable
    assert not any(row.unstable for row in table.rows if row.key != "relu")
    # The outlier names the op, the step and the size.
    [outlier] = table.outliers
    assert (outlier.key, outlier.step) == ("relu", STALLED_STEP)
    assert outlier.value_ns == USUAL_NS["relu"] * STALL
    assert outlier.ratio == pytest.approx(STALL)
    assert table.stat == "median" and "median" in table.table_caption()


def test_sum_ranks_the_stalled_op_first_and_every_stat_conserves_the_sum() -> None:
    keys, by_sum = ranked("sum")
    assert keys[0] == "relu"
    _, by_median = ranked("median")
    for table in (by_sum, by_median):
        # Coverage conserves the full sum, stall included, whatever the ranking.
        assert table.total_ns == ALL_NS
        assert table.profiled_ns == PROFILED_NS
        relu = next(row for row in table.rows if row.key == "relu")
        assert relu.total_ns == sum(per_step_ns("relu"))
    # Median shares are of the profiled time as the median sees it: rows plus unattributed.
    whole = sum(statistics.median(per_step_ns(name)) * STEPS for name in USUAL_NS)
    whole += UNATTRIBUTED_NS
    for row in by_median.rows:
        assert row.share == pytest.approx(statistics.median(per_step_ns(row.key)) * STEPS / whole)
    # Sum shares are today's: the profile's fraction of all profiled time.
    for row in by_sum.rows:
        assert row.share == pytest.approx(sum(per_step_ns(row.key)) / PROFILED_NS)


@pytest.mark.parametrize(
    ("stat", "value"),
    [
        ("min", lambda values: min(values) * len(values)),
        ("mean", lambda values: sum(values)),
    ],
)
def test_min_and_mean_rank_by_their_statistic(stat: str, value: Callable[[list[int]], int]) -> None:
    _, table = ranked(stat)
    for row in table.rows:
        assert row.stat_ns == value(per_step_ns(row.key))


def test_without_step_markers_or_multiples_the_ranking_falls_back_to_the_sum() -> None:
    # Without markers, `matmul` has 10 events in 5 steps (occurrence samples), the others
    # have 5: still per-step. A trace with no kernel at all gives no samples.
    trace = TraceBuilder().build()
    samples = load_step_samples(trace, OPS, STEPS)
    assert samples.steps == 0
    table = hotspots(OPS, profiled_ns=PROFILED_NS, samples=samples.values, stat="median")
    assert table.stat == "sum"
    assert "no per-step samples" in table.stat_note
    assert "sum" in table.table_caption()
    assert table.rows[0].key == "relu"
    assert not table.outliers and all(row.steps == 0 for row in table.rows)


def test_arrow_export_has_the_spread_columns() -> None:
    _, table = ranked("median")
    arrow = table.to_arrow()
    for column in ("stat_ns", "step_min_ns", "step_median_ns", "step_max_ns", "unstable"):
        assert column in arrow.column_names
    assert arrow.column("step_ns").to_pylist()[1] == per_step_ns("relu")


def test_two_samples_equal_to_the_median_and_a_sample_exactly_at_the_threshold() -> None:
    usual = 1_000_000
    # Two of three samples equal the median: MAD is 0, so the floor alone decides.
    at_threshold = [usual, usual, usual + OUTLIER_FLOOR_NS]
    assert step_outliers(at_threshold, key="op", op_index=0) == []
    above = [usual, usual, usual + OUTLIER_FLOOR_NS + 1]
    [flagged] = step_outliers(above, key="op", op_index=0)
    assert (flagged.step, flagged.value_ns, flagged.median_ns) == (2, above[2], usual)


def test_the_mad_term_decides_when_the_steps_vary() -> None:
    base = [1_000_000, 1_100_000, 1_200_000, 1_300_000]
    # The median and MAD are the same for any fifth value above the others...
    placeholder = [*base, 10**12]
    median = statistics.median(placeholder)
    deviations = [abs(value - median) for value in placeholder]
    mad = statistics.median(deviations)
    threshold = median + max(OUTLIER_MADS * mad, OUTLIER_FLOOR_NS)
    assert OUTLIER_MADS * mad > OUTLIER_FLOOR_NS  # the case this test is about
    # ...so both sides of the threshold can be checked.
    exact = int(threshold)
    assert exact == threshold
    assert step_outliers([*base, exact], key="op", op_index=0) == []
    assert len(step_outliers([*base, exact + 1], key="op", op_index=0)) == 1


def test_microsecond_jitter_is_not_an_outlier() -> None:
    # 50x the median, but only 49 us above it: under the absolute floor.
    assert step_outliers([1_000, 1_000, 1_000, 50_000], key="op", op_index=0) == []


def test_two_steps_cannot_say_which_is_typical() -> None:
    assert step_outliers([1_000, 10_000_000], key="op", op_index=0) == []


def test_unstable_at_the_ratio_boundary() -> None:
    median = 1_000_000
    assert not step_spread([median, median, 3 * median]).unstable  # exactly 3x: not above
    assert step_spread([median, median, 3 * median + 1]).unstable
    assert not step_spread([1_000, 1_000, 90_000]).unstable  # 90x, but 89 us: jitter


def test_noise_verdict_warns_on_load_and_variation() -> None:
    quiet = noise_verdict([1_000, 1_000, 1_000], {"load_1m_before": 0.5, "cpus": 2})
    assert quiet.warnings == () and quiet.cv == 0.0 and quiet.steps_needed is None
    busy = noise_verdict([1_000, 1_000, 1_000], {"load_1m_after": 4.5, "cpus": 2})
    assert len(busy.warnings) == 1 and "4.50" in busy.warnings[0]
    # One stalled step is an outlier, not noise: the robust CV ignores it.
    stalled = noise_verdict([1_000, 1_000, 1_000, 1_000, 4_000], None)
    assert stalled.cv == 0.0 and stalled.warnings == ()
    totals = [1_000, 1_400, 700, 1_300, 900]  # steps that all vary
    deviations = sorted(abs(total - 1_000) for total in totals)  # median step: 1_000
    cv = 1.4826 * deviations[2] / 1_000
    noisy = noise_verdict(totals, None)  # a bundle written before `noise` existed
    assert noisy.cv == pytest.approx(cv)
    needed = math.ceil(math.pi / 2 * (1.96 * cv / 0.10) ** 2)
    assert noisy.steps_needed == needed
    assert any(f"about {needed} steps" in text for text in noisy.warnings)


def test_noise_record_reads_load_cpus_and_steal(tmp_path: Path) -> None:
    proc_stat = tmp_path / "stat"
    proc_stat.write_text("cpu  100 0 100 700 0 0 0 100 0 0\ncpu0 1 2 3\n")
    before = noise_snapshot(proc_stat)
    assert (before.steal_ticks, before.total_ticks) == (100, 1000)
    after = NoiseSnapshot(3.0, 150, 1_200)
    record = noise_record(before, after)
    assert record["steal_share"] == pytest.approx(50 / 200)
    assert record["load_1m_after"] == 3.0 and record["cpus"] and record["cpus"] >= 1
    assert noise_snapshot(tmp_path / "missing").steal_ticks is None


def test_unknown_stat_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--stat 'p99'"):
        parse_stat("p99")


LOOP_STEPS = 5
ITERATIONS = 4
BODY_NS = 100_000  # an iteration of the loop body
PREEMPTED_NS = 2_000_000  # one iteration per step, a different one each step, ran this long
CONV_NS = 600_000  # the conv's one event per step


def preempted_loop_trace(*, ragged: bool = False) -> Trace:
    """Every step: `conv` once, then the loop body 4 times, iteration `step % 4` preempted
    (`ragged`: the last step runs the body 3 times)."""
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    for step in range(LOOP_STEPS):
        start = step * STEP_NS
        builder.add(start, STEP_NS - 1_000, track, "ProfilerStep", EventKind.STEP)
        builder.add(start + 1_000, CONV_NS, track, "conv_kernel", EventKind.FRAMEWORK_OP)
        cursor = start + 2_000 + CONV_NS
        iterations = ITERATIONS - 1 if ragged and step == LOOP_STEPS - 1 else ITERATIONS
        for iteration in range(iterations):
            duration = PREEMPTED_NS if iteration == step % ITERATIONS else BODY_NS
            builder.add(cursor, duration, track, "body_kernel", EventKind.FRAMEWORK_OP)
            cursor += duration + 1_000
    return builder.build()


def loop_ops(trace: Trace) -> list[ProfiledOp]:
    """`conv` and `loop` (kind `test.op` both), each holding all of its kernel's events."""
    ops = []
    for index, name in enumerate(("conv", "body")):
        rows = [r for r in range(len(trace.ts_ns)) if trace.name_of(r) == f"{name}_kernel"]
        durations = [int(trace.dur_ns[r]) for r in rows]
        ops.append(kernel_op(index, name, durations, sum(durations), kind="test.op"))
    return ops


def test_a_loop_preempted_once_every_step_is_ranked_by_its_typical_iterations() -> None:
    """Each step's loop time holds one preempted iteration, so its median step (3 x 100 us +
    2 ms) outranks the conv's 600 us; matched iteration by iteration the loop takes 4 x 100 us
    a step and ranks below the conv. The sums still hold every preempted iteration."""
    trace = preempted_loop_trace()
    ops = loop_ops(trace)
    samples = load_step_samples(trace, ops, LOOP_STEPS)
    loop_step = (ITERATIONS - 1) * BODY_NS + PREEMPTED_NS
    assert samples.values[1] == (loop_step,) * LOOP_STEPS
    table = hotspots(ops, samples=samples.values, typical=samples.typical, stat="median")
    assert [row.key for row in table.rows] == ["conv", "body"]
    by_key = {row.key: row for row in table.rows}
    assert by_key["body"].stat_ns == ITERATIONS * BODY_NS * LOOP_STEPS
    assert by_key["conv"].stat_ns == CONV_NS * LOOP_STEPS
    assert by_key["body"].total_ns == loop_step * LOOP_STEPS
    # Without the typical steps, the median of the per-step sums ranks the loop first.
    plain = hotspots(ops, samples=samples.values, stat="median")
    assert [row.key for row in plain.rows] == ["body", "conv"]
    # A row of both ops (by kind) adds their typical steps.
    [kind] = hotspots(ops, by="type", samples=samples.values, typical=samples.typical).rows
    assert kind.stat_ns == (ITERATIONS * BODY_NS + CONV_NS) * LOOP_STEPS


def test_a_loop_whose_steps_ran_different_iteration_counts_keeps_the_median_step() -> None:
    """Iterations cannot be matched when a step ran fewer: the loop's median is its median
    per-step sum, and a row holding it and the conv falls back to the summed steps."""
    trace = preempted_loop_trace(ragged=True)
    ops = loop_ops(trace)
    samples = load_step_samples(trace, ops, LOOP_STEPS)
    assert 1 not in samples.typical and 0 in samples.typical
    table = hotspots(ops, samples=samples.values, typical=samples.typical, stat="median")
    body = next(row for row in table.rows if row.key == "body")
    assert body.stat_ns == statistics.median(samples.values[1]) * LOOP_STEPS
    [kind] = hotspots(ops, by="type", samples=samples.values, typical=samples.typical).rows
    summed = [a + b for a, b in zip(samples.values[0], samples.values[1], strict=True)]
    assert kind.stat_ns == round(statistics.median(summed) * LOOP_STEPS)
