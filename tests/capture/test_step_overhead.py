"""The overhead record: rotated rounds of the three conditions, medians over all their steps."""

from __future__ import annotations

from irprof.capture.step_overhead import Conditions, StepTimes, measure_overhead


def test_rounds_rotate_the_order_and_irprof_includes_the_timed_window() -> None:
    calls: list[str] = []

    def block(name: str, times: list[int]) -> StepTimes:
        def run() -> list[int]:
            calls.append(name)
            return times

        return run

    record = measure_overhead(
        Conditions(
            bare=block("bare", [10, 30]),
            profiler=block("profiler", [20, 40]),
            irprof=block("irprof", [50, 50]),
        ),
        block("window", [1, 1, 1, 1, 1, 1, 1, 1]),
        steps=2,
        rounds=3,
    )
    assert calls == [
        *("bare", "profiler", "irprof"),
        *("profiler", "irprof", "bare"),
        *("irprof", "bare", "profiler"),
        "window",
    ]
    assert record["steps"] == 2
    assert record["no_profiler_ns"] == 20  # median of 10, 30 three times
    assert record["profiler_ns"] == 30
    # irprof's six steps of 50 and the window's eight of 1: the median of the fourteen.
    assert record["irprof_ns"] == 1
    assert record["timed_window_ns"] == 1
    assert "rotated" in record["order"]
