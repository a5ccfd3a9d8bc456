"""`IRPROF_MLIR_THREADS=0` makes contexts single-threaded, so a forked child can use MLIR.

Run in a fresh interpreter with the variable set from the start, as `make mutation` does (this
test process has used threaded contexts already).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from irprof.mlir.context import THREADS_ENV

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mlir" / "iree.flow.mlir"
SCRIPT = """
import os, sys, time
from pathlib import Path
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.passes.pipeline import run_pipeline
fixture = Path(sys.argv[1])
load_module(fixture, make_context())
pid = os.fork()
if pid == 0:
    run_pipeline(load_module(fixture, make_context()), "builtin.module(canonicalize)")
    os._exit(0)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
sys.exit("the forked child hung")
"""


def test_single_threaded_contexts_survive_a_fork() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(FIXTURE)],
        env={**os.environ, THREADS_ENV: "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
