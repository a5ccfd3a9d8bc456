"""`irprof capture jax`: run a JAX script in a child process under `jax.profiler.trace`.

The child (`irprof.capture.jax_runner`, the only module importing jax) writes the bundle into a
staging directory beside the target; this parent renames it into place only when the child
succeeded, so a failed capture never leaves a partial bundle. Bundle layout:

    RUN/manifest.json
    RUN/ir/stablehlo.mlir     `jax.jit(f).lower(*args).as_text(debug_info=True)`
    RUN/ir/hlo.txt            optimized HLO of the compiled executable that was profiled
    RUN/trace/*.xplane.pb     the profiler's own files, untouched (+ perfetto/trace JSON)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.capture.subprocess_run import (
    check_capture_arguments,
    model_label,
    run_runner,
    staged_bundle,
)

RUNNER_MODULE = "irprof.capture.jax_runner"


@dataclass(frozen=True)
class JaxCaptureOptions:
    """What to run and how long: entry function name, profiled steps, warm-up steps."""

    entry: str = "irprof_model"
    steps: int = 5
    warmup: int = 2
    timeout_s: float = 900.0


def capture_jax(
    script: str | Path, out: str | Path, options: JaxCaptureOptions = JaxCaptureOptions()
) -> RunBundle:
    """Profile `script`'s model with JAX and write the run bundle `out`; returns it."""
    script_path = Path(script)
    out_path = Path(out)
    check_capture_arguments(script_path, out_path, steps=options.steps, warmup=options.warmup)
    label = model_label(script_path, out_path)
    with staged_bundle(out_path) as staging:
        command = [
            sys.executable,
            "-m",
            RUNNER_MODULE,
            "--script",
            str(script_path.resolve()),
            "--entry",
            options.entry,
            "--steps",
            str(options.steps),
            "--warmup",
            str(options.warmup),
            "--out",
            str(staging),
            "--model-label",
            label,
        ]
        run_runner(command, script=script_path, framework="JAX", timeout_s=options.timeout_s)
    return RunBundle(out_path)
