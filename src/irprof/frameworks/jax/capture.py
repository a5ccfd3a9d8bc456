"""`irprof capture jax`: run a JAX script in a child process under `jax.profiler.trace`.

The child (`irprof.frameworks.jax.runner`, the only module importing jax) writes the bundle into a
staging directory beside the target; this parent renames it into place only when the child
succeeded, so a failed capture never leaves a partial bundle. Bundle layout:

    RUN/manifest.json
    RUN/ir/stablehlo.mlir     `jax.jit(f).lower(*args).as_text(debug_info=True)`
    RUN/ir/hlo.txt            optimized HLO of the compiled executable that was profiled
    RUN/trace/*.xplane.pb     the profiler's own files, untouched (+ perfetto/trace JSON)

`mode="train"` profiles a training step built from the script's loss function
(`jax.value_and_grad` + SGD, `frameworks/jax/steps_runner.py` gives the entry convention).

`backend="iree"` / `"both"` compiles that StableHLO with IREE instead of / besides XLA
(`frameworks/iree/backend.py` gives the layout: the IREE run is its own bundle, RUN or RUN/iree).
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
)
from irprof.errors import UsageError
from irprof.frameworks.iree.backend import BackendPlan, capture_staged

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
        ]
        run_runner(command, script=script_path, framework="JAX", timeout_s=options.timeout_s)

    return capture_staged(IREE_PLAN, options, run_framework, script=script_path, out=out_path)
