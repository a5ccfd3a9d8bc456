"""`irprof capture jax`: run a JAX script in a child process under `jax.profiler.trace`.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/capture.py`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.capture.noise import recording_noise
from irprof.capture.subprocess_run import (
    check_capture_arguments,
    model_label,
    run_runner,
)
from irprof.capture.threads import default_threads
from irprof.errors import UsageError
from irprof.frameworks.iree.backend import BackendPlan, capture_staged
from irprof.frameworks.jax.paths import SYS_PATH_FILE, make_bundle_portable

RUNNER_MODULE = "irprof.frameworks.jax.runner"
# The size of XLA:CPU's thread pools (PJRT's `DefaultThreadPoolSize`: client and Eigen intra-op
# pool), read when jax creates its CPU client. `--xla_cpu_multi_thread_eigen=false` alone does
# not make XLA's thunk runtime single-threaded (jaxlib 0.10: still 4 busy threads on 2 cores).
THREADS_ENV = "PJRT_NPROC"
IREE_PLAN = BackendPlan(
    framework="jax", native="xla", level="stablehlo", what="StableHLO lowered by JAX"
)


@dataclass(frozen=True)
class JaxCaptureOptions:
    """What to run and how long: entry function, profiled and warm-up steps, backend(s),
    XLA:CPU threads."""

    entry: str = "irprof_model"
    steps: int = 5
    warmup: int = 2
    timeout_s: float = 900.0
    backend: str = "xla"  # xla, iree (IREE llvm-cpu on the same StableHLO) or both
    mode: str = "infer"  # infer | train (value_and_grad + SGD, see frameworks/jax/steps_runner.py)
    # XLA:CPU threads while profiling (the XLA backend); at 1 an op's time does not hinge on
    # how many cores are free, as in the PyTorch and ONNX captures (IRPROF_CAPTURE_THREADS).
    threads: int = field(default_factory=default_threads)


def child_environment(threads: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment) with XLA:CPU's thread pools sized to `threads`."""
    env = dict(os.environ if base is None else base)
    env[THREADS_ENV] = str(threads)
    return env


def capture_jax(
    script: str | Path, out: str | Path, options: JaxCaptureOptions = JaxCaptureOptions()
) -> RunBundle:
    """Profile `script`'s model with JAX and write the run bundle `out`; returns it."""
    script_path = Path(script)
    out_path = Path(out)
    check_capture_arguments(script_path, out_path, steps=options.steps, warmup=options.warmup)
    IREE_PLAN.check(options.backend)
    if options.mode not in ("infer", "train"):
        raise UsageError(f"--mode {options.mode!r}: expected infer or train")
    if options.threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {options.threads})")
    label = model_label(script_path, out_path)

    def run_framework(folder: Path, steps: int, warmup: int) -> None:
        command = [
            sys.executable,
            "-m",
            RUNNER_MODULE,
            "--script",
            str(script_path.resolve()),
            "--entry",
            options.entry,
            "--steps",
            str(steps),
            "--warmup",
            str(warmup),
            "--out",
            str(folder),
            "--model-label",
            label,
            "--mode",
            options.mode,
            "--sys-path-out",
            str(folder / SYS_PATH_FILE),
            "--threads",
            str(options.threads),
        ]
        with recording_noise(folder):
            run_runner(
                command,
                script=script_path,
                framework="JAX",
                timeout_s=options.timeout_s,
                env=child_environment(options.threads),
            )
        make_bundle_portable(folder, script_path.resolve().parent)

    return capture_staged(IREE_PLAN, options, run_framework, script=script_path, out=out_path)
