"""The step-time check: op time counted in a step never exceeds it beyond parallel threads."""

from __future__ import annotations

from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.correlate.step_check import CountedSpan, check_step_times
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos

MODULE = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32> loc("add")
  %1 = arith.mulf %0, %0 : tensor<4xf32> loc("mul")
  return %1 : tensor<4xf32>
}
"""
STEPS = [(0, 1000), (2000, 3000)]


def spans_of(events: list[tuple[int, int, int]]) -> list[CountedSpan]:
    """(ts, dur, thread) events counted whole."""
    return [CountedSpan(ts, ts + dur, track, dur) for ts, dur, track in events]


def test_sequential_events_within_their_steps_pass() -> None:
    events = [(0, 400, 0), (400, 500, 0), (2000, 900, 0)]
    check = check_step_times(STEPS, spans_of(events))
    assert check is not None and check.over == () and check.warning() is None
    assert [s.counted_ns for s in check.steps] == [900, 900]
    assert [s.parallel_ns for s in check.steps] == [0, 0]


def test_parallel_threads_may_add_up_beyond_the_step_and_their_overlap_is_reported() -> None:
    # Two threads busy for 800 ns each in a 1000 ns step: 1600 ns of op time, 600 ns overlap.
    events = [(0, 800, 0), (200, 800, 1)]
    check = check_step_times(STEPS[:1], spans_of(events))
    assert check is not None and check.warning() is None
    assert (check.steps[0].counted_ns, check.steps[0].parallel_ns) == (1600, 600)
    assert check.record()["parallel_overlap_ns"] == [600]


def test_a_planted_double_count_on_one_thread_is_caught() -> None:
    """GIVEN a launch event counted whole AND the kernels it ran on its own thread (the old TF
    XLA bug) THEN the step counts more than its wall time and the check says so loudly."""
    events = [(100, 800, 0), (150, 300, 0), (500, 350, 0), (2100, 500, 0)]
    check = check_step_times(STEPS, spans_of(events))
    assert check is not None and check.over == (0,)
    assert check.steps[0].counted_ns == 1450 and check.steps[0].parallel_ns == 0
    warning = check.warning()
    assert warning is not None and warning.startswith("STEP TIME EXCEEDED in 1 of 2 steps")


def test_time_borrowed_from_outside_the_steps_is_counted_per_step() -> None:
    """Time copied in from untimed steps is spread over the timed ones: 800 ns of events plus
    600 ns borrowed per step does not fit a 1000 ns step."""
    events = [(0, 800, 0), (2000, 800, 0)]
    fits = check_step_times(STEPS, spans_of(events), untimed_ns=200)
    assert fits is not None and fits.over == ()
    check = check_step_times(STEPS, spans_of(events), untimed_ns=1200)
    assert check is not None and check.over == (0, 1)
    assert "taken from outside the timed steps" in (check.warning() or "")


def test_finish_level_puts_the_warning_first_and_the_figures_in_coverage() -> None:
    module = load_module(MODULE, make_context())
    infos = derive_op_infos(module)
    add = next(p for p, info in enumerate(infos) if info.op_name == "arith.addf")
    ledger = Ledger()
    events = [(100, 800, 0), (150, 600, 0)]  # nested on one thread, both given to `add`
    for ts, dur, _ in events:
        ledger.record("k", ts, dur, [add])
    entries = ledger.entries(infos, 1400, location_of=lambda info: info.op_name)
    result = finish_level(
        ledger, infos, entries, level="l", framework="test", profiled_ns=1400, where="t",
        warnings=["other"], step_check=check_step_times(STEPS[:1], spans_of(events)),
    )  # fmt: skip
    warnings = result.coverage.warnings
    assert warnings[0].startswith("STEP TIME EXCEEDED") and warnings[1:] == ("other",)
    assert result.coverage.extra["step_check"]["over_steps"] == [0]
    assert result.coverage.extra["step_check"]["counted_ns"] == [1400]
