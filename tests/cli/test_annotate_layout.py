"""`irprof annotate --layout compact`: what `top` shows is the same, bad choices exit 2."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.mlir.profile_table import ROW_ATTR, TABLE_ATTR

MLP_RUN = Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_run"
ANNOTATED = Path("annotated") / "stablehlo.mlir"


def _run(tmp_path: Path, name: str) -> Path:
    run = tmp_path / name
    shutil.copytree(MLP_RUN, run)
    return run


def _top(run: Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    capsys.readouterr()
    assert main(["top", str(run), *options]) == 0
    return capsys.readouterr().out


def test_top_on_a_compact_bundle_prints_the_per_op_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    per_op, compact = _run(tmp_path, "per_op"), _run(tmp_path, "compact")
    assert main(["annotate", str(per_op)]) == 0
    assert main(["annotate", str(compact), "--layout", "compact"]) == 0
    text = (compact / ANNOTATED).read_text()
    assert text.count(TABLE_ATTR) == 1 and "irprof.profile =" not in text
    assert len(re.findall(rf"{ROW_ATTR} = \d+ : i32", text)) == 24  # the ops annotate reports
    for options in ((), ("--by", "scope"), ("--limit", "50", "--expand-groups")):
        assert _top(compact, capsys, *options) == _top(per_op, capsys, *options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--layout", "compact", "--attr", "ts-dur"], "--layout compact stores the irprof"),
        (["--layout", "dense"], "--layout 'dense': expected per-op|compact"),
    ],
)
def test_a_layout_that_cannot_be_written_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    run = _run(tmp_path, "run")
    assert main(["annotate", str(run), *options]) == 2
    assert message in capsys.readouterr().err
    assert not (run / "annotated").exists()
    assert not list(run.glob("opprofile.*.json"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ((rf"{ROW_ATTR} = 0 : i32", f"{ROW_ATTR} = 999 : i32"), "is outside the profile table"),
        ((r"version = 1 : i64", "version = 7 : i64"), "version 7 is not 1"),
        ((r"count = dense<", "kount = dense<"), "column 'count' is missing"),
    ],
)
def test_top_on_a_damaged_compact_table_names_the_file_and_exits_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: tuple[str, str],
    message: str,
) -> None:
    run = _run(tmp_path, "run")
    assert main(["annotate", str(run), "--layout", "compact"]) == 0
    path = run / ANNOTATED
    text, count = re.subn(edit[0], edit[1], path.read_text(), count=1)
    assert count == 1
    path.write_text(text)
    capsys.readouterr()
    assert main(["top", str(run)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err.replace("\n", "") and message in err.replace("\n", "")


def test_the_pass_takes_the_layout_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = Path(__file__).parents[1] / "golden"
    source, profile = golden / "annotate.mlir", golden / "annotate.opprofile.json"
    out = tmp_path / "out.mlir"
    pipeline = f"builtin.module(irprof-annotate{{profile={profile} layout=compact}})"
    assert main(["opt", str(source), f"--pass-pipeline={pipeline}", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.count(f"{ROW_ATTR} = ") == 2 and "rows = 2 : i64" in text
    bad = f"builtin.module(irprof-annotate{{profile={profile} attr=ts-dur layout=compact}})"
    assert main(["opt", str(source), f"--pass-pipeline={bad}", "-o", str(out)]) == 2
    assert "option 'layout=compact' stores the irprof.profile" in capsys.readouterr().err
