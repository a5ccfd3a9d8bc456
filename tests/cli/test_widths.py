"""`top` and `diff` in a terminal of 60, 80 and 120 columns: every line fits, rows stay whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from irprof.cli.main import main

MLP_RUN = Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_run"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("widths")
    out = []
    for name in ("a", "b"):
        shutil.copytree(MLP_RUN, root / name)
        assert main(["annotate", str(root / name)]) == 0
        out.append(root / name)
    return out[0], out[1]


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_top_and_diff_fit_the_terminal(
    width: int,
    runs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert main(["top", str(runs[0]), "-n", "5"]) == 0
    top = capsys.readouterr().out
    assert all(len(line) <= width for line in top.splitlines()), top
    assert len(table_rows(top)) == 5, top  # one line per row
    assert "jit(mlp)/conv_general_dilated" in top  # the hottest op, whole
    assert main(["diff", str(runs[0]), str(runs[1]), "-n", "3"]) == 0
    diff = capsys.readouterr().out
    rows = table_rows(diff)
    assert all(len(line) <= width for line in rows), diff
    assert len(rows) == 9, diff  # three tables of three rows, none wrapped
    assert diff.count("delta %") == 3  # the figures survive at every width
