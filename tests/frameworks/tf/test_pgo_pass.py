"""`irprof-tf-pgo`: annotate from a TF run bundle in a pipeline; TensorFlow re-parses the result."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from irprof.errors import CorrelationError, PipelineError
from irprof.frameworks.tf.pgo_pass import TfPgoPass
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import get_profile, get_summary
from irprof.passes import get_all_passes
from irprof.passes.pipeline import run_pipeline

TF_FIXTURES = Path(__file__).parents[2] / "fixtures" / "tf"
CNN = TF_FIXTURES / "cnn-infer"

# Run TensorFlow's own pass pipeline on annotated text, in a child so this process stays TF-free.
TF_PIPELINE = textwrap.dedent(
    """
    import sys
    import tensorflow as tf
    text = open(sys.argv[1]).read()
    out = tf.mlir.experimental.run_pass_pipeline(text, sys.argv[2], show_debug_info=True)
    open(sys.argv[3], "w").write(out)
    """
)


def annotated_cnn(level: str = "tf") -> str:
    """The CNN fixture's IR after `irprof-tf-pgo`, as text."""
    module = load_module(CNN / "ir" / f"{level}.mlir", make_context())
    run_pipeline(module, f"builtin.module(irprof-tf-pgo{{bundle={CNN} level={level}}})")
    return print_module(module)


def profiled_ops(text: str) -> dict[str, int]:
    """Runtime name -> total_ns of every annotated op in MLIR text."""
    module = load_module(text, make_context())
    found = {}
    for info in derive_op_infos(module):
        data = get_profile(info.op)
        if data is not None and info.keys.name:
            found[info.keys.name] = data.total_ns
    return found


def test_registered_in_the_pass_registry() -> None:
    assert get_all_passes().get("irprof-tf-pgo") is TfPgoPass


def test_pipeline_annotates_every_executed_op_and_the_module() -> None:
    module = load_module(CNN / "ir" / "tf.mlir", make_context())
    run_pipeline(module, f"builtin.module(irprof-tf-pgo{{run={CNN}}},canonicalize)")
    profiled = {
        info.op_name for info in derive_op_infos(module) if get_profile(info.op) is not None
    }
    assert {"tf.Conv2D", "tf.BiasAdd", "tf.Relu", "tf.MaxPool", "tf.MatMul", "tf.Softmax"} <= (
        profiled
    )
    summary = get_summary(module)
    assert summary is not None and summary["framework"] == "tf"


def test_unknown_level_is_a_pipeline_error() -> None:
    module = load_module(CNN / "ir" / "tf.mlir", make_context())
    with pytest.raises(PipelineError, match="level"):
        run_pipeline(module, f"builtin.module(irprof-tf-pgo{{bundle={CNN} level=hlo}})")


def test_profile_of_another_model_fails_the_pipeline() -> None:
    # GIVEN the nested-function model's IR and the CNN's run bundle
    module = load_module(TF_FIXTURES / "nested" / "ir" / "tf.mlir", make_context())
    # WHEN the pipeline annotates THEN it refuses: almost nothing of the profile matches
    with pytest.raises(CorrelationError, match="another model"):
        run_pipeline(module, f"builtin.module(irprof-tf-pgo{{bundle={CNN}}})")
    assert get_summary(module) is None
    # unless explicitly allowed
    run_pipeline(module, f"builtin.module(irprof-tf-pgo{{bundle={CNN} allow-low-coverage=true}})")
    assert get_summary(module) is not None


@pytest.mark.tf
def test_tensorflow_reparses_the_annotated_ir_and_keeps_annotations(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    text = annotated_cnn("tf")
    before = profiled_ops(text)
    source, result = tmp_path / "annotated.mlir", tmp_path / "standard.mlir"
    source.write_text(text)
    subprocess.run(
        [sys.executable, "-c", TF_PIPELINE, str(source), "tf-standard-pipeline", str(result)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    after = profiled_ops(result.read_text())
    # Every annotation survives TensorFlow's own tf-standard-pipeline with its value.
    assert after == before
    assert len(before) >= 15
