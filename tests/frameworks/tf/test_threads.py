"""`irprof capture tf --threads N`: checked before TensorFlow starts, and honoured by TensorFlow.

The capture's child calls `runner.configure_threads(N)` before the script is imported. Whether
TensorFlow then computes on N threads is measured, not assumed: a child process configures the
threads as the capture does, runs a large matmul and a convolution, and counts its threads that
did a real share of the CPU time (`/proc/self/task/*/stat`, Linux).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.errors import UsageError
from irprof.frameworks.tf.capture import TfCaptureOptions

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tf_cnn.py"

PROBE = textwrap.dedent(
    """
    import json, os, sys
    from irprof.frameworks.tf.runner import configure_threads
    import tensorflow as tf

    configure_threads(int(sys.argv[1]))

    def cpu_ticks():
        ticks = {}
        for task in os.listdir("/proc/self/task"):
            try:
                stat = open(f"/proc/self/task/{task}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks[task] = int(fields[11]) + int(fields[12])  # utime + stime
        return ticks

    @tf.function
    def work(a, images, kernel):
        conv = tf.nn.conv2d(images, kernel, 1, "SAME")
        return tf.matmul(a, a), tf.reduce_sum(conv)

    args = (tf.ones((768, 768)), tf.ones((2, 64, 64, 64)), tf.ones((3, 3, 64, 64)))
    [t.numpy() for t in work(*args)]
    before = cpu_ticks()
    for _ in range(10):
        [t.numpy() for t in work(*args)]
    after = cpu_ticks()
    print(json.dumps([after[t] - before.get(t, 0) for t in after]))
    """
)


def busy_threads(threads: int) -> tuple[int, list[int]]:
    """Threads that did at least a fifth of the child's CPU time, and every thread's ticks."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(threads)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    ticks: list[int] = json.loads(done.stdout.strip().splitlines()[-1])
    total = sum(ticks)
    return sum(1 for t in ticks if t >= total / 5), sorted(ticks, reverse=True)


def test_threads_below_one_are_refused() -> None:
    """GIVEN --threads 0 THEN a usage error naming the option, before anything runs."""
    with pytest.raises(UsageError, match=r"--threads must be at least 1 \(got 0\)"):
        TfCaptureOptions(threads=0).validate()
    TfCaptureOptions(threads=1).validate()  # the boundary is allowed


def test_cli_threads_zero_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["capture", "tf", str(EXAMPLE), "-o", str(out), "--threads", "0"]) == 2
    assert "--threads must be at least 1" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread CPU time: Linux")
@pytest.mark.parametrize("threads", [1, 2])
def test_tensorflow_computes_on_the_configured_threads(threads: int) -> None:
    """GIVEN the capture's thread setting THEN TensorFlow's kernels ran on that many threads
    (the default, unset, spreads them over every core)."""
    pytest.importorskip("tensorflow")
    if (os.cpu_count() or 1) < threads:
        pytest.skip(f"{threads} threads need {threads} cores")
    busy, ticks = busy_threads(threads)
    assert busy == threads, f"busy threads {busy}, CPU ticks per thread {ticks}"
