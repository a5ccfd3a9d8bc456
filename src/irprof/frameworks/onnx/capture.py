"""`irprof capture onnx`: profile an ONNX model under ONNX Runtime in a child process.

The child (`frameworks/onnx/runner.py`) names the nodes, runs warm-up and profiled runs with
ORT's profiler on the CPU execution provider, saves ORT's optimized graph and imports the model
to MLIR; this side checks the arguments, runs it and moves the bundle into place. See
docs/onnx.md.
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
    staged_bundle,
)
from irprof.errors import UsageError
from irprof.frameworks.onnx.inputs import parse_dims

RUNNER_MODULE = "irprof.frameworks.onnx.runner"
MODEL_SUFFIXES = (".onnx", ".py")
OPTIMIZATIONS = ("all", "extended", "basic", "disabled")


@dataclass(frozen=True)
class OnnxCaptureOptions:
    """Profiled and warm-up runs, ORT's threads and graph optimization level, the inputs."""

    entry: str = "irprof_model"  # for a .py model: the function returning an onnx.ModelProto
    steps: int = 5
    warmup: int = 2
    threads: int = 1
    optimization: str = "all"
    dims: tuple[str, ...] = ()  # `name=value` for symbolic input dimensions (default 1)
    inputs_npz: str | None = None
    seed: int = 0
    timeout_s: float = 600.0


def capture_onnx(
    model: str | Path, out: str | Path, options: OnnxCaptureOptions = OnnxCaptureOptions()
) -> RunBundle:
    """Profile `model` (.onnx, or a script building one) with ORT into the bundle `out`."""
    model_path = Path(model)
    out_path = Path(out)
    _check_arguments(model_path, out_path, options)
    label = model_label(model_path, out_path)
    with staged_bundle(out_path) as staging:
        command = runner_command(model_path, staging, options, label)
        with recording_noise(staging):
            run_runner(command, script=model_path, framework="onnx", timeout_s=options.timeout_s)
    return RunBundle(out_path)


def _check_arguments(model: Path, out: Path, options: OnnxCaptureOptions) -> None:
    """Refuse bad arguments before starting a child process."""
    what = "ONNX model" if model.suffix == ".onnx" else "script"
    check_capture_arguments(model, out, steps=options.steps, warmup=options.warmup, what=what)
    if model.suffix not in MODEL_SUFFIXES:
        raise UsageError(f"{model}: expected an ONNX model (.onnx) or a script (.py) building one")
    if options.threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {options.threads})")
    if options.optimization not in OPTIMIZATIONS:
        raise UsageError(
            f"--optimization {options.optimization!r}: expected one of {', '.join(OPTIMIZATIONS)}"
        )
    parse_dims(options.dims)
    if options.inputs_npz is not None and not Path(options.inputs_npz).is_file():
        raise UsageError(f"{options.inputs_npz}: no such .npz file")


def runner_command(
    model: Path, staging: Path, options: OnnxCaptureOptions, label: str
) -> list[str]:
    """The child's command line (the current interpreter, so the same environment)."""
    command = [
        sys.executable,
        "-m",
        RUNNER_MODULE,
        str(model.resolve()),
        str(staging),
        "--entry",
        options.entry,
        "--steps",
        str(options.steps),
        "--warmup",
        str(options.warmup),
        "--threads",
        str(options.threads),
        "--optimization",
        options.optimization,
        "--seed",
        str(options.seed),
        "--model-label",
        label,
    ]
    for dim in options.dims:
        command += ["--dim", dim]
    if options.inputs_npz is not None:
        command += ["--inputs", str(Path(options.inputs_npz).resolve())]
    return command
