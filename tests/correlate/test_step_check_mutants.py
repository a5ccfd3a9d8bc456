"""The step-time check on its boundaries: the 1% tolerance, spans at a window's ends, the
untimed share's rounding, thread overlap clipped to the window, and the warning's figures.

Written from the mutants of `correlate/step_check.py`; unions are checked against brute force
over integer time points, the rest against numbers worked out in each case.
"""

from __future__ import annotations

import itertools

from irprof.correlate.step_check import (
    CountedSpan,
    StepCheck,
    StepTime,
    check_step_times,
    union_ns,
)


def brute_union(spans: list[tuple[int, int]]) -> int:
    return len({t for begin, end in spans for t in range(begin, end)})


def test_union_matches_brute_force_on_every_pair_and_triple_of_small_spans() -> None:
    grid = [(b, e) for b in range(0, 5) for e in range(b, 6)]
    for count in (1, 2, 3):
        for spans in itertools.product(grid, repeat=count):
            assert union_ns(list(spans)) == brute_union(list(spans)), spans
    assert union_ns([]) == 0


def test_the_tolerance_is_one_percent_of_the_step_inclusive() -> None:
    at = StepCheck((StepTime(1_000, 1_010, 0),))  # 10 ns over: exactly 1%
    assert at.over == () and at.warning() is None
    above = StepCheck((StepTime(1_000, 1_011, 0),))
    assert above.over == (0,)
    # A zero-length step still tolerates nothing beyond 1% of 1 ns.
    assert StepCheck((StepTime(0, 1, 0),)).over == (0,)
    assert StepCheck((StepTime(0, 0, 0),)).over == ()
    # Parallel overlap is allowed on top of the step.
    assert StepCheck((StepTime(1_000, 1_500, 490),)).over == ()
    assert StepTime(1_000, 1_500, 490).excess_ns == 10
    assert StepTime(1_000, 900, 0).excess_ns == 0


def test_the_warning_names_the_worst_step_with_its_figures() -> None:
    # Figures of a few seconds, so that each divisor shows in the third decimal of the ms.
    check = StepCheck(
        (
            StepTime(1_000_000_000, 1_000_000_000, 0),
            StepTime(1_234_567_000, 3_000_000_000, 999_999_999),  # 765.433001 ms over: worst
            StepTime(2_000_000_000, 2_400_000_000, 0),  # 400 ms over
        ),
        untimed_ns=1_456_789_000,
    )
    assert check.over == (1, 2)
    assert check.warning() == (
        "STEP TIME EXCEEDED in 2 of 3 steps: step 1 counts 3000.000 ms of op time in a "
        "1234.567 ms step (parallel threads overlap 1000.000 ms); 1456.789 ms of it was taken "
        "from outside the timed steps; time is counted twice or borrowed, so per-op figures "
        "are too high"
    )
    assert check.record() == {
        "steps": 3,
        "step_ns": [1_000_000_000, 1_234_567_000, 2_000_000_000],
        "counted_ns": [1_000_000_000, 3_000_000_000, 2_400_000_000],
        "parallel_overlap_ns": [0, 999_999_999, 0],
        "untimed_ns": 1_456_789_000,
        "over_steps": [1, 2],
    }
    alone = StepCheck((StepTime(1_000_000, 1_600_000, 0),))
    assert alone.warning() == (
        "STEP TIME EXCEEDED in 1 of 1 steps: step 0 counts 1.600 ms of op time in a 1.000 ms "
        "step (parallel threads overlap 0.000 ms); time is counted twice or borrowed, so per-op "
        "figures are too high"
    )


def test_spans_starting_at_either_end_of_a_window_count_in_it() -> None:
    windows = [(100, 200), (300, 400)]
    spans = [
        CountedSpan(100, 150, 1, 7),  # at the start
        CountedSpan(200, 210, 1, 5),  # at the end (starts in the window, runs past it)
        CountedSpan(250, 260, 1, 1_000),  # between the steps: in neither
        CountedSpan(299, 310, 1, 3),  # just before the second
    ]
    check = check_step_times(windows, spans)
    assert check is not None
    assert [step.counted_ns for step in check.steps] == [7 + 5, 0]
    assert [step.step_ns for step in check.steps] == [100, 100]


def test_untimed_time_is_shared_evenly_rounded_down() -> None:
    check = check_step_times([(0, 10), (10, 20), (20, 30)], [], untimed_ns=8)
    assert check is not None
    assert [step.counted_ns for step in check.steps] == [8 // 3] * 3
    assert check.untimed_ns == 8
    assert check_step_times([], [CountedSpan(0, 1, 1, 1)]) is None


def test_overlap_of_threads_is_clipped_to_the_window() -> None:
    # Thread 1 busy [0, 60), thread 2 busy [40, 100) and [150, 260): window [0, 200).
    spans = [
        CountedSpan(0, 60, 1, 60),
        CountedSpan(40, 100, 2, 60),
        CountedSpan(150, 260, 2, 110),
    ]
    check = check_step_times([(0, 200)], spans)
    assert check is not None
    # Per thread: 60 + (60 + 50) = 170; all threads: [0, 100) + [150, 200) = 150.
    assert check.steps[0].parallel_ns == 170 - 150
    # Only the thread of one span: nothing in parallel.
    alone = check_step_times([(0, 200)], [CountedSpan(10, 20, 1, 10), CountedSpan(20, 30, 1, 10)])
    assert alone is not None and alone.steps[0].parallel_ns == 0
