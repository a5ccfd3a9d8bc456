"""Per-step statistics on their edges: the noise verdict's every field and threshold, the
robust CV's minimum sizes, estimates of empty rows, and the spread's step count.

Written from the mutants of `analyses/step_stats.py` the first tests let through; the expected
figures are worked out in each case from the rules in docs/views.md, "Per-step statistics".
"""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.step_stats import (
    StepSamples,
    bundle_step_samples,
    load_step_samples,
    noise_verdict,
    parse_stat,
    parse_time_basis,
    robust_cv,
    stat_estimate,
    step_outliers,
    step_spread,
    steps_needed,
)
from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, SchedRecord, ThreadSched
from irprof.errors import UsageError
from irprof.opprofile import ProfileData
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind
from tests.analyses.test_top_view_mutants import MATMUL, MATMUL_EVENTS_US, bundle_with_steps


def test_noise_verdict_reports_every_figure_it_read() -> None:
    noise = {"load_1m_before": 3.5, "load_1m_after": 1.0, "cpus": 4, "steal_share": 0.25}
    verdict = noise_verdict([100, 100, 100], noise)
    assert verdict.steps == 3
    assert verdict.cv == 0.0
    assert (verdict.load_1m, verdict.cpus, verdict.steal_share) == (3.5, 4, 0.25)
    assert verdict.warnings == ()
    assert verdict.steps_needed is None


def test_the_load_before_counts_and_a_load_equal_to_the_cpus_is_no_warning() -> None:
    before = noise_verdict([100, 100], {"load_1m_before": 9.0, "load_1m_after": 1.0, "cpus": 2})
    assert before.load_1m == 9.0
    assert before.warnings == (
        "load average 9.00 exceeded the 2 CPUs during capture: "
        "other processes competed for the cores",
    )
    equal = noise_verdict([100, 100], {"load_1m_before": 2.0, "cpus": 2})
    assert equal.load_1m == 2.0 and equal.warnings == ()


def test_a_cv_exactly_at_twenty_percent_is_not_noisy_and_just_above_is() -> None:
    # Median 22239, MAD 3000: 1.4826 * 3000 / 22239 is 0.2 exactly in float64.
    at = [22239 - 3000, 22239, 22239 + 3000]
    assert robust_cv(at) == 0.2
    assert noise_verdict(at, None).warnings == ()
    # MAD 3001: just above; the warning names the steps needed for a stable median.
    above = [22239 - 3001, 22239, 22239 + 3001]
    verdict = noise_verdict(above, None)
    cv = 1.4826 * 3001 / 22239
    needed = math.ceil(math.pi / 2 * (1.96 * cv / 0.1) ** 2)
    assert verdict.steps_needed == needed
    assert verdict.warnings == (
        f"step times vary by {cv:.0%} (robust coefficient of variation > 20%): about "
        f"{needed} steps are needed for a stable median (captured 3; `--steps {needed}`)",
    )


def test_robust_cv_needs_two_values_and_a_positive_median() -> None:
    assert robust_cv([]) is None
    assert robust_cv([5]) is None
    assert robust_cv([100, 120]) == pytest.approx(1.4826 * 10 / 110)
    assert robust_cv([0, 0, 0]) is None
    assert robust_cv([1, 1, 1]) == 0.0
    assert robust_cv([0, 1, 1]) == 0.0  # median 1: a positive median is enough


def test_steps_needed_is_at_least_three() -> None:
    assert steps_needed(0.0) == 3
    assert steps_needed(0.01) == 3
    # cv 0.2: pi/2 * (1.96 * 2)^2 = 24.13...: 25 steps.
    assert steps_needed(0.2) == math.ceil(math.pi / 2 * (1.96 * 0.2 / 0.1) ** 2) == 25


def test_estimates_of_a_row_without_samples_are_its_total() -> None:
    for stat in ("median", "min", "mean", "sum"):
        assert stat_estimate([], stat, 1234) == 1234
    assert stat_estimate([10, 30], "median", 999) == 40
    assert stat_estimate([10, 30], "sum", 999) == 999


def test_spread_counts_the_steps_and_outliers_name_their_op() -> None:
    spread = step_spread([5, 1, 9, 3])
    assert (spread.steps, spread.min_ns, spread.median_ns, spread.max_ns) == (4, 1, 4, 9)
    outliers = step_outliers([0, 0, 0, 10_000_000], key="row", op_index=7)
    assert [(o.key, o.op_index, o.step, o.value_ns, o.median_ns) for o in outliers] == [
        ("row", 7, 3, 10_000_000, 0)
    ]


def test_unknown_stat_lists_the_choices() -> None:
    with pytest.raises(UsageError) as caught:
        parse_stat("avg", option="--rank-by")
    assert str(caught.value) == "--rank-by 'avg': expected one of median|sum|min|mean"


def test_two_steps_are_enough_for_per_step_samples() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    for start in (0, 100):
        builder.add(start, 100, track, "step", EventKind.STEP)
    builder.add(10, 7, track, "k", EventKind.FRAMEWORK_OP)
    builder.add(110, 9, track, "k", EventKind.FRAMEWORK_OP)
    data = ProfileData(
        count=2, total_ns=16, mean_ns=8, min_ns=7, max_ns=9, first_ts_ns=10, fraction=1.0,
        kernels=("k",),
    )  # fmt: skip
    op = ProfiledOp(
        index=0, op_name="tf.MatMul", function="main", runtime_name="k", scope="", source="",
        chain=(), location="", profile=data, trivial=False,
    )  # fmt: skip
    assert load_step_samples(builder.build(), [op], 2) == StepSamples(
        {0: (7, 9)}, 2, "step-markers", {0: (7 + 9) / 2}
    )


def test_the_time_basis_is_one_of_two_names() -> None:
    assert parse_time_basis("oncpu") == "oncpu"
    assert parse_time_basis("wall") == "wall"
    with pytest.raises(UsageError) as caught:
        parse_time_basis("cpu")
    assert str(caught.value) == "--time 'cpu': expected one of oncpu|wall"


def test_a_bundles_samples_take_out_the_waits_for_a_cpu(tmp_path: Path) -> None:
    """The MatMul runs two events per step (`test_top_view_mutants`); its thread waits for a CPU
    from 5 to 9 us, inside step 0's second event (3 to 13 us). On-CPU samples (the default)
    take those 4 us out of step 0; wall-time samples keep them. Both are scaled to the op's
    attributed 2 ms by its 24 us traced."""
    us = 1_000
    bundle = bundle_with_steps(tmp_path / "run")
    thread = ThreadSched(2, "python", [0, 5 * us, 9 * us, 10_000 * us], [5 * us, 9 * us])
    record = SchedRecord(1, "CLOCK_REALTIME ns", 0, 0, 0, [thread])
    (bundle.root / SCHED_FILE).write_bytes(msgspec.json.encode(record))
    bundle = RunBundle(bundle.root)
    ops = load_annotated_level(bundle).profiled.ops
    index = next(op.index for op in ops if op.runtime_name == MATMUL)
    traced_us = sum(map(sum, MATMUL_EVENTS_US))
    wall_us = [sum(durations) for durations in MATMUL_EVENTS_US]
    oncpu_us = [wall_us[0] - 4, *wall_us[1:]]

    def scaled(values_us: list[int]) -> tuple[int, ...]:
        return tuple(round(value * 2_000_000 / traced_us) for value in values_us)

    oncpu = bundle_step_samples(bundle, ops)
    assert (oncpu.steps, oncpu.method) == (3, "step-markers")
    assert oncpu.values[index] == scaled(oncpu_us) == (583_333, 916_667, 166_667)
    assert oncpu.preemption is not None
    # The 3 step markers and 6 MatMul events all ran on the recorded thread.
    assert oncpu.oncpu_note.endswith("9 of 9 events on threads the scheduler record matched")
    wall = bundle_step_samples(bundle, ops, "wall")
    assert wall.values[index] == scaled(wall_us)
    assert wall.preemption is None and wall.oncpu_note == ""
