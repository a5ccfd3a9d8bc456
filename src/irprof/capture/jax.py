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

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.errors import CaptureError, UsageError

RUNNER_MODULE = "irprof.capture.jax_runner"
ERROR_PREFIX = "irprof-capture-error: "
STDERR_TAIL_LINES = 25


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
    _check_arguments(script_path, out_path, options)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_path.name}.", dir=out_path.parent))
    try:
        _run_child(script_path, staging, options, _model_label(script_path, out_path))
        _replace_directory(staging, out_path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return RunBundle(out_path)


def _check_arguments(script: Path, out: Path, options: JaxCaptureOptions) -> None:
    """Refuse bad arguments before starting a child process."""
    if not script.is_file():
        raise UsageError(f"{script}: no such script")
    if options.steps < 1:
        raise UsageError(f"--steps must be at least 1 (got {options.steps})")
    if options.warmup < 0:
        raise UsageError(f"--warmup must be 0 or more (got {options.warmup})")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not RunBundle(out).manifest_path.is_file():
        # Only an earlier run bundle may be replaced, never an unrelated directory.
        raise UsageError(f"{out}: is a non-empty directory that is not a run bundle")


def _model_label(script: Path, out: Path) -> str:
    """The script path relative to the bundle's parent when possible (portable manifests)."""
    try:
        return os.path.relpath(script.resolve(), out.resolve().parent)
    except ValueError:  # different drives
        return script.name


def _run_child(script: Path, staging: Path, options: JaxCaptureOptions, label: str) -> None:
    """Run the runner module with the current interpreter; raise CaptureError on failure."""
    command = [
        sys.executable,
        "-m",
        RUNNER_MODULE,
        "--script",
        str(script.resolve()),
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
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=options.timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(
            f"{script}: JAX capture did not finish within {options.timeout_s:.0f} s"
        ) from exc
    if completed.returncode == 0:
        return
    for line in completed.stderr.splitlines():
        if line.startswith(ERROR_PREFIX):
            raise CaptureError(line[len(ERROR_PREFIX) :])
    tail = "\n".join(completed.stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
    raise CaptureError(
        f"{script}: JAX capture failed (exit code {completed.returncode}); last lines of its "
        f"output:\n{tail}"
    )


def _replace_directory(staging: Path, out: Path) -> None:
    """Move the finished staging directory to `out`, replacing an earlier bundle there."""
    if not out.exists():
        os.replace(staging, out)
        return
    previous = out.with_name(f".{out.name}.old")
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(previous)
    os.replace(out, previous)
    os.replace(staging, out)
    shutil.rmtree(previous, ignore_errors=True)
