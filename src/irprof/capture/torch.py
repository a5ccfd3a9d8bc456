"""`irprof capture torch`: export, import, lower and profile a PyTorch model in a child process.

The child (`irprof.capture.torch_runner`, the only module importing torch) writes the bundle into
a staging directory beside the target; this parent renames it into place only when the child
succeeded, so a failed capture never leaves a partial bundle. Bundle layout:

    RUN/manifest.json
    RUN/ir/torch.mlir          FX importer output; each op `loc("module|node|target"(...))`,
                               stamped with `irprof.origin=torch#<index>`
    RUN/ir/torch.fx.json       the exported program's call nodes: module stack, frames
    RUN/ir/linalg.mlir         the same module lowered to linalg on tensors (origins kept)
    RUN/trace/torch.pt.trace.json.gz   torch.profiler's Chrome trace, untouched
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

RUNNER_MODULE = "irprof.capture.torch_runner"
ERROR_PREFIX = "irprof-capture-error: "
STDERR_TAIL_LINES = 25
LEVELS = ("torch", "linalg")
DECOMPOSITIONS = ("default", "none")


@dataclass(frozen=True)
class TorchCaptureOptions:
    """Entry function, profiled and warm-up steps, IR levels, decomposition, intra-op threads."""

    entry: str = "irprof_model"
    steps: int = 5
    warmup: int = 2
    levels: tuple[str, ...] = LEVELS
    decompose: str = "default"
    threads: int = 1
    timeout_s: float = 900.0


def capture_torch(
    script: str | Path, out: str | Path, options: TorchCaptureOptions = TorchCaptureOptions()
) -> RunBundle:
    """Profile `script`'s model with torch.profiler, dump its MLIR and write the bundle `out`."""
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


def _check_arguments(script: Path, out: Path, options: TorchCaptureOptions) -> None:
    """Refuse bad arguments before starting a child process."""
    if not script.is_file():
        raise UsageError(f"{script}: no such script")
    if options.steps < 1:
        raise UsageError(f"--steps must be at least 1 (got {options.steps})")
    if options.warmup < 0:
        raise UsageError(f"--warmup must be 0 or more (got {options.warmup})")
    if options.threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {options.threads})")
    unknown = [level for level in options.levels if level not in LEVELS]
    if unknown or "torch" not in options.levels:
        raise UsageError(f"--levels {','.join(options.levels)}: expected 'torch' or 'torch,linalg'")
    if options.decompose not in DECOMPOSITIONS:
        raise UsageError(f"--decompose {options.decompose!r}: expected default or none")
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


def runner_command(
    script: Path, staging: Path, options: TorchCaptureOptions, label: str
) -> list[str]:
    """The child's command line (the current interpreter, so the same environment)."""
    return [
        sys.executable,
        "-m",
        RUNNER_MODULE,
        str(script.resolve()),
        str(staging),
        "--entry",
        options.entry,
        "--steps",
        str(options.steps),
        "--warmup",
        str(options.warmup),
        "--levels",
        ",".join(options.levels),
        "--decompose",
        options.decompose,
        "--threads",
        str(options.threads),
        "--model-label",
        label,
    ]


def _run_child(script: Path, staging: Path, options: TorchCaptureOptions, label: str) -> None:
    """Run the runner; raise CaptureError with its message or the tail of its stderr."""
    command = runner_command(script, staging, options, label)
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=options.timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(
            f"{script}: torch capture did not finish within {options.timeout_s:.0f} s"
        ) from exc
    if completed.returncode == 0:
        return
    for line in completed.stderr.splitlines():
        if line.startswith(ERROR_PREFIX):
            raise CaptureError(line[len(ERROR_PREFIX) :])
    tail = "\n".join(completed.stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
    raise CaptureError(
        f"{script}: torch capture failed (exit code {completed.returncode}); last lines of its "
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
