"""`irprof capture jax --threads N`: checked, recorded, and honoured by XLA:CPU.

The capture sizes XLA:CPU's thread pools through the child's environment
(`capture.child_environment`). Whether XLA then computes on one thread is measured, not assumed:
a child started with that environment runs a large jitted matmul and a convolution and counts
its threads that did a real share of the CPU time (`/proc/self/task/*/stat`, Linux).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax, child_environment

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "jax_mlp.py"

PROBE = textwrap.dedent(
    """
    import json, os
    import jax, jax.numpy as jnp

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

    @jax.jit
    def work(a, images, kernel):
        conv = jax.lax.conv_general_dilated(
            images, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return a @ a, conv.sum()

    args = (jnp.ones((1024, 1024)), jnp.ones((2, 64, 64, 64)), jnp.ones((3, 3, 64, 64)))
    jax.block_until_ready(work(*args))
    before = cpu_ticks()
    for _ in range(10):
        jax.block_until_ready(work(*args))
    after = cpu_ticks()
    print(json.dumps([after[t] - before.get(t, 0) for t in after]))
    """
)


def busy_threads(env: dict[str, str]) -> tuple[int, list[int]]:
    """Threads that did at least a fifth of the child's CPU time, and every thread's ticks."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env=env,
    )
    ticks: list[int] = json.loads(done.stdout.strip().splitlines()[-1])
    total = sum(ticks)
    return sum(1 for t in ticks if t >= total / 5), sorted(ticks, reverse=True)


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
    busy, ticks = busy_threads(child_environment(threads))
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
