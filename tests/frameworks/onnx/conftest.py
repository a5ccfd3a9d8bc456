"""The ONNX bundles captured once per session (ORT runs these models in ~1-5 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.cli.main import main

HERE = Path(__file__).parent
EXAMPLES = HERE.parents[2] / "examples"


def _captured(folder: Path, script: str, *extra: str) -> Path:
    run = folder / Path(script).stem
    argv = ["capture", "onnx", str(EXAMPLES / script), "-o", str(run), "--steps", "4", *extra]
    assert main(argv) == 0
    assert main(["annotate", str(run)]) == 0
    return run


@pytest.fixture(scope="session")
def mlp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`examples/onnx_mlp.py` captured (batch 3) and annotated."""
    return _captured(tmp_path_factory.mktemp("onnx"), "onnx_mlp.py", "--dim", "batch=3")


@pytest.fixture(scope="session")
def transformer_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`examples/onnx_transformer.py` (torch.onnx.export) captured (batch 2) and annotated."""
    return _captured(tmp_path_factory.mktemp("onnx"), "onnx_transformer.py", "--dim", "batch=2")
