"""IREE's tools run in a process group of their own: a timeout kills the tool and every process
it started. IREE's console scripts are Python wrappers around the real binary, so killing only
the wrapper left a hung `iree-compile` running after `irprof tune` had given up on it.

The hanging tool here is a shell script that starts a long `sleep` (its "binary") and waits for
it, the shape of IREE's wrappers; no IREE is needed.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from irprof.errors import CaptureError
from irprof.frameworks.iree import tools, tune_measure

NEEDS_FRAMEWORK = False


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def hanging_tool(folder: Path) -> tuple[Path, Path]:
    """A wrapper script that starts a child which would run for 5 minutes, writes the child's
    pid, and waits for it; and the file the pid goes to."""
    pid_file = folder / "child.pid"
    script = folder / "iree-compile"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    script.chmod(0o755)
    return script, pid_file


def assert_child_killed(pid_file: Path) -> None:
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), f"the tool's child {pid} outlived the timeout"


# A regression hangs (the orphan holds the output pipes open) rather than fails: bound it.
pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="/proc: Linux"),
    pytest.mark.timeout(60),
]


def test_a_timeout_kills_the_tool_and_the_process_it_started(tmp_path: Path) -> None:
    script, pid_file = hanging_tool(tmp_path)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        tools.run_bounded([str(script)], timeout_s=1.0)
    assert time.monotonic() - started < 30
    assert_child_killed(pid_file)


def test_a_finished_tool_gives_its_output_and_exit_code(tmp_path: Path) -> None:
    done = tools.run_bounded(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=30)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_run_tool_names_the_subject_and_the_limit_on_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, pid_file = hanging_tool(tmp_path)
    monkeypatch.setattr(tools, "tool_path", lambda name: script)
    with pytest.raises(
        CaptureError, match=r"model\.mlir: iree-compile \(compiling\) did not finish in 1 s"
    ):
        tools.run_tool("iree-compile", [], subject="model.mlir", what="compiling", timeout_s=1.0)
    assert_child_killed(pid_file)


def test_a_tune_candidate_that_hangs_is_recorded_as_timed_out_and_leaves_nothing_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, pid_file = hanging_tool(tmp_path)
    monkeypatch.setattr(tune_measure, "tool_path", lambda name: script)
    source = tmp_path / "model.mlir"
    source.write_text("module {}\n")
    build = tune_measure.compile_variant(source, tmp_path / "builds", "candidate", timeout_s=1.0)
    assert build.vmfb is None and build.error == "timed out after 1.0 s"
    assert_child_killed(pid_file)


def test_a_failure_shows_irees_error_lines_not_the_ir_dump_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`iree-compile` that fails to serialize an executable writes its error lines first and
    then the executable's LLVM IR, 9,000 lines for a JAX model with `searchsorted`: the last
    30 lines showed IR, not the error. An error located in the user's file keeps the source
    line and caret MLIR prints under it."""
    script = tmp_path / "iree-compile"
    dump = "".join(f"echo '  %{i} = llvm.load %p : !llvm.ptr' >&2\n" for i in range(100))
    script.write_text(
        "#!/bin/sh\n"
        "echo 'model.py:5:22: error: failed to legalize stablehlo.custom_call' >&2\n"
        "echo '    values, vectors = jnp.linalg.eigh(x)' >&2\n"
        "echo '                     ^' >&2\n"
        "echo '<unknown>:0: error: LLVM Translation failed for operation: cast' >&2\n"
        f"{dump}"
        "echo '<unknown>:0: error: failed to serialize executables' >&2\n"
        "echo '<unknown>:0: note: see current operation:' >&2\n"
        "exit 1\n"
    )
    script.chmod(0o755)
    monkeypatch.setattr(tools, "tool_path", lambda name: script)
    with pytest.raises(CaptureError) as caught:
        tools.run_tool("iree-compile", [], subject="m.mlir", what="compiling", timeout_s=30)
    assert str(caught.value) == (
        "m.mlir: compiling failed (iree-compile exit code 1); IREE says:\n"
        "model.py:5:22: error: failed to legalize stablehlo.custom_call\n"
        "    values, vectors = jnp.linalg.eigh(x)\n"
        "                     ^\n"
        "<unknown>:0: error: LLVM Translation failed for operation: cast\n"
        "<unknown>:0: error: failed to serialize executables\n"
        "(106 lines of output in all; the error lines are shown)"
    )


def test_a_failure_without_error_lines_shows_the_last_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "iree-compile"
    script.write_text('#!/bin/sh\nfor i in $(seq 1 40); do echo "line $i" >&2; done\nexit 2\n')
    script.chmod(0o755)
    monkeypatch.setattr(tools, "tool_path", lambda name: script)
    with pytest.raises(CaptureError) as caught:
        tools.run_tool("iree-compile", [], subject="m.mlir", what="compiling", timeout_s=30)
    said = str(caught.value).split("IREE says:\n")[1].splitlines()
    assert said == [f"line {i}" for i in range(11, 41)]
