"""`irprof capture jax`: run a JAX script in a child process under `jax.profiler.trace`.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/capture.py`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.capture.noise import recording_noise
from irprof.capture.subprocess_run import (
    check_capture_arguments,
    model_label,
    run_runner,
)
from irprof.errors import UsageError
from irprof.frameworks.iree.backend import BackendPlan, capture_staged
from irprof.frameworks.jax.paths import SYS_PATH_FILE, make_bundle_portable

RUNNER_MODULE = "irprof.frameworks.jax.runner"
IREE_PLAN = BackendPlan(
    framework="jax", native="xla", level="stablehlo", what="StableHLO lowered by JAX"
)


@dataclass(frozen=True)
class JaxCaptureOptions:
    """What to run and how long: entry function, profiled and warm-up steps, backend(s)."""

    entry: str = "irprof_model"
    steps: int = 5
    warmup: int = 2
    timeout_s: float = 900.0
    backend: str = "xla"  # xla, iree (IREE llvm-cpu on the same StableHLO) or both
    mode: str = "infer"  # infer | train (value_and_grad + SGD, see frameworks/jax/steps_runner.py)


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
        ]
        with recording_noise(folder):
            run_runner(command, script=script_path, framework="JAX", timeout_s=options.timeout_s)
        make_bundle_portable(folder, script_path.resolve().parent)

    return capture_staged(IREE_PLAN, options, run_framework, script=script_path, out=out_path)
