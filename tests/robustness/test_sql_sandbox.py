"""`irprof sql` is a sandbox by default: the views, nothing else on the file system; full
DuckDB only with `--allow-external`. A dataset's partitions never lead out of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irprof.cli.main import main

EVENTS = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    return path


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.csv"
    path.write_text("user,password\nroot,hunter2\n")
    return path


def escapes(secret: Path, tmp_path: Path) -> dict[str, str]:
    return {
        "read a file": f"SELECT * FROM read_csv('{secret}')",
        "write a file": f"COPY (SELECT 1) TO '{tmp_path / 'written.csv'}'",
        "attach a database": f"ATTACH '{tmp_path / 'other.duckdb'}'",
        "install an extension": "INSTALL httpfs",
        "turn the sandbox off": "SET enable_external_access = true",
    }


@pytest.mark.parametrize(
    "escape",
    ["read a file", "write a file", "attach a database", "install an extension",
     "turn the sandbox off"],
)  # fmt: skip
@pytest.mark.parametrize("form", ["json", "parquet"])
def test_queries_cannot_touch_the_file_system(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    trace: Path,
    secret: Path,
    escape: str,
    form: str,
) -> None:
    source = trace
    if form == "parquet":
        source = tmp_path / "trace.parquet"
        assert main(["trace", "convert", str(trace), "-o", str(source)]) == 0
    capsys.readouterr()
    assert main(["sql", str(source), escapes(secret, tmp_path)[escape], "--csv"]) == 2
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out
    assert "sandboxed" in captured.err and "--allow-external" in captured.err
    assert not (tmp_path / "written.csv").exists() and not (tmp_path / "other.duckdb").exists()
    # The views themselves still work, Parquet read where it lies
    assert main(["sql", str(source), "SELECT count(*) AS n FROM events", "--csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "1"]


def test_allow_external_gives_full_duckdb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: Path, secret: Path
) -> None:
    query = f"SELECT password FROM read_csv('{secret}')"
    assert main(["sql", str(trace), query, "--csv", "--allow-external"]) == 0
    assert "hunter2" in capsys.readouterr().out


def test_export_still_writes_parquet_and_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: Path
) -> None:
    for name in ("out.parquet", "out.csv"):
        assert (
            main(["sql", str(trace), "SELECT name, dur_ns FROM events", "-o", str(tmp_path / name)])
            == 0
        )
    assert (tmp_path / "out.csv").read_text().replace('"', "").splitlines() == [
        "name,dur_ns",
        "a,2000",
    ]


def test_a_dataset_partition_linked_out_of_the_dataset_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in (0, 1):
        (ranks / f"rank{rank}.json").write_text(json.dumps({"traceEvents": EVENTS}))
    dataset = tmp_path / "ds"
    assert main(["trace", "convert", str(ranks), "-o", str(dataset)]) == 0
    # GIVEN rank 1's partition file replaced by a link to a Parquet file outside the dataset
    partition = next(dataset.glob("rank=1/*.parquet"))
    outside = tmp_path / "outside.parquet"
    partition.rename(outside)
    partition.symlink_to(outside)
    capsys.readouterr()
    assert main(["sql", str(dataset), "SELECT count(*) FROM events", "--csv"]) == 2
    err = capsys.readouterr().err
    assert str(partition) in err and "symbolic link" in err
