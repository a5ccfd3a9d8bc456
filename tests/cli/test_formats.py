"""`top --format csv|json` and `diff --format csv|json`: every row, exact nanoseconds, nothing
shortened, for scripts; the figures equal the bundle's own opprofile."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module", name="run")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("formats") / "run"
    shutil.copytree(FIXTURES / "jax" / "mlp_run", root)
    annotate_bundle(RunBundle(root))
    return root


def test_top_csv_has_every_op_with_exact_totals(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["top", str(run), "--format", "csv", "-n", "1000", "--stat", "sum"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    # Independently: the measured ops' totals in the annotated IR's text (calls that repeat
    # their callees' time left out), every row by op with fused groups as one row.
    text = (run / "annotated" / "stablehlo.mlir").read_text()
    profiles = [
        re.search(r"irprof\.profile = \{([^{}]*)\}", line)
        for line in text.splitlines()
        if " call @" not in line  # a call's profile repeats its callee's ops' time
    ]
    expected = sum(
        int(re.search(r"(?<![a-z_])total_ns = (\d+)", found.group(1)).group(1))  # type: ignore[union-attr]
        for found in profiles
        if found is not None and ':inclusive"' not in found.group(1)
    )
    assert sum(int(row["total_ns"]) for row in rows) == expected > 0
    # ... and the IR holds all the attributed time: no op's profile is lost when MLIR prints it
    # (a reduce printed in its compact form drops its body op's attributes).
    coverage = json.loads((run / "coverage.json").read_text())["levels"]["stablehlo"]
    assert expected == coverage["attributed_ns"]
    assert all(row["location"] for row in rows)
    assert "…" not in "".join(row["key"] + row["location"] for row in rows)


def test_top_json_equals_csv(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["top", str(run), "--format", "json", "-n", "5"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main(["top", str(run), "--format", "csv", "-n", "5"]) == 0
    as_csv = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["key"] for row in as_json] == [row["key"] for row in as_csv]
    assert [row["stat_ns"] for row in as_json] == [int(row["stat_ns"]) for row in as_csv]
    assert len(as_json) == 5


def test_diff_json_rows_of_a_run_against_itself(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", str(run), str(run), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(row["delta_ns"] == 0 for row in rows if "delta_ns" in row)


def test_an_unknown_format_is_a_usage_error(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["top", str(run), "--format", "xml"]) == 2
    assert "--format 'xml'" in capsys.readouterr().err
