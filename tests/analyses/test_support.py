"""Small annotated run bundles built in code for the views' tests (no framework needed).

The IR is TF-shaped (generic `tf.*` ops with the fused NameLocs TF's importer writes and a
call-site frame in the model script); profiles are attached with the real annotation API and the
bundle is laid out exactly as `irprof capture` + `irprof annotate` lay it out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import Manifest, RunBundle
from irprof.coverage import Coverage, UnmatchedEvent, UnmatchedOp, save_coverages
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module, write_module
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import ModuleSummary, attach_profile, attach_summary
from irprof.opprofile import ProfileData

FIXTURES = Path(__file__).parents[1] / "fixtures"
HOSTILE = '<script>alert("x")</script>\'&'

# (op kind, node name, measured ns or None); inputs chain through the previous result.
LAYERS: tuple[tuple[str, str, int | None], ...] = (
    ("tf.Conv2D", "sequential/conv1/Conv2D", 5_000_000),
    ("tf.BiasAdd", "sequential/conv1/BiasAdd", 400_000),
    ("tf.Relu", "sequential/conv1/Relu", 300_000),
    ("tf.MaxPool", "sequential/pool1/MaxPool", 900_000),
    ("tf.Reshape", "sequential/flatten/Reshape", None),
    ("tf.MatMul", "sequential/dense1/MatMul", 2_000_000),
    ("tf.BiasAdd", "sequential/dense1/BiasAdd", 100_000),
    ("tf.Softmax", "sequential/dense2/Softmax", 50_000),
)


def annotated_ir_text(names: dict[str, str] | None = None) -> str:
    """MLIR text of the model; `names` renames nodes (to inject hostile strings)."""
    names = names or {}
    lines = ["module {", "  func.func @main(%arg0: tensor<1x8xf32>) -> tensor<1x8xf32> {"]
    previous = "%arg0"
    for index, (kind, node, _) in enumerate(LAYERS):
        node = names.get(node, node)
        escaped = node.replace("\\", "\\\\").replace('"', '\\"')
        line = 20 + index
        lines.append(
            f'    %{index} = "{kind}"({previous}) {{device = ""}} : (tensor<1x8xf32>) -> '
            f'tensor<1x8xf32> loc(fused["{kind[3:]}:", "{escaped}"("examples/tf_cnn.py":{line}:9)])'
        )
        previous = f"%{index}"
    lines += [f"    return {previous} : tensor<1x8xf32>", "  }", "}"]
    return "\n".join(lines) + "\n"


def make_bundle(root: Path, *, hostile: bool = False, annotate: bool = True) -> RunBundle:
    """Write a run bundle under `root` (annotated unless `annotate` is False)."""
    names = {"sequential/dense1/MatMul": f"sequential/{HOSTILE}/MatMul"} if hostile else {}
    text = annotated_ir_text(names)
    bundle = RunBundle(root)
    (root / "ir").mkdir(parents=True, exist_ok=True)
    (root / "trace").mkdir(exist_ok=True)
    bundle.ir_path("tf").write_text(text)
    model = "examples/tf_cnn.py" if not hostile else f"examples/{HOSTILE}.py"
    bundle.write_manifest(
        Manifest(
            framework="tf",
            model=model,
            entry="serve",
            steps=3,
            device="cpu",
            versions={"tensorflow": "2.21.0", "irprof": "0.1.0"},
            ir_levels=("tf",),
            trace_files=(),
        )
    )
    if not annotate:
        return bundle
    context = make_context()
    module = parse_module(text, context)
    profiled_ns = sum(ns for _, _, ns in LAYERS if ns) + 250_000  # plus unattributed time
    infos = [info for info in derive_op_infos(module) if info.op_name.startswith("tf.")]
    attributed = 0
    for info, (kind, node, measured) in zip(infos, LAYERS, strict=True):
        if measured is None:
            continue
        kernel = f"{names.get(node, node)}:{kind[3:]}"
        if hostile and kind == "tf.MatMul":
            kernel = f"{HOSTILE}</script>:MatMul"
        data = ProfileData.from_durations(
            [measured // 3, measured // 3, measured - 2 * (measured // 3)],
            first_ts_ns=1_000 + attributed,
            profiled_ns=profiled_ns,
            kernels=[kernel],
            fused_with=["sequential/conv1/BiasAdd"] if kind == "tf.Conv2D" else [],
            source=f"xplane:{node}",
        )
        attach_profile(info.op, data)
        attributed += measured
    coverage = Coverage(
        level="tf",
        profiled_ns=profiled_ns,
        attributed_ns=attributed,
        ops_total=len(infos) + 2,
        ops_nontrivial=len(infos),
        ops_annotated=len(infos) - 1,
        ops_nontrivial_annotated=len(infos) - 1,
        unmatched_events=(
            UnmatchedEvent(
                name=f"{HOSTILE}:_Retval" if hostile else "_Retval:_Retval",
                total_ns=250_000,
                count=3,
                reason="no op with this node name",
            ),
        ),
        unmatched_ops=(
            UnmatchedOp(
                op_name="tf.Reshape",
                location="sequential/flatten/Reshape",
                reason="TF ran the reshape as an alias: no kernel event",
            ),
        ),
    )
    attach_summary(
        module, ModuleSummary.of(coverage, source_trace="trace/x.xplane.pb", framework="tf")
    )
    write_module(bundle.annotated_path("tf"), module)
    save_coverages(bundle.coverage_path, {"tf": coverage})
    return bundle


def annotate_copy(source: Path, destination: Path) -> RunBundle:
    """Copy a shipped real capture and annotate it with the project's own `annotate_bundle`."""
    shutil.copytree(source, destination)
    bundle = RunBundle(destination)
    annotate_bundle(bundle)
    return bundle


@pytest.fixture(scope="session", name="tf_bundle")
def fixture_tf_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The real TF CNN capture (tests/fixtures/tf/cnn-infer), annotated once per session."""
    return annotate_copy(FIXTURES / "tf" / "cnn-infer", tmp_path_factory.mktemp("tf") / "run")


@pytest.fixture(scope="session", name="jax_bundle")
def fixture_jax_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The real JAX MLP capture (tests/fixtures/jax/mlp_run), annotated once per session."""
    return annotate_copy(FIXTURES / "jax" / "mlp_run", tmp_path_factory.mktemp("jax") / "run")


@pytest.fixture(name="synthetic_bundle")
def fixture_synthetic_bundle(tmp_path: Path) -> RunBundle:
    """The small TF-shaped bundle built in code."""
    return make_bundle(tmp_path / "run")


@pytest.fixture(name="hostile_bundle")
def fixture_hostile_bundle(tmp_path: Path) -> RunBundle:
    """A bundle whose op, kernel, event and model names hold `<script>`, quotes and `&`."""
    return make_bundle(tmp_path / "evil", hostile=True)
