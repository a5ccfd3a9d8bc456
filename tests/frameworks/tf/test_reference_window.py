"""The untimed reference window of `irprof capture tf` (`steps_runner.traced_window`).

xprof's client blocks for a fixed window, so the window starts short; when a stalled machine
makes the steps outlast it, the window is taken again from scratch, longer. A child process runs
the real profiler server and client on a step that stalls past the first window once: the
result must be one window's XSpace holding exactly one marker per step, not a failure and not
the markers of the abandoned window. Each window runs one untimed step, then the marked ones
(`timed_steps`), so a window of 2 steps makes 3 calls, and `stalls` lists a sleep per call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import json, sys, time
from pathlib import Path
import tensorflow as tf
from irprof.frameworks.tf import runner, steps_runner

@tf.function
def model(x):
    return tf.matmul(x, x)

def stepper(stalls):
    calls = []
    def fn(x):
        calls.append(1)
        out = model(x)
        out.numpy()
        if len(calls) <= len(stalls):
            time.sleep(stalls[len(calls) - 1])  # a stall inside the step, after its kernel
        return out
    return fn, calls

inputs = (tf.ones((8, 8)),)
model(*inputs)  # traced before the windows, so no step pays for tracing
levels = steps_runner.requested_tracer_options(3, 0)
port = steps_runner.free_port()
tf.profiler.experimental.server.start(port)

# Stalled past the first window (500 ms at a 0 s step time), not the second.
fn, calls = stepper([0, 0.9])
logdir = Path(sys.argv[1], "retried")
durations = steps_runner.traced_window(fn, inputs, 2, levels, logdir, port, 0.0)
options = runner.checked_window(logdir, levels, 2)
print(json.dumps({
    "durations": durations,
    "xspaces": len(list(logdir.rglob("*.xplane.pb"))),
    "calls": len(calls),
    "options": options,
}))

# Stalled past every window (windows shortened to 100, 200 and 400 ms).
steps_runner.WINDOW_BASE_MS, steps_runner.WINDOW_GROWTH = 100, 2
fn, calls = stepper([0, 0.15, 0, 0, 0.25, 0, 0, 0.45])
try:
    steps_runner.traced_window(fn, inputs, 2, levels, Path(sys.argv[1], "failed"), port, 0.0)
except SystemExit as failure:
    print(json.dumps({"failure": str(failure), "calls": len(calls)}))
"""


@pytest.mark.slow
@pytest.mark.tf
def test_a_window_that_closes_before_its_steps_is_taken_again_longer(tmp_path: Path) -> None:
    """GIVEN a first marked step that stalls past the first window THEN the window is taken
    again, longer, and the XSpace it leaves holds one marker per step (checked by the capture's
    own `checked_window`) from the second window only. GIVEN steps that stall past each of the
    three windows THEN the child stops naming the last window's length, with no partial trace."""
    pytest.importorskip("tensorflow")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # xprof's client prints its own lines ("Starting to trace ...") to stdout too.
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    retried, failed = records
    assert retried["xspaces"] == 1
    # 3 calls in the abandoned window (its first marked step stalled) and 3 in the kept one.
    assert retried["calls"] == 6
    assert len(retried["durations"]) == 2
    assert max(retried["durations"]) < 0.9e9  # the kept window's steps did not stall
    assert failed == {
        "failure": "the profiler window (400 ms, attempt 3) closed before 2 steps ended",
        "calls": 9,
    }
