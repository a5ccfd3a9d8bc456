"""What every capture adapter's parent side shares: argument checks, the child run, staging.

The child process (`python -m irprof.capture.<fw>_runner`) is the only place a framework is
imported. It writes the bundle into a staging directory beside the target; the parent renames it
into place only when the child succeeded, so a failed capture never leaves a partial bundle.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.capture.step_overhead import overhead_rounds
from irprof.errors import CaptureError, IrprofError, UsageError
from irprof.progress import stage

# A runner reports an error it understood on one stderr line with this prefix.
ERROR_PREFIX = "irprof-capture-error: "
STDERR_TAIL_LINES = 25


def check_capture_arguments(
    script: Path, out: Path, *, steps: int, warmup: int, what: str = "script"
) -> None:
    """Refuse bad arguments before starting a child process; `what` names the input (a script,
    or a model file) in the error when it is missing."""
    if not script.is_file():
        raise UsageError(f"{script}: no such {what}")
    if steps < 1:
        raise UsageError(f"--steps must be at least 1 (got {steps})")
    if warmup < 0:
        raise UsageError(f"--warmup must be 0 or more (got {warmup})")
    overhead_rounds()  # a bad IRPROF_OVERHEAD_ROUNDS stops here, not in the child
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not RunBundle(out).manifest_path.is_file():
        # Only an earlier run bundle may be replaced, never an unrelated directory.
        raise UsageError(f"{out}: is a non-empty directory that is not a run bundle")


def model_label(script: Path, out: Path) -> str:
    """The script path relative to the bundle's parent when possible (portable manifests)."""
    try:
        return os.path.relpath(script.resolve(), out.resolve().parent)
    except ValueError:  # different drives
        return script.name


def run_runner(
    command: Sequence[str],
    *,
    script: Path,
    framework: str,
    timeout_s: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run a capture child; raise CaptureError with its own message or the tail of its stderr."""
    try:
        with stage(f"running {script.name} under the {framework} profiler"):
            completed = subprocess.run(
                list(command),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(
            f"{script}: {framework} capture did not finish within {timeout_s:.0f} s"
        ) from exc
    if completed.returncode == 0:
        return
    for line in completed.stderr.splitlines():
        if line.startswith(ERROR_PREFIX):
            raise CaptureError(line[len(ERROR_PREFIX) :])
    tail = "\n".join(completed.stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
    raise CaptureError(
        f"{script}: {framework} capture failed (exit code {completed.returncode}); last lines "
        f"of its output:\n{tail}"
    )


@contextlib.contextmanager
def staged_bundle(out: Path) -> Iterator[Path]:
    """A staging directory beside `out`, moved to `out` (replacing an old bundle) on success.

    Before the move, the staged bundle must load: its manifest validates and irprof's own reader
    reads its trace. A profiler that wrote a trace irprof refuses fails the capture here, naming
    the problem, instead of failing every later command.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield staging
        check_staged_bundle(staging, out)
        _replace_directory(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def check_staged_bundle(staging: Path, out: Path) -> None:
    """Refuse a staged bundle whose manifest or primary trace irprof cannot read."""
    bundle = RunBundle(staging)
    try:
        bundle.trace()
    except IrprofError as exc:
        raise CaptureError(
            f"{out}: the capture wrote a bundle irprof cannot read ({exc}); nothing was written"
        ) from exc


def _replace_directory(staging: Path, out: Path) -> None:
    if not out.exists():
        os.replace(staging, out)
        return
    previous = out.with_name(f".{out.name}.old")
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(previous)
    os.replace(out, previous)
    os.replace(staging, out)
    shutil.rmtree(previous, ignore_errors=True)
