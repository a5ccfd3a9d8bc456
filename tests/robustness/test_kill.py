"""A killed `annotate` never leaves a half-annotated bundle (issue 27, item 4 under SIGKILL).

`annotate` stages its three outputs (annotated IR, the level's opprofile, coverage.json) and
commits them by renames listed first in a journal. GIVEN a copy of a real JAX bundle:
- WHEN the process is SIGKILLed between two of those renames (planted: the second rename kills
  the process), THEN readers refuse the bundle naming the journal (exit 2), and the next
  `annotate` completes the commit: the bundle then equals a cleanly annotated one;
- WHEN `annotate` is SIGKILLed at random moments, THEN the bundle is either as it was (no
  annotated output, no coverage record) or complete, once any pending journal is completed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from irprof.bundle import COMMIT_JOURNAL, RunBundle

FIXTURES = Path(__file__).parents[1] / "fixtures"
MLP = FIXTURES / "jax" / "mlp_run"
OUTPUTS = ("annotated/stablehlo.mlir", "opprofile.stablehlo.json", "coverage.json")

KILL_AT_SECOND_RENAME = """
import os, signal, sys
import irprof.fileio as fileio
from irprof.cli.main import main
real_replace, calls = os.replace, []
def replace(src, dst):
    if ".irprof-stage-" in os.fspath(src) and ".irprof-stage-" not in os.fspath(dst):
        calls.append(dst)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst)
fileio.os.replace = replace
sys.exit(main(["annotate", sys.argv[1]]))
"""


def _irprof(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "irprof", *argv], capture_output=True, text=True, check=False
    )


def _state(root: Path) -> dict[str, bytes | None]:
    return {
        name: (root / name).read_bytes() if (root / name).exists() else None for name in OUTPUTS
    }


def _comparable(state: dict[str, bytes | None]) -> dict[str, object]:
    """The outputs without what differs between two clean runs (coverage's timestamps)."""
    out: dict[str, object] = {}
    for name, data in state.items():
        if data is None or not name.endswith(".json"):
            out[name] = data
            continue
        document = orjson.loads(data)
        out[name] = sorted(document) if isinstance(document, dict) else document
    return out


@pytest.fixture(scope="module", name="clean")
def fixture_clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes | None]:
    root = tmp_path_factory.mktemp("clean") / "run"
    shutil.copytree(MLP, root)
    assert _irprof("annotate", str(root)).returncode == 0
    return _state(root)


def test_a_kill_between_renames_is_refused_then_completed(
    tmp_path: Path, clean: dict[str, bytes | None]
) -> None:
    root = tmp_path / "run"
    shutil.copytree(MLP, root)
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT_SECOND_RENAME, str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    assert (root / COMMIT_JOURNAL).exists()
    # Half the renames were done: readers must not use the bundle as if annotate had finished.
    refused = _irprof("top", str(root))
    assert refused.returncode == 2
    assert COMMIT_JOURNAL in refused.stderr and "annotate" in refused.stderr
    # Completing the commit (what the next annotate does first) gives the clean outputs.
    assert RunBundle(root).complete_interrupted_update() >= 0
    assert not (root / COMMIT_JOURNAL).exists()
    assert _comparable(_state(root)) == _comparable(clean)
    assert not [p for p in root.rglob("*") if ".irprof-stage-" in p.name]
    assert _irprof("top", str(root)).returncode == 0


def test_the_next_annotate_completes_an_interrupted_commit(tmp_path: Path) -> None:
    root = tmp_path / "run"
    shutil.copytree(MLP, root)
    subprocess.run([sys.executable, "-c", KILL_AT_SECOND_RENAME, str(root)], check=False)
    assert (root / COMMIT_JOURNAL).exists()
    again = _irprof("annotate", str(root))
    assert again.returncode == 0, again.stderr
    assert not (root / COMMIT_JOURNAL).exists()
    assert all(value is not None for value in _state(root).values())


def test_a_forged_journal_naming_outside_files_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "run"
    shutil.copytree(MLP, root)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (root / "evil").write_text("x")
    (root / COMMIT_JOURNAL).write_text(orjson.dumps([["evil", "../victim.txt"]]).decode())
    result = _irprof("annotate", str(root))
    assert result.returncode == 2 and "outside" in result.stderr
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("seed", range(4))
def test_annotate_killed_at_a_random_moment_leaves_nothing_or_everything(
    tmp_path: Path, seed: int, clean: dict[str, bytes | None]
) -> None:
    root = tmp_path / "run"
    shutil.copytree(MLP, root)
    before = _state(root)
    child = subprocess.Popen(
        [sys.executable, "-m", "irprof", "annotate", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Imports take most of a second; the commit comes at the end of 1-3 s of work.
    time.sleep(random.Random(seed).uniform(0.5, 3.0))
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    if (root / COMMIT_JOURNAL).exists():
        RunBundle(root).complete_interrupted_update()
    after = _state(root)
    assert after == before or _comparable(after) == _comparable(clean)
    assert not [p for p in root.rglob("*") if ".irprof-stage-" in p.name and p.is_file()] or (
        after == before
    )
