"""Files named by pass options are inputs like any other (issue 27, item 12).

GIVEN `irprof opt` on a golden module, WHEN a pass's path option names a device, a FIFO, a
directory, a missing file or one over the size limit, THEN the pipeline is refused before anything
is read, exit 2, naming the pass and the option.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irprof.cli.main import main

GOLDEN = Path(__file__).parents[1] / "golden"
MODULE = GOLDEN / "annotate.mlir"
PROFILE = GOLDEN / "annotate.opprofile.json"


def opt(capsys: pytest.CaptureFixture[str], pass_text: str) -> tuple[int, str]:
    code = main(["opt", str(MODULE), f"--pass-pipeline=builtin.module({pass_text})"])
    return code, capsys.readouterr().err


def opt_in_child(pass_text: str) -> subprocess.CompletedProcess[str]:
    """`irprof opt` in a child: the old code hung on a FIFO and read /dev/zero until memory ran
    out, so a hang is a timeout and the address space is capped (MemoryError, not OOM kills)."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))"
    code = f"{limit}; import runpy; runpy.run_module('irprof')"
    pipeline = f"--pass-pipeline=builtin.module({pass_text})"
    return subprocess.run(
        [sys.executable, "-c", code, "opt", str(MODULE), pipeline],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_device_as_profile_is_refused_at_once() -> None:
    done = opt_in_child("irprof-annotate{profile=/dev/zero}")
    assert done.returncode == 2, done.stderr
    assert "irprof-annotate" in done.stderr and "profile=/dev/zero" in done.stderr
    assert "character device" in done.stderr


@pytest.mark.parametrize("pass_name", ["irprof-annotate", "irprof-reattach"])
def test_a_fifo_or_directory_as_profile_is_refused(tmp_path: Path, pass_name: str) -> None:
    fifo = tmp_path / "profile.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (tmp_path, "a directory")):
        done = opt_in_child(f"{pass_name}{{profile={path}}}")
        assert done.returncode == 2, done.stderr
        assert f"option 'profile={path}'" in done.stderr and kind in done.stderr


def test_a_missing_profile_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    code, err = opt(capsys, f"irprof-annotate{{profile={missing}}}")
    assert code == 2 and f"option 'profile={missing}'" in err
    assert f"{missing}: no such opprofile file" in err


def test_a_profile_over_the_size_limit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import irprof.passes.annotate

    monkeypatch.setattr(irprof.passes.annotate, "OPPROFILE_LIMIT_BYTES", 100)
    profile = Path(shutil.copy(PROFILE, tmp_path / "p.json"))
    code, err = opt(capsys, f"irprof-annotate{{profile={profile}}}")
    assert code == 2 and "more than the limit of 100" in err


def test_a_regular_profile_still_annotates(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = opt(capsys, f"irprof-annotate{{profile={PROFILE}}}")
    assert code == 0, err
