"""Commands at once on one bundle (issue 27, item 3): no coverage record is lost.

GIVEN a copy of the TF CNN bundle, WHEN two processes annotate different levels at the same
moment (both wait on a start file after importing irprof), THEN `coverage.json` holds both levels,
round after round.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

FIXTURES = Path(__file__).parents[1] / "fixtures"
CNN = FIXTURES / "tf" / "cnn-infer"
ROUNDS = 4
# Import everything first, then start together: the race is between the commands, not imports.
ANNOTATE_WHEN_TOLD = """
import sys, time
from pathlib import Path
from irprof.cli.main import main
import irprof.annotation, irprof.frameworks.tf.correlate
go = Path(sys.argv[1])
Path(sys.argv[4]).touch()
while not go.exists():
    time.sleep(0.005)
sys.exit(main(["annotate", sys.argv[2], "--level", sys.argv[3]]))
"""


def test_two_annotates_of_one_bundle_keep_both_coverage_records(tmp_path: Path) -> None:
    for round_number in range(ROUNDS):
        bundle = Path(shutil.copytree(CNN, tmp_path / f"run-{round_number}"))
        go = tmp_path / f"go-{round_number}"
        children = [
            subprocess.Popen(
                [
                    *(sys.executable, "-c", ANNOTATE_WHEN_TOLD, str(go), str(bundle), level),
                    str(tmp_path / f"ready-{round_number}-{level}"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for level in ("tf", "tf-standard")
        ]
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob(f"ready-{round_number}-*"))) < 2:
            assert time.monotonic() < deadline and all(c.poll() is None for c in children)
            time.sleep(0.01)
        go.touch()
        errors = [child.communicate(timeout=300)[1] for child in children]
        assert [child.returncode for child in children] == [0, 0], errors
        levels = orjson.loads((bundle / "coverage.json").read_bytes())["levels"]
        assert sorted(levels) == ["tf", "tf-standard"], f"round {round_number}: {sorted(levels)}"
        assert (bundle / "annotated" / "tf.mlir").is_file()
        assert (bundle / "annotated" / "tf-standard.mlir").is_file()
        assert not list(bundle.rglob("*.irprof-stage-*"))
