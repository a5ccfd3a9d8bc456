"""The IREE command-line tools irprof drives: found beside the interpreter, run as subprocesses.

IREE's Python runtime refuses profiling modes, so compile, run and profile projections all go
through the console scripts of `iree-base-compiler` / `iree-base-runtime`. A failing tool is
reported with its own diagnostic and the input it was given.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from irprof.errors import CaptureError

DIAGNOSTIC_LINES = 30
DIAGNOSTIC_ERRORS = 8
MAX_DIAGNOSTIC_LINE = 400
ERROR_LINE = re.compile(r"(^|: )error: ")
CARET_LINE = re.compile(r"^\s*\^\s*$")
# llvm-cpu for this machine; debug info keeps source locations on every op of every stage.
COMPILE_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
    "--mlir-print-debuginfo",
)
PROFILING_MODES = "host-execution,queue-events,executable-metadata"


def tool_path(name: str) -> Path:
    """The IREE tool `name`: next to this interpreter (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which(name)
    if found is None:
        raise CaptureError(
            f"{name}: IREE tool not found beside {sys.executable} or on PATH; install "
            "iree-base-compiler and iree-base-runtime 3.13.0"
        )
    return Path(found)


def run_bounded(command: Sequence[str], *, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run `command` to completion, capturing its text output, in a process group of its own.

    IREE's console scripts are Python wrappers that start the real binary as a child: killing
    only the wrapper on a timeout (what `subprocess.run` does) left the compiler running. Here a
    timeout, or an interrupt of irprof itself, kills the whole group; TimeoutExpired is raised
    as `subprocess.run` would."""
    process = subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except BaseException:
        kill_group(process)
        raise
    return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the process group `process` leads, then reap it."""
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def run_tool(
    name: str, arguments: Sequence[str], *, subject: str | Path, what: str, timeout_s: float
) -> str:
    """Run an IREE tool; on failure raise CaptureError naming `subject` with IREE's diagnostic."""
    command = [str(tool_path(name)), *arguments]
    try:
        completed = run_bounded(command, timeout_s=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(
            f"{subject}: {name} ({what}) did not finish in {timeout_s:.0f} s"
        ) from exc
    if completed.returncode != 0:
        lines = (completed.stderr.strip() or completed.stdout.strip()).splitlines()
        raise CaptureError(
            f"{subject}: {what} failed ({name} exit code {completed.returncode}); IREE says:\n"
            f"{diagnostic_of(lines)}"
        )
    return completed.stdout


def diagnostic_of(lines: Sequence[str]) -> str:
    """IREE's error lines (`<loc>: error: ...`), else its last lines: an error that dumps the
    failing executable writes its one error line above thousands of lines of IR."""
    at = [i for i, line in enumerate(lines) if ERROR_LINE.search(line)]
    if not at:
        return "\n".join(lines[-DIAGNOSTIC_LINES:]) or "(no output)"
    shown: list[str] = []
    for i in at[:DIAGNOSTIC_ERRORS]:
        shown.append(lines[i][:MAX_DIAGNOSTIC_LINE])
        # MLIR follows an error located in a file with that source line and a caret under it
        if i + 2 < len(lines) and CARET_LINE.match(lines[i + 2]):
            shown += [lines[i + 1][:MAX_DIAGNOSTIC_LINE], lines[i + 2]]
    if len(at) > DIAGNOSTIC_ERRORS:
        shown.append(f"({len(at) - DIAGNOSTIC_ERRORS} more error lines)")
    if len(lines) > len(shown):
        shown.append(f"({len(lines)} lines of output in all; the error lines are shown)")
    return "\n".join(shown)


def compile_module(
    source: Path,
    out: Path,
    *,
    subject: str | Path,
    phase: str | None,
    sources_dir: Path | None,
    timeout_s: float,
) -> None:
    """`iree-compile` `source` for llvm-cpu into `out`: MLIR after `phase` (`flow`,
    `dispatch-creation`, ...) or, with no phase, a .vmfb."""
    arguments = [str(source), *COMPILE_FLAGS, "-o", str(out)]
    if phase is not None:
        arguments.append(f"--compile-to={phase}")
    if sources_dir is not None:
        arguments.append(f"--iree-hal-dump-executable-sources-to={sources_dir}")
    stage = f"compiling to {phase}" if phase is not None else "compiling for llvm-cpu"
    run_tool("iree-compile", arguments, subject=subject, what=stage, timeout_s=timeout_s)


def profile_module(
    vmfb: Path,
    output: Path,
    *,
    function: str,
    inputs: Sequence[str],
    iterations: int,
    subject: str | Path,
    timeout_s: float,
) -> None:
    """Run `function` `iterations` times under HAL profiling, writing the `.ireeprof` `output`."""
    arguments = [
        f"--module={vmfb}",
        "--device=local-task",
        f"--function={function}",
        *(f"--input={spec}" for spec in inputs),
        f"--device_profiling_mode={PROFILING_MODES}",
        f"--device_profiling_output={output}",
        f"--benchmark_min_time={iterations}x",
    ]
    run_tool(
        "iree-benchmark-module",
        arguments,
        subject=subject,
        what=f"running @{function}",
        timeout_s=timeout_s,
    )


def profile_projection(
    profile: Path, command: str, *, subject: str | Path, timeout_s: float, extra: Sequence[str] = ()
) -> str:
    """`iree-profile <command> --format=jsonl` of a `.ireeprof` (its JSON lines)."""
    return run_tool(
        "iree-profile",
        [command, "--format=jsonl", *extra, str(profile)],
        subject=subject,
        what=f"iree-profile {command}",
        timeout_s=timeout_s,
    )
