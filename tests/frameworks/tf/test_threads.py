"""`irprof capture tf --threads N`: checked before TensorFlow starts, and honoured by TensorFlow.

The capture's child calls `runner.configure_threads(N)` before the script is imported. Whether
TensorFlow then computes on N threads is measured, not assumed: a child process configures the
threads as the capture does, runs a large matmul and a convolution, and counts its threads that
did a real share of the CPU time (`/proc/self/task/*/stat`, Linux).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.errors import UsageError
from irprof.frameworks.tf.capture import TfCaptureOptions
from tests.frameworks.thread_probe import busy_threads

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tf_cnn.py"

WORKLOAD = """
import sys
from irprof.frameworks.tf.runner import configure_threads
import tensorflow as tf

configure_threads(int(sys.argv[1]))

@tf.function
def work(a, images, kernel):
    conv = tf.nn.conv2d(images, kernel, 1, "SAME")
    return tf.matmul(a, a), tf.reduce_sum(conv)

args = (tf.ones((768, 768)), tf.ones((2, 64, 64, 64)), tf.ones((3, 3, 64, 64)))

def run_once():
    [t.numpy() for t in work(*args)]
"""


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
    busy, ticks = busy_threads(WORKLOAD, [str(threads)])
    assert busy == threads, f"busy threads {busy}, CPU ticks per thread {ticks}"


def test_one_thread_by_default_and_irprof_capture_threads_changes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("IRPROF_CAPTURE_THREADS", raising=False)
    assert TfCaptureOptions().threads == 1
    monkeypatch.setenv("IRPROF_CAPTURE_THREADS", "3")
    assert TfCaptureOptions().threads == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("IRPROF_CAPTURE_THREADS", bad)
        with pytest.raises(UsageError, match="IRPROF_CAPTURE_THREADS"):
            TfCaptureOptions()
        out = tmp_path / f"run-{bad}"
        assert main(["capture", "tf", str(EXAMPLE), "-o", str(out)]) == 2
        assert "IRPROF_CAPTURE_THREADS" in capsys.readouterr().err and not out.exists()
