"""End to end with real TensorFlow: capture the example CNN in a child process, then annotate.

Two captures per session (about 10 s each): inference (all IR levels, Python tracer on) and one
training step. Everything else here reuses them or fails before TensorFlow starts.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.correlate.base import CorrelationOptions
from irprof.errors import CaptureError, UsageError
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import get_profile

pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.tf, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tf_cnn.py"
FORBIDDEN = ("/work/", "/tmp/", "/root/", str(Path.home()))
# Also the time of the kernels only the untimed reference steps recorded (asked for).
WITH_REFERENCE = CorrelationOptions(reference_time=True)


@pytest.fixture(scope="session")
def infer_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The session's inference capture, through the CLI: every level, Python tracer level 1."""
    out = tmp_path_factory.mktemp("tf_infer") / "run"
    argv = ["capture", "tf", str(EXAMPLE), "-o", str(out), "--steps", "10", "--warmup", "1"]
    assert main([*argv, "--python-level", "1", "--post-grappler"]) == 0
    return RunBundle(out)


@pytest.fixture(scope="session")
def train_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The session's training capture (oneDNN off, to cover the Eigen kernels live)."""
    out = tmp_path_factory.mktemp("tf_train") / "run"
    options = TfCaptureOptions(mode="train", steps=3, warmup=1, onednn="off")
    return capture_tf(EXAMPLE, out, options)


def test_bundle_layout_and_manifest(infer_bundle: RunBundle) -> None:
    manifest = infer_bundle.manifest()
    assert manifest.framework == "tf"
    assert manifest.ir_levels == ("tf", "tf-standard", "post-grappler")
    assert manifest.steps == 10
    assert manifest.versions["tensorflow"] == "2.21.0"
    assert all(infer_bundle.ir_path(level).is_file() for level in manifest.ir_levels)
    timed, reference = infer_bundle.trace_paths()
    assert timed.name.endswith(".xplane.pb") and reference.name.endswith(".xplane.pb")
    assert infer_bundle.primary_trace_path == timed
    assert manifest.options["reference_trace"] == str(reference.relative_to(infer_bundle.root))
    # The timed steps recorded what the framework's profiler records by default; the reference
    # steps the requested levels, as recorded by the profiler itself.
    assert manifest.options["recorded_tracer_options"] == {
        "host_tracer_level": 2,
        "python_tracer_level": 0,
        "device_tracer_level": 1,
    }
    assert manifest.options["reference_tracer_options"] == {
        "host_tracer_level": 3,
        "python_tracer_level": 1,
        "device_tracer_level": 1,
    }


def test_capture_records_its_overhead(infer_bundle: RunBundle) -> None:
    """The manifest holds median step times without profiler, under the framework's profiler at
    its defaults and in irprof's timed steps, which run under that very profiler."""
    overhead = infer_bundle.manifest().options["overhead"]
    assert overhead["steps"] == 10
    assert all(overhead[f] > 0 for f in ("no_profiler_ns", "profiler_ns", "irprof_ns"))
    assert "tf.profiler.experimental.start" in overhead["timed_steps"]


def test_ir_is_portable_and_names_the_script(infer_bundle: RunBundle) -> None:
    text = infer_bundle.ir_path("tf").read_text()
    assert not any(prefix in text for prefix in FORBIDDEN)
    assert 'loc("tf_cnn.py":' in text
    assert '"<sys.path>/keras/' in text
    assert not Path(infer_bundle.manifest().model).is_absolute()


def test_locations_hold_no_frame_of_irprof_or_the_launch(infer_bundle: RunBundle) -> None:
    context = make_context()
    for level in infer_bundle.manifest().ir_levels:
        text = infer_bundle.ir_path(level).read_text()
        assert "irprof/capture" not in text and "runpy" not in text, level
        infos = derive_op_infos(load_module(infer_bundle.ir_path(level), context))
        # Ops of the model's layers (scoped names; TF's own NoOp/Identity outputs are not).
        chains = [i.keys.chain for i in infos if "/" in (i.key.name or "") and i.keys.chain]
        if level != "post-grappler":  # convert_graph_def keeps node names, no Python frames
            # The model's own line and the real TF/Keras frames stay in every layer op's chain.
            assert chains and all(any(f.startswith("tf_cnn.py:") for f in c) for c in chains)
            assert all(any(f.startswith("<sys.path>/keras/") for f in c) for c in chains)


def test_every_level_parses_and_covers_the_profile(infer_bundle: RunBundle) -> None:
    for level in infer_bundle.manifest().ir_levels:
        load_module(infer_bundle.ir_path(level), make_context())
        coverage = CORRELATOR.correlate(infer_bundle, level, CorrelationOptions()).coverage
        # Argument copy-in / result copy-out have no op and are listed with that reason; their
        # share of a 2 ms step swings with machine load, so the 99% is over the rest.
        plumbing = sum(
            event.total_ns
            for event in coverage.unmatched_events
            if event.reason.startswith(("function argument copy-in", "function result copy-out"))
        )
        assert coverage.attributed_ns / (coverage.profiled_ns - plumbing) >= 0.99, (
            level,
            coverage.unmatched_events,
        )
        assert coverage.time_coverage >= 0.95, (level, coverage.unmatched_events)
        # The cheap kernels only the reference steps record get ops covered when their time is
        # asked for; by default those ops are listed as run but untimed.
        full = CORRELATOR.correlate(infer_bundle, level, WITH_REFERENCE).coverage
        assert full.nontrivial_coverage >= 0.95, (level, full.unmatched_ops)


def test_training_step_is_covered(train_bundle: RunBundle) -> None:
    assert train_bundle.manifest().options["onednn_active"] is False
    coverage = CORRELATOR.correlate(train_bundle, "tf-standard", WITH_REFERENCE).coverage
    assert coverage.time_coverage >= 0.99
    assert coverage.nontrivial_coverage >= 0.95
    raw = CORRELATOR.correlate(train_bundle, "tf", WITH_REFERENCE).coverage
    assert raw.time_coverage >= 0.99
    # The raw training graph holds ops grappler pruned or folded: reported, not counted as misses.
    assert raw.ops_not_executed > 0
    assert raw.nontrivial_coverage >= 0.95


def test_annotate_command_marks_the_hot_ops(
    infer_bundle: RunBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = RunBundle(Path(shutil.copytree(infer_bundle.root, tmp_path / "run")))
    assert main(["annotate", str(run.root), "--level", "tf"]) == 0
    assert "time coverage" in capsys.readouterr().out
    module = load_module(run.annotated_path("tf"), make_context())
    profiled = {
        info.op_name: get_profile(info.op)
        for info in derive_op_infos(module)
        if get_profile(info.op) is not None
    }
    assert {"tf.Conv2D", "tf.BiasAdd", "tf.Relu", "tf.MaxPool", "tf.MatMul", "tf.Softmax"} <= set(
        profiled
    )


def test_annotate_bundle_on_training(train_bundle: RunBundle, tmp_path: Path) -> None:
    run = RunBundle(Path(shutil.copytree(train_bundle.root, tmp_path / "run")))
    outcome = annotate_bundle(run, level="tf")
    assert outcome.coverage.time_coverage >= 0.99
    assert "BiasAddGrad" in run.annotated_path("tf").read_text()


def test_failing_script_reports_its_stderr(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        textwrap.dedent(
            """
            def irprof_model(mode="infer"):
                raise RuntimeError("the model refuses to build")
            """
        )
    )
    out = tmp_path / "run"
    with pytest.raises(CaptureError, match="the model refuses to build"):
        capture_tf(script, out, TfCaptureOptions(steps=1, warmup=0))
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["broken.py"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (TfCaptureOptions(steps=0), "steps"),
        (TfCaptureOptions(host_level=4), "host level"),
        (TfCaptureOptions(python_level=2), "python level"),
        (TfCaptureOptions(mode="serve"), "mode"),
        (TfCaptureOptions(onednn="maybe"), "onednn"),
    ],
)
def test_bad_options_fail_before_running(
    options: TfCaptureOptions, message: str, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match=message):
        capture_tf(EXAMPLE, tmp_path / "run", options)
    assert not (tmp_path / "run").exists()


def test_a_directory_that_is_not_a_run_bundle_is_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not a run bundle"):
        capture_tf(EXAMPLE, out)
    assert [path.name for path in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"


def test_cli_rejects_a_missing_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["capture", "tf", str(tmp_path / "nope.py"), "-o", str(tmp_path / "run")])
    assert code == 2
    assert "no such script" in capsys.readouterr().err
