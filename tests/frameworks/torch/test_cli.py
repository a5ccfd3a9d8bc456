"""`irprof capture torch` and `irprof annotate` on torch bundles, through `main()` in-process."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.coverage import load_coverages

TORCH_FIXTURES = Path(__file__).parents[2] / "fixtures" / "torch"


def test_annotate_torch_bundle_writes_ir_profile_and_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN a torch bundle WHEN annotating both levels THEN files and coverage appear."""
    run = tmp_path / "cnn"
    shutil.copytree(TORCH_FIXTURES / "cnn", run)
    assert main(["annotate", str(run), "--level", "torch"]) == 0
    assert main(["annotate", str(run), "--level", "linalg"]) == 0
    out = capsys.readouterr().out
    assert "time coverage" in out and "100.0%" in out
    assert "irprof.profile" in (run / "annotated" / "torch.mlir").read_text()
    assert "irprof.profile" in (run / "annotated" / "linalg.mlir").read_text()
    assert (run / "opprofile.torch.json").is_file() and (run / "opprofile.linalg.json").is_file()
    coverages = load_coverages(run / "coverage.json")
    assert set(coverages) == {"torch", "linalg"}
    assert coverages["torch"].time_coverage >= 0.99


def test_capture_torch_missing_script_is_exit_2_without_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad argument: one clear message, exit code 2, no bundle."""
    code = main(["capture", "torch", str(tmp_path / "nope.py"), "-o", str(tmp_path / "run")])
    assert code == 2
    assert "no such script" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_capture_torch_refuses_unknown_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--levels only knows torch and linalg."""
    script = tmp_path / "m.py"
    script.write_text("x = 1\n")
    code = main(
        ["capture", "torch", str(script), "-o", str(tmp_path / "run"), "--levels", "torch,llvm"]
    )
    assert code == 2
    assert "--levels" in capsys.readouterr().err


def test_capture_torch_refuses_an_unknown_mode_and_train_with_iree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--mode is infer or train; a training step runs eager PyTorch only."""
    script = tmp_path / "m.py"
    script.write_text("x = 1\n")
    out = str(tmp_path / "run")
    assert main(["capture", "torch", str(script), "-o", out, "--mode", "fit"]) == 2
    assert "--mode 'fit': expected infer or train" in capsys.readouterr().err
    assert (
        main(["capture", "torch", str(script), "-o", out, "--mode", "train", "--backend", "iree"])
        == 2
    )
    assert "--mode train profiles eager PyTorch only" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


COND_MODEL = """
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))


def irprof_model():
    return {"model": Gate(), "inputs": (torch.ones(3),)}
"""


@pytest.mark.timeout(600)
def test_capture_torch_names_control_flow_the_importer_cannot_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """torch.cond exports, but IREE's FX importer has no form for it: exit 2 naming the
    script and the construct, instead of a traceback, and no bundle."""
    script = tmp_path / "gate.py"
    script.write_text(COND_MODEL)
    assert main(["capture", "torch", str(script), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{script}: IREE's FX importer cannot import the exported program" in err
    assert "'cond'" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


COMPILED_MODEL = """
import torch


def irprof_model():
    return {"model": torch.compile(torch.nn.Linear(4, 2)), "inputs": (torch.ones(3, 4),)}
"""


@pytest.mark.timeout(600)
def test_capture_torch_refuses_a_compiled_module_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A torch.compile'd module profiles as Inductor's kernels, which join no FX node: annotate
    found 0% and blamed the trace. The capture refuses it before running, with the fix."""
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED_MODEL)
    assert main(["capture", "torch", str(script), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "returned a torch.compile'd module" in err and "`compiled._orig_mod`" in err
    assert not (tmp_path / "run").exists()
