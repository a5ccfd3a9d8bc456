"""The overhead record: rotated rounds of the three conditions, medians over all their steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.capture.step_overhead import (
    ROUNDS,
    ROUNDS_VARIABLE,
    Conditions,
    StepTimes,
    measure_overhead,
    overhead_rounds,
)
from irprof.cli.main import main
from irprof.errors import UsageError


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


def _counting_conditions(calls: list[str]) -> Conditions:
    def block(name: str) -> StepTimes:
        def run() -> list[int]:
            calls.append(name)
            return [1]

        return run

    return Conditions(bare=block("bare"), profiler=block("profiler"), irprof=block("irprof"))


@pytest.mark.parametrize(("value", "rounds"), [(None, ROUNDS), ("1", 1), (" 2 ", 2)])
def test_irprof_overhead_rounds_sets_the_rounds(
    monkeypatch: pytest.MonkeyPatch, value: str | None, rounds: int
) -> None:
    """Each round runs every condition once: the block count is 3 x the rounds."""
    if value is None:
        monkeypatch.delenv(ROUNDS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(ROUNDS_VARIABLE, value)
    calls: list[str] = []
    measure_overhead(_counting_conditions(calls), lambda: [1], steps=1)
    assert len(calls) == 3 * rounds
    assert ROUNDS == 5


@pytest.mark.parametrize("bad", ["0", "-1", "five", "1.5"])
def test_a_bad_irprof_overhead_rounds_stops_the_capture_before_its_child(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bad: str,
) -> None:
    monkeypatch.setenv(ROUNDS_VARIABLE, bad)
    with pytest.raises(UsageError, match=ROUNDS_VARIABLE):
        overhead_rounds()
    script = tmp_path / "model.py"
    script.write_text("")
    out = tmp_path / "run"
    assert main(["capture", "torch", str(script), "-o", str(out)]) == 2
    assert f"{ROUNDS_VARIABLE}={bad!r}" in capsys.readouterr().err
    assert not out.exists()
