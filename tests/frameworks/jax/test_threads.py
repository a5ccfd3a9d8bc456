"""`irprof capture jax --threads N`: checked, recorded, and honoured by XLA:CPU.

The capture sizes XLA:CPU's thread pools through the child's environment
(`capture.child_environment`). Whether XLA then computes on one thread is measured, not assumed:
a child started with that environment runs a large jitted matmul and a convolution and counts
its threads that did a real share of the CPU time (`/proc/self/task/*/stat`, Linux).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax, child_environment
from tests.frameworks.thread_probe import busy_threads

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "jax_mlp.py"

WORKLOAD = """
import jax, jax.numpy as jnp

@jax.jit
def work(a, images, kernel):
    conv = jax.lax.conv_general_dilated(
        images, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return a @ a, conv.sum()

args = (jnp.ones((1024, 1024)), jnp.ones((2, 64, 64, 64)), jnp.ones((3, 3, 64, 64)))

def run_once():
    jax.block_until_ready(work(*args))
"""


def test_threads_below_one_are_refused(tmp_path: Path) -> None:
    """GIVEN --threads 0 THEN a usage error naming the option, and no bundle."""
    out = tmp_path / "run"
    with pytest.raises(UsageError, match=r"--threads must be at least 1 \(got 0\)"):
        capture_jax(EXAMPLE, out, JaxCaptureOptions(threads=0))
    assert not out.exists()


def test_child_environment_sets_the_pool_size_and_keeps_the_rest() -> None:
    env = child_environment(3, {"PATH": "/bin", "PJRT_NPROC": "8"})
    assert env == {"PATH": "/bin", "PJRT_NPROC": "3"}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread CPU time: Linux")
@pytest.mark.parametrize("threads", [1, 2])
def test_xla_computes_on_the_configured_threads(threads: int) -> None:
    """GIVEN the capture's child environment THEN XLA:CPU computed on one thread at 1 (without
    it, on every core and more), and on more than one at 2 (its client and Eigen pools are each
    sized N, so the work spreads over up to 2N threads, at most N of each pool at a time)."""
    pytest.importorskip("jax")
    if (os.cpu_count() or 1) < threads:
        pytest.skip(f"{threads} threads need {threads} cores")
    busy, ticks = busy_threads(WORKLOAD, env=child_environment(threads))
    if threads == 1:
        assert busy == 1, f"busy threads {busy}, CPU ticks per thread {ticks}"
    else:
        assert 2 <= busy <= 2 * threads, f"busy threads {busy}, CPU ticks per thread {ticks}"


@pytest.mark.slow
def test_the_manifest_records_the_threads(tmp_path: Path) -> None:
    """GIVEN a real capture with --threads 2 THEN options.threads is 2."""
    pytest.importorskip("jax")
    bundle: RunBundle = capture_jax(
        EXAMPLE, tmp_path / "run", JaxCaptureOptions(steps=3, warmup=1, threads=2)
    )
    assert bundle.manifest().options["threads"] == 2
