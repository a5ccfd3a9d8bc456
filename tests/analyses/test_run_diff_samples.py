"""Per-step samples of op time from a trace, and the bootstrap interval of a difference."""

from __future__ import annotations

from dataclasses import replace

import pytest

from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.run_diff_samples import (
    Samples,
    bootstrap_delta,
    combine,
    run_samples,
)
from irprof.opprofile import ProfileData
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace
from irprof.trace.steps import step_windows


def profiled(index: int, kernels: tuple[str, ...], total_ns: int) -> ProfiledOp:
    """An op with a profile naming `kernels` (built in code, as a correlator would write it)."""
    data = ProfileData(
        count=1,
        total_ns=total_ns,
        mean_ns=total_ns,
        min_ns=total_ns,
        max_ns=total_ns,
        first_ts_ns=0,
        fraction=0.0,
        kernels=kernels,
    )
    return ProfiledOp(
        index=index,
        op_name="tf.Conv2D",
        function="main",
        runtime_name=f"op{index}",
        scope="",
        source="model.py:1:1",
        chain=(),
        location="",
        profile=data,
        trivial=False,
    )


def trace_of(events: list[tuple[str, int, int, EventKind]]) -> Trace:
    """(name, start, duration, kind) on one track."""
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    for name, start, duration, kind in events:
        builder.add(start, duration, track, name, kind)
    return builder.build()


KERNEL = EventKind.FRAMEWORK_OP


def test_step_markers_split_each_ops_share_of_its_events_by_step() -> None:
    trace = trace_of(
        [
            ("warmup", 0, 50, KERNEL),  # before the first step: in no sample
            ("step", 100, 100, EventKind.STEP),
            ("fused", 110, 40, KERNEL),
            ("step", 200, 100, EventKind.STEP),
            ("fused", 210, 60, KERNEL),
            ("fused", 250, 20, KERNEL),
            ("marker", 220, 0, EventKind.INSTANT),
        ]
    )
    # Two ops share the fused kernel 1:3 (as the correlator split its 120 ns).
    ops = [profiled(0, ("fused",), 30), profiled(1, ("fused",), 90)]
    samples, markers = run_samples(trace, ops, steps=7)
    assert markers == 2
    assert samples[0] == Samples("step-markers", (10, 20), 2)
    assert samples[1] == Samples("step-markers", (30, 60), 2)
    assert samples[1].per_step_ns == 45.0


def test_without_markers_consecutive_occurrences_are_steps() -> None:
    trace = trace_of([("k", t, d, KERNEL) for t, d in ((0, 10), (100, 30), (200, 50))])
    samples, markers = run_samples(trace, [profiled(0, ("k",), 90)], steps=3)
    assert markers == 0
    # One run per step: the typical step is the median of the three runs.
    assert samples[0] == Samples("occurrence", (10, 30, 50), 3, typical_ns=30.0)


def test_events_that_do_not_divide_into_steps_are_resampled_one_by_one() -> None:
    trace = trace_of([("k", t, d, KERNEL) for t, d in ((0, 10), (100, 30), (200, 50))])
    samples, _ = run_samples(trace, [profiled(0, ("k",), 90)], steps=2)
    assert samples[0] == Samples("event-bootstrap", (10, 30, 50), 2)
    assert samples[0].per_step_ns == 45.0


def test_an_op_whose_kernels_are_not_in_the_trace_keeps_its_total_without_samples() -> None:
    trace = trace_of([("other", 0, 10, KERNEL)])
    samples, _ = run_samples(trace, [profiled(0, ("gone",), 70)], steps=2)
    assert samples[0] == Samples("profile-only", (70,), 2)
    assert (
        bootstrap_delta([samples[0]], [samples[0]], resamples=200, confidence=0.9, seed=1) is None
    )


def test_nested_step_markers_count_once() -> None:
    trace = trace_of([("s", 0, 100, EventKind.STEP), ("inner", 10, 20, EventKind.STEP)])
    assert step_windows(trace, nested=False) == [(0, 100)]


def test_combine_sums_per_step_samples_elementwise_and_keeps_others_apart() -> None:
    steps = [Samples("step-markers", (1, 2, 3), 3), Samples("step-markers", (10, 20, 30), 3)]
    assert combine(steps) == (Samples("step-markers", (11, 22, 33), 3),)
    mixed = [steps[0], Samples("event-bootstrap", (5, 5), 3)]
    assert combine(mixed) == tuple(mixed)


def test_bootstrap_interval_separates_clearly_different_runs() -> None:
    a = [Samples("step-markers", (100, 101, 99, 100), 4)]
    b = [Samples("step-markers", (200, 199, 201, 200), 4)]
    low, high = bootstrap_delta(a, b, resamples=2000, confidence=0.95, seed=0) or (0, 0)
    assert 98 <= low <= 100 <= high <= 102


def test_bootstrap_interval_of_overlapping_runs_contains_zero() -> None:
    a = [Samples("step-markers", (100, 140, 90, 130), 4)]
    b = [Samples("step-markers", (120, 95, 135, 105), 4)]
    low, high = bootstrap_delta(a, b, resamples=2000, confidence=0.95, seed=0) or (1, 1)
    assert low < 0 < high


def test_bootstrap_is_reproducible_for_a_seed() -> None:
    a = [Samples("event-bootstrap", (3, 9, 4, 12, 7), 2)]
    b = [Samples("event-bootstrap", (5, 9, 14, 2), 2)]
    first = bootstrap_delta(a, b, resamples=500, confidence=0.9, seed=7)
    assert first == bootstrap_delta(a, b, resamples=500, confidence=0.9, seed=7)
    assert first != bootstrap_delta(a, b, resamples=500, confidence=0.9, seed=8)


@pytest.mark.parametrize("values", [(5,), ()])
def test_a_single_sample_gives_no_interval(values: tuple[int, ...]) -> None:
    one = Samples("step-markers", values, max(len(values), 1))
    many = Samples("step-markers", (1, 2), 2)
    assert bootstrap_delta([one], [many], resamples=200, confidence=0.9, seed=0) is None


@pytest.mark.parametrize(
    ("total_ns", "expected"),
    [
        (40, (10, 30)),  # the steps' events exactly: an op that ran its kernels alone
        (20, (5, 15)),  # half of the steps' events: a fused op's share
        (41, (8, 25)),  # more than the steps' events: a share of all 50 ns (41/50 of each)
    ],
)
def test_an_untimed_step_before_the_markers_does_not_shrink_the_samples(
    total_ns: int, expected: tuple[int, int]
) -> None:
    """TF's profiler records one untimed step before its markers and its correlator leaves it
    out of the op's total: a total up to the steps' events is a share of those events (a stall
    in the untimed step cannot shrink the samples); a larger total counted the outside events
    too and is a share of all of them. Expected: total x step events / base, rounded."""
    trace = trace_of(
        [
            ("k", 10, 10, KERNEL),  # the untimed step, before any marker
            ("step", 100, 100, EventKind.STEP),
            ("k", 100, 10, KERNEL),
            ("step", 200, 100, EventKind.STEP),
            ("k", 250, 30, KERNEL),
        ]
    )
    samples, _ = run_samples(trace, [profiled(0, ("k",), total_ns)], steps=2)
    base = 40 if total_ns <= 40 else 50
    assert expected == tuple(round(total_ns * step / base) for step in (10, 30))
    assert samples[0].values == expected
    # One event per step: the typical step is their median, 20 ns, scaled alike.
    assert samples[0].typical_ns == pytest.approx(20 * total_ns / base)


def test_a_kernel_at_a_steps_first_nanosecond_belongs_to_that_step() -> None:
    """Boundaries: a kernel starting exactly at a marker's start is in that step; one starting
    exactly at a marker's end (the next step's start) is in the next one."""
    trace = trace_of(
        [
            ("step", 100, 100, EventKind.STEP),
            ("k", 100, 10, KERNEL),  # the step's first ns
            ("step", 200, 100, EventKind.STEP),
            ("k", 200, 30, KERNEL),  # first ns of step 2 = end of step 1
            ("k", 299, 1, KERNEL),  # step 2's last ns
            ("k", 300, 7, KERNEL),  # after the last step: in no sample
        ]
    )
    samples, _ = run_samples(trace, [profiled(0, ("k",), 48)], steps=2)
    assert samples[0] == Samples("step-markers", (10, 31), 2)


def _loop_trace(durations: list[list[int]]) -> Trace:
    """Step markers 1,000 ns apart, each holding its row of back-to-back `body` events."""
    events: list[tuple[str, int, int, EventKind]] = []
    for step, row in enumerate(durations):
        start = 1_000 * (step + 1)
        events.append(("step", start, 1_000, EventKind.STEP))
        for duration in row:
            events.append(("body", start, duration, KERNEL))
            start += duration
    return trace_of(events)


def test_a_preempted_loop_iteration_moves_one_matched_median_not_the_typical_step() -> None:
    """A loop body runs 4 times a step; each of 3 steps has one preempted iteration, each time
    a different one. Every step's sum is inflated, so the median step is too; matching the
    i-th iteration across steps leaves each median at the body's 10 ns."""
    rows = [[90, 10, 10, 10], [10, 10, 90, 10], [10, 10, 10, 90]]
    samples, _ = run_samples(_loop_trace(rows), [profiled(0, ("body",), 360)], steps=3)
    assert samples[0].values == (120, 120, 120)
    expected = sum(sorted(column)[1] for column in zip(*rows, strict=True))  # brute force
    assert samples[0].typical_ns == expected == 40


def test_steps_with_different_iteration_counts_have_no_typical_step() -> None:
    """Matching needs the same count in every step: 4, 4 and 3 iterations cannot be paired."""
    rows = [[10, 10, 10, 10], [10, 10, 10, 10], [10, 10, 10]]
    samples, _ = run_samples(_loop_trace(rows), [profiled(0, ("body",), 110)], steps=3)
    assert samples[0].values == (40, 40, 30)
    assert samples[0].typical_ns is None


def test_the_typical_step_of_a_shared_kernel_is_scaled_by_the_ops_share() -> None:
    """An op with a quarter of its kernel's events gets a quarter of the matched medians."""
    rows = [[30, 50], [10, 70], [20, 60]]
    samples, _ = run_samples(_loop_trace(rows), [profiled(0, ("body",), 60)], steps=3)
    assert samples[0].typical_ns == pytest.approx((20 + 60) * 60 / 240)


def own(op: ProfiledOp, starts: tuple[int, ...], count: int) -> ProfiledOp:
    """`op` with the starts of its own events, as the correlator lists them for shared names."""
    assert op.profile is not None
    profile = replace(op.profile, event_ts=starts, count=count)
    return replace(op, profile=profile)


def test_ops_of_one_event_name_are_sampled_from_their_own_events() -> None:
    """Three steps, two linear layers whose events are both `aten::linear`; the second layer's
    event stalls in step 2. Each layer's samples are its own events: the stall is in one step
    of one layer, and the other layer's steps are untouched."""
    steps = [(1000, 1000), (2000, 1000), (3000, 1000)]
    first = [(1010, 10), (2010, 11), (3010, 12)]
    second = [(1030, 20), (2030, 900), (3030, 21)]
    trace = trace_of(
        [("ProfilerStep#1", s, d, EventKind.STEP) for s, d in steps]
        + [("aten::linear", s, d, KERNEL) for s, d in first + second]
    )
    ops = [
        own(profiled(0, ("aten::linear",), sum(d for _, d in first)), (1010, 2010, 3010), 3),
        own(profiled(1, ("aten::linear",), sum(d for _, d in second)), (1030, 2030, 3030), 3),
    ]
    samples, _ = run_samples(trace, ops, steps=3)
    assert samples[0].values == (10, 11, 12)
    assert samples[1].values == (20, 900, 21)
    # By name alone (no starts) each layer got its share of every linear event of a step.
    smeared, _ = run_samples(trace, [profiled(0, ("aten::linear",), 33)], steps=3)
    assert smeared[0].values != (10, 11, 12)
