"""A stall planted in a real TensorFlow capture: flagged, kept out of the ranking, still counted.

`tests/fixtures/tf/models/stall_pyfunc.py` has a `PyFunc` op that sleeps `STALL_S` in one step
of the timed window, the way an op preempted on a busy machine stalls. One real
`irprof capture tf` (about 15-30 s on 2 cores), `annotate`, then `top` three ways. Every
expected figure comes from the trace itself, read here with TensorFlow's own XPlane protos:
the step markers' windows and the kernel events inside them.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from irprof.cli.main import main

pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.tf, pytest.mark.slow]

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "tf" / "models" / "stall_pyfunc.py"
STALL_S = 0.050  # the model's STALL_S (the model file imports TensorFlow: not imported here)
STALL_NS = int(STALL_S * 1e9)
STALLED_OP = "stall_pyfunc"
STEP_MARKER = "irprof_step"
STEPS = 5
OUTLIER_FLOOR_NS = 100_000  # docs/views.md: an outlier exceeds its median by over 100 µs


@dataclass(frozen=True)
class TraceSteps:
    """Each op kernel's time inside each step marker of the timed window (ns)."""

    per_step: dict[str, list[int]]  # node name -> ns per step

    def median_x_steps(self, op: str) -> float:
        return statistics.median(self.per_step[op]) * STEPS

    def total(self, op: str) -> int:
        return sum(self.per_step[op])


def read_trace_steps(run: Path) -> TraceSteps:
    """The timed XPlane's op events (`node:Type` on the executor's lines) summed per step."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    (path,) = sorted((run / "trace" / "plugins").rglob("*.xplane.pb"))
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    windows: list[tuple[int, int]] = []
    events: list[tuple[str, int, int]] = []
    for plane in space.planes:
        for line in plane.lines:
            base_ps = line.timestamp_ns * 1000
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                start = base_ps + event.offset_ps
                if name == STEP_MARKER:
                    windows.append((start, start + event.duration_ps))
                elif re.fullmatch(r"[\w/.-]+:\w+", name):  # `node:OpType`, not `A::B` or `X: y`
                    events.append((name.split(":")[0], start, event.duration_ps))
    windows.sort()
    assert len(windows) == STEPS, f"{path.name}: {len(windows)} step markers"
    per_step: dict[str, list[int]] = {}
    for node, start, duration_ps in events:
        for index, (begin, end) in enumerate(windows):
            if begin <= start < end:
                per_step.setdefault(node, [0] * STEPS)[index] += duration_ps // 1000
    return TraceSteps(per_step)


@pytest.fixture(scope="module")
def stalled_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TraceSteps]:
    """The model captured by the CLI at the defaults (5 steps, one thread) and annotated.

    Host level 2 skips the untimed reference window, which the stall does not need."""
    out = tmp_path_factory.mktemp("stall") / "run"
    argv = ["capture", "tf", str(MODEL), "-o", str(out), "--warmup", "1", "--host-level", "2"]
    argv += ["--threads", "1"]  # the users' default, whatever the suite's IRPROF_CAPTURE_THREADS
    assert main(argv) == 0
    assert main(["annotate", str(out)]) == 0
    return out, read_trace_steps(out)


def top_json(run: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, Any]]:
    """`irprof top RUN --format json --time wall` rows: the expected figures here are the
    trace's wall times (the default, on-CPU time, also takes out waits for a CPU, which the
    scheduler record holds: tests/analyses/test_preemption.py). The sleep stays either way:
    `test_top_lists_the_stalled_step_as_an_outlier` ranks with the default."""
    capsys.readouterr()
    assert main(["top", str(run), "--format", "json", "--time", "wall", *extra]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


def stalled_step(trace: TraceSteps) -> int:
    """The one step in which the PyFunc slept (checked: exactly one)."""
    times = trace.per_step[STALLED_OP]
    stalled = [index for index, ns in enumerate(times) if ns >= STALL_NS]
    assert len(stalled) == 1, f"expected one stalled step, the PyFunc's steps: {times}"
    return stalled[0]


def test_the_trace_has_one_stalled_step_of_the_pyfunc(stalled_run: tuple[Path, TraceSteps]) -> None:
    """GIVEN the capture THEN one step's PyFunc took the sleep and the others far less, and the
    manifest says the capture ran one intra-op thread."""
    run, trace = stalled_run
    stalled = stalled_step(trace)
    others = [ns for index, ns in enumerate(trace.per_step[STALLED_OP]) if index != stalled]
    assert max(others) < STALL_NS / 5
    assert json.loads((run / "manifest.json").read_text())["options"]["threads"] == 1


def test_top_lists_the_stalled_step_as_an_outlier(
    stalled_run: tuple[Path, TraceSteps],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GIVEN the run WHEN `irprof top` THEN the outliers name the PyFunc and its stalled step."""
    run, trace = stalled_run
    monkeypatch.setenv("COLUMNS", "200")
    capsys.readouterr()
    assert main(["top", str(run)]) == 0
    text = capsys.readouterr().out
    listed = [
        (match.group(1), int(match.group(2)))
        for match in re.finditer(r"^\s+(\S+)\s+step (\d+)\s", text, re.MULTILINE)
    ]
    assert (STALLED_OP, stalled_step(trace)) in listed, text
    # On a busy machine another step of the PyFunc can stall for real (CI saw step 2 listed
    # too). At wall time, where irprof's step times are the trace's, every other step listed
    # must be one the trace shows above the PyFunc's median step by the documented floor.
    capsys.readouterr()
    assert main(["top", str(run), "--time", "wall"]) == 0
    wall_text = capsys.readouterr().out
    wall_steps = [
        int(match.group(1))
        for match in re.finditer(rf"^\s+{STALLED_OP}\s+step (\d+)\s", wall_text, re.MULTILINE)
    ]
    assert stalled_step(trace) in wall_steps, wall_text
    times = trace.per_step[STALLED_OP]
    median = statistics.median(times)
    for step in wall_steps:
        assert times[step] - median > OUTLIER_FLOOR_NS - STEPS, (step, times, wall_text)


def test_the_median_ranking_keeps_the_stall_out(
    stalled_run: tuple[Path, TraceSteps], capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN the run WHEN `top` at the default statistic THEN the PyFunc is ranked by its typical
    step x steps, far below the sleep, behind the ops whose typical step is longer."""
    run, trace = stalled_run
    rows = {row["key"]: row for row in top_json(run, capsys)}
    order = list(rows)
    ranked = rows[STALLED_OP]["stat_ns"]
    assert ranked < STALL_NS / 2
    assert ranked == pytest.approx(trace.median_x_steps(STALLED_OP), abs=STEPS)
    # The PyFunc's stalled step holds most of its sum; the ranking does not see it.
    assert trace.total(STALLED_OP) >= STALL_NS
    slower_typically = [
        op
        for op in rows
        if op in trace.per_step
        and trace.median_x_steps(op) > 1.5 * trace.median_x_steps(STALLED_OP)
    ]
    assert slower_typically, f"the model's matmuls should outlast its PyFunc: {trace.per_step}"
    assert all(order.index(op) < order.index(STALLED_OP) for op in slower_typically)
    assert order[0] != STALLED_OP


def test_every_median_ranked_time_is_the_trace_median(
    stalled_run: tuple[Path, TraceSteps], capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN the run WHEN `top` at the default statistic THEN each op's ranked time is its
    median step in the trace x steps (1 ns of rounding per step)."""
    run, trace = stalled_run
    for row in top_json(run, capsys, "--limit", "1000"):
        expected = trace.median_x_steps(row["key"])
        assert row["stat_ns"] == pytest.approx(expected, abs=STEPS), row["key"]


def test_the_sum_ranking_includes_the_stall(
    stalled_run: tuple[Path, TraceSteps], capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN the run WHEN `top --stat sum` THEN each op's time is its events' sum in the steps,
    the PyFunc's with the sleep, and the op whose events sum highest is first."""
    run, trace = stalled_run
    rows = top_json(run, capsys, "--stat", "sum")
    by_key = {row["key"]: row for row in rows}
    for op, row in by_key.items():
        assert row["stat_ns"] == trace.total(op), op
    assert by_key[STALLED_OP]["stat_ns"] >= STALL_NS
    heaviest = max(trace.per_step, key=trace.total)
    assert heaviest == STALLED_OP, f"the sleep should outweigh every op's sum: {trace.per_step}"
    assert rows[0]["key"] == heaviest


def test_conserved_time_still_counts_the_stall(
    stalled_run: tuple[Path, TraceSteps], capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN the run THEN coverage conserves the profiled time, the stall included: profiled =
    every op event inside the steps = attributed + unattributed = the rows' sums."""
    run, trace = stalled_run
    level = json.loads((run / "coverage.json").read_text())["levels"]["tf"]
    in_steps = sum(trace.total(op) for op in trace.per_step)
    assert level["profiled_ns"] == in_steps
    assert level["attributed_ns"] + level["extra"]["unattributed_ns"] == level["profiled_ns"]
    rows = top_json(run, capsys, "--limit", "1000")
    assert sum(row["total_ns"] for row in rows) == level["attributed_ns"]
    assert level["attributed_ns"] >= trace.total(STALLED_OP) >= STALL_NS
