"""Samples and bootstrap intervals of `irprof diff` on their edges, expected values by hand.

Written from the mutants of `analyses/run_diff_samples.py` the first tests let through: events
of several kernels interleaved in time (one with a single event), instants and counters under
a kernel's name, ops without samples mixed into a set, the method label, and the interval's
percentiles at confidence 0 and 1, where the possible bootstrap means can be listed.
"""

from __future__ import annotations

import pytest

from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.run_diff_samples import (
    NO_SAMPLES,
    Samples,
    bootstrap_delta,
    combine,
    method_label,
    run_samples,
)
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace
from tests.analyses.test_run_diff_samples import own, trace_of
from tests.analyses.test_run_diff_samples import profiled as profiled_op

KERNEL = EventKind.FRAMEWORK_OP


def profiled(kernels: tuple[str, ...], total_ns: int) -> ProfiledOp:
    """Op 0 with a profile naming `kernels`."""
    return profiled_op(0, kernels, total_ns)


def test_events_of_interleaved_kernels_stay_with_their_kernel() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    events = [
        ("b", 0, 7, KERNEL),
        ("a", 5, 3, KERNEL),
        ("b", 20, 11, KERNEL),
        ("c", 30, 13, KERNEL),  # c's only event
        ("a", 40, 0, EventKind.INSTANT),  # not work: no sample
        ("c", 50, 0, EventKind.COUNTER),  # not work: no sample
    ]
    for name, start, duration, kind in events:
        builder.add(start, duration, track, name, kind)
    trace = builder.build()
    # The op ran its kernels alone (total = their sum): ratio 1, one sample per event, in the
    # op's kernel order, each kernel's events in time order.
    op = profiled(("a", "b", "c"), 3 + 7 + 11 + 13)
    samples, markers = run_samples(trace, [op], steps=1)
    assert markers == 0
    assert samples[0] == Samples("event-bootstrap", (3, 7, 11, 13), 1)


def test_method_label_lists_methods_most_frequent_first_without_none() -> None:
    step = Samples("step-markers", (1, 2), 2)
    event = Samples("event-bootstrap", (1, 2, 3), 1)
    only = Samples("profile-only", (5,), 1)
    assert method_label([event, step, event, NO_SAMPLES, NO_SAMPLES, NO_SAMPLES]) == (
        "event-bootstrap/step-markers"
    )
    assert method_label([step, only, only]) == "profile-only/step-markers"
    # Most frequent first even when it sorts last by name.
    assert method_label([event, step, step]) == "step-markers/event-bootstrap"
    assert method_label([step]) == "step-markers"
    assert method_label([NO_SAMPLES]) == "none"
    assert method_label([]) == "none"


def test_combine_sums_one_op_and_skips_ops_without_samples() -> None:
    one = Samples("occurrence", (4, 6), 2)
    assert combine([NO_SAMPLES, one]) == (one,)
    assert combine([one, NO_SAMPLES, Samples("occurrence", (1, 1), 2)]) == (
        Samples("occurrence", (5, 7), 2),
    )
    assert combine([NO_SAMPLES]) == ()


def test_combine_keeps_samples_of_different_methods_apart_even_of_equal_length() -> None:
    step = Samples("step-markers", (4, 6), 2)
    event = Samples("event-bootstrap", (1, 2), 1)
    assert combine([step, event]) == (step, event)
    assert combine([event, step]) == (event, step)


def interval(a: list[Samples], b: list[Samples], confidence: float) -> tuple[float, float] | None:
    return bootstrap_delta(a, b, resamples=2000, confidence=confidence, seed=7)


def test_interval_ends_are_the_extreme_means_at_confidence_one() -> None:
    # A's step samples (0, 10): a resampled mean is 0, 5 or 10 (1/4, 1/2, 1/4); B is 100.
    a = [Samples("step-markers", (0, 10), 2)]
    b = [Samples("step-markers", (100, 100), 2)]
    assert interval(a, b, 1.0) == (100.0 - 10.0, 100.0 - 0.0)
    assert interval(a, b, 0.0) == (100.0 - 5.0, 100.0 - 5.0)


def test_confidence_zero_is_one_point_the_median_and_more_confidence_widens() -> None:
    # 100 distinct step times: the resampled means spread over many values, so percentiles
    # other than the 50th on both ends would give two different ends.
    a = [Samples("step-markers", (0, 0), 2)]
    b = [Samples("step-markers", tuple(range(0, 100_000, 1_000)), 100)]
    low, high = bootstrap_delta(a, b, resamples=4000, confidence=0.0, seed=3) or (0.0, -1.0)
    assert low == high
    assert abs(low - sum(range(0, 100_000, 1_000)) / 100) < 1_000
    narrow = bootstrap_delta(a, b, resamples=4000, confidence=0.5, seed=3)
    wide = bootstrap_delta(a, b, resamples=4000, confidence=0.9, seed=3)
    assert narrow is not None and wide is not None
    assert wide[0] < narrow[0] < low < narrow[1] < wide[1]


def trace_with_steps(steps: list[tuple[int, int]], kernels: list[tuple[str, int, int]]) -> Trace:
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "main")
    for start, duration in steps:
        builder.add(start, duration, track, "step", EventKind.STEP)
    for name, start, duration in kernels:
        builder.add(start, duration, track, name, KERNEL)
    return builder.build()


def samples_of(
    steps: list[tuple[int, int]],
    kernels: list[tuple[str, int, int]],
    op: ProfiledOp,
    step_count: int,
) -> Samples:
    found, _ = run_samples(trace_with_steps(steps, kernels), [op], steps=step_count)
    return found[0]


def test_events_between_steps_and_steps_without_events() -> None:
    steps = [(100, 100), (300, 100), (500, 100)]  # [100, 200), [300, 400), [500, 600)
    kernels = [("k", 110, 10), ("k", 220, 30), ("k", 310, 20)]  # 220: between steps
    op = profiled(("k",), 10 + 30 + 20)
    # In no window: the event at 220. The last step has no event: a sample of 0.
    assert samples_of(steps, kernels, op, 3) == Samples("step-markers", (10, 20, 0), 3)


def test_nested_step_markers_count_once_per_outer_step() -> None:
    steps = [(0, 100), (10, 40), (100, 100), (110, 40)]  # a marker inside each step
    kernels = [("k", 60, 10), ("k", 150, 5)]
    op = profiled(("k",), 15)
    # One event per outer step: the typical step is the median of 10 and 5.
    assert samples_of(steps, kernels, op, 2) == Samples("step-markers", (10, 5), 2, 7.5)


def test_two_steps_without_markers_split_each_kernels_runs_and_add_the_kernels() -> None:
    kernels = [("a", 0, 1), ("b", 5, 10), ("a", 100, 2), ("b", 105, 20)]
    op = profiled(("a", "b"), 1 + 10 + 2 + 20)
    # Each kernel once per step: the typical step adds the kernels' medians.
    typical = (1 + 2) / 2 + (10 + 20) / 2
    assert samples_of([], kernels, op, 2) == Samples("occurrence", (1 + 10, 2 + 20), 2, typical)


def test_kernels_with_no_time_leave_the_profile_and_one_nanosecond_does_not() -> None:
    op = profiled(("k",), 40)
    zero = samples_of([], [("k", 0, 0), ("k", 10, 0)], op, 1)
    assert zero == Samples("profile-only", (40,), 1)
    one = samples_of([], [("k", 0, 1)], profiled(("k",), 1), 1)
    assert one == Samples("event-bootstrap", (1,), 1)


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_an_op_whose_kernels_are_not_in_the_trace_keeps_its_profile_total(steps: int) -> None:
    op = profiled(("missing",), 40)
    found = samples_of([], [("k", 0, 5)], op, steps)
    assert found == Samples("profile-only", (40,), max(steps, 1))


def test_every_op_of_a_side_adds_to_its_mean() -> None:
    # Constant samples: each side's mean is exact, so the interval is one point.
    a = [Samples("step-markers", (4, 4), 2), Samples("occurrence", (6, 6, 6), 3)]
    b = [Samples("event-bootstrap", (60, 60), 2)]  # 120 ns over 2 steps
    assert interval(a, b, 0.9) == (60.0 - 10.0, 60.0 - 10.0)


@pytest.mark.parametrize("where", ["first", "last"])
def test_ops_without_samples_change_nothing_in_the_interval(where: str) -> None:
    a = [Samples("step-markers", (0, 10), 2)]
    b = [Samples("step-markers", (100, 100), 2)]
    padded = [NO_SAMPLES, *a] if where == "first" else [*a, NO_SAMPLES]
    assert interval(padded, b, 0.8) == interval(a, b, 0.8)
    assert interval(padded, b, 0.8) is not None


def test_one_sample_says_nothing_about_noise() -> None:
    a = [Samples("step-markers", (0, 10), 2)]
    assert interval(a, [Samples("profile-only", (50,), 1)], 0.9) is None
    assert interval([NO_SAMPLES], [NO_SAMPLES], 0.9) is None


def test_combine_adds_the_typical_steps_and_one_unknown_makes_it_unknown() -> None:
    a = Samples("occurrence", (4, 6), 2, 2.5)
    b = Samples("occurrence", (1, 1), 2, 4.0)
    assert combine([a, NO_SAMPLES, b]) == (Samples("occurrence", (5, 7), 2, 6.5),)
    unknown = Samples("occurrence", (1, 1), 2)
    assert combine([a, unknown]) == (Samples("occurrence", (5, 7), 2, None),)


def test_a_shared_kernel_scales_the_typical_step_by_the_ops_share() -> None:
    # Two steps without markers, the op's total half of its kernel's 10 + 30 ns.
    op = profiled(("k",), 20)
    found = samples_of([], [("k", 0, 10), ("k", 100, 30)], op, 2)
    # Samples of 5 and 15; the typical step is half the median of 10 and 30.
    assert found == Samples("occurrence", (5, 15), 2, 10.0)


def test_a_one_nanosecond_total_is_a_share_of_the_steps_events_only() -> None:
    steps = [(100, 100), (300, 100)]
    kernels = [("k", 0, 80), ("k", 110, 10), ("k", 310, 10)]  # 80 ns before the steps
    found = samples_of(steps, kernels, profiled(("k",), 1), 2)
    # 1 ns of the 20 inside the steps: each step's 10 ns times 1/20.
    assert found == Samples("step-markers", (round(0.5), round(0.5)), 2, 0.5)


def test_a_total_of_zero_with_no_event_inside_the_steps() -> None:
    steps = [(100, 100), (300, 100)]
    found = samples_of(steps, [("k", 0, 80)], profiled(("k",), 0), 2)
    assert found == Samples("step-markers", (0, 0), 2, 0.0)


def test_several_events_at_each_own_start_are_all_taken_and_no_others() -> None:
    """Two events of the name at each of the op's starts (two threads), another op's events
    between them: the op's samples are exactly its four events, each step the two at its
    start (totals equal to the events, so no share can hide a wrong pick); a listed start with
    no event in the trace takes nothing."""
    trace = trace_of(
        [
            ("step", 0, 100, EventKind.STEP),
            ("step", 100, 100, EventKind.STEP),
            ("k", 10, 5, KERNEL),
            ("k", 10, 7, KERNEL),
            ("k", 50, 40, KERNEL),
            ("k", 110, 6, KERNEL),
            ("k", 110, 3, KERNEL),
            ("k", 150, 30, KERNEL),
        ]
    )
    first = own(profiled_op(0, ("k",), 5 + 7 + 6 + 3), (10, 110, 999), 4)
    second = own(profiled_op(1, ("k",), 40 + 30), (50, 150), 2)
    samples, _ = run_samples(trace, [first, second], steps=2)
    assert samples[0].values == (5 + 7, 6 + 3)
    assert samples[1].values == (40, 30)
