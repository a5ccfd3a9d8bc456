"""TF correlator on the shipped bundles of tests/fixtures/tf (real captures; no TensorFlow)."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import orjson
import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.errors import CorrelationError
from irprof.frameworks import get_all_frameworks
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.frameworks.tf.graph import base_kernel_type, share_time
from irprof.opprofile import OpProfileEntry
from irprof.readers import read_trace
from irprof.trace.model import EventKind

TF_FIXTURES = Path(__file__).parents[2] / "fixtures" / "tf"


def bundle(name: str) -> RunBundle:
    """A shipped fixture bundle."""
    return RunBundle(TF_FIXTURES / name)


def correlate(
    name: str, level: str, rule: str = "default", reference_time: bool = False
) -> CorrelationResult:
    """Correlate one level of a fixture (`reference_time`: also take the reference steps' time
    for the kernels the timed steps did not record)."""
    options = CorrelationOptions(fused_time_rule=rule, reference_time=reference_time)
    return CORRELATOR.correlate(bundle(name), level, options)


def by_name(result: CorrelationResult) -> dict[str, OpProfileEntry]:
    """Entries keyed by the op's runtime name."""
    return {e.key.name: e for e in result.opprofile.entries if e.key.name}


def event_durations(run: RunBundle, index: int = 0) -> dict[str, list[int]]:
    """Every framework-op event's durations inside the steps of trace file `index` (0: the
    timed steps, 1: the untimed reference steps), read independently."""
    trace = read_trace(run.trace_paths()[index])
    steps = [r for r in trace.rows_of_kind(EventKind.STEP).tolist()]
    windows = [(int(trace.ts_ns[r]), int(trace.end_ns[r])) for r in steps]
    found: dict[str, list[int]] = defaultdict(list)
    for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
        ts, end = int(trace.ts_ns[row]), int(trace.end_ns[row])
        if any(b <= ts and end <= e for b, e in windows):
            found[trace.name_of(row)].append(int(trace.dur_ns[row]))
    return found


def test_registered_as_the_tf_correlator() -> None:
    assert get_all_frameworks().get("tf").load_correlator() is CORRELATOR
    assert CORRELATOR.levels == ("tf", "tf-standard", "post-grappler", "xla")


@pytest.mark.parametrize(
    ("fixture", "level"),
    [
        ("cnn-infer", "tf"),
        ("cnn-infer", "tf-standard"),
        ("cnn-infer", "post-grappler"),
        ("cnn-infer-eigen", "tf"),
        ("cnn-infer-eigen", "tf-standard"),
        ("depthwise", "tf"),
        ("cnn-train", "tf-standard"),
        ("cnn-train", "post-grappler"),
    ],
)
def test_coverage_meets_the_targets(fixture: str, level: str) -> None:
    coverage = correlate(fixture, level, reference_time=True).coverage
    assert coverage.time_coverage >= 0.99
    assert coverage.nontrivial_coverage >= 0.95
    assert coverage.profiled_ns > 0


def test_raw_training_graph_explains_the_ops_that_never_ran() -> None:
    # The raw training graph holds shape arithmetic and a dead input gradient; TensorFlow's own
    # dump of the executed graph shows grappler pruned or folded them.
    coverage = correlate("cnn-train", "tf", reference_time=True).coverage
    assert coverage.time_coverage >= 0.99
    reasons = {o.op_name: o.reason for o in coverage.unmatched_ops}
    assert reasons["tf.Conv2DBackpropInput"].startswith("never ran: not in the graph")
    assert reasons["tf.ShapeN"] == "never ran: grappler folded it into a constant"
    assert coverage.extra["runtime_graph_source"] == "runtime dump after_partition_passes"
    assert coverage.ops_not_executed == sum(
        o.reason.startswith("never ran") for o in coverage.unmatched_ops
    )
    # Every op that did run found its events; the removed ones still count in the raw figure.
    assert coverage.nontrivial_coverage == 1.0
    assert coverage.nontrivial_coverage_with_removed < 0.95


def reference_steps(run: RunBundle) -> list[dict[str, list[int]]]:
    """Event durations by name in each step of the reference trace, read independently."""
    trace = read_trace(run.trace_paths()[1])
    windows = sorted(
        (int(trace.ts_ns[r]), int(trace.end_ns[r])) for r in trace.rows_of_kind(EventKind.STEP)
    )
    steps: list[dict[str, list[int]]] = [defaultdict(list) for _ in windows]
    for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
        for index, (begin, end) in enumerate(windows):
            if begin <= trace.ts_ns[row] and trace.end_ns[row] <= end:
                steps[index][trace.name_of(row)].append(int(trace.dur_ns[row]))
    return steps


def test_kernels_are_exact_trace_event_names() -> None:
    """GIVEN timed steps (host level 2) and reference steps (level 3) THEN each op's kernels
    are event names of the timed trace, or of the reference trace for the cheap kernels the
    timed steps did not record, whose time is marked as taken from the reference steps."""
    run = bundle("cnn-train")
    timed, reference = event_durations(run), event_durations(run, 1)
    # By default the reference steps give structure only: no time, and a reason for those ops.
    default = correlate("cnn-train", "tf").coverage
    assert "reference_ns" not in default.extra
    assert any(
        o.reason.startswith("ran, recorded only by the untimed") for o in default.unmatched_ops
    )
    result = correlate("cnn-train", "tf", reference_time=True)
    assert any("taken from the untimed reference steps" in w for w in result.coverage.warnings)
    from_reference = 0
    for entry in result.opprofile.entries:
        assert entry.data.kernels
        assert set(entry.data.kernels) <= set(timed) | set(reference)
        cheap = set(entry.data.kernels) - set(timed)
        if cheap:
            assert entry.data.source.startswith("xplane-reference:"), entry
            from_reference += 1
    assert from_reference > 0
    # Every timed step got the cheap kernels of one reference step (the median one).
    per_step = [
        sum(sum(durations) for name, durations in step.items() if name not in timed)
        for step in reference_steps(run)
    ]
    median_step = sorted(per_step)[(len(per_step) - 1) // 2]
    assert result.coverage.extra["reference_ns"] == run.manifest().steps * median_step


@pytest.mark.parametrize(
    ("fixture", "kernel", "chain"),
    [
        (
            "cnn-infer",
            "tf_cnn_1/conv_1/Relu:_MklNativeFusedConv2D",
            ("tf_cnn_1/conv_1/convolution", "tf_cnn_1/conv_1/BiasAdd", "tf_cnn_1/conv_1/Relu"),
        ),
        (
            "cnn-infer",
            "tf_cnn_1/dense2_1/BiasAdd:_MklNativeFusedMatMul",
            ("tf_cnn_1/dense2_1/MatMul", "tf_cnn_1/dense2_1/BiasAdd"),
        ),
        (
            "cnn-infer-eigen",
            "tf_cnn_1/conv_1/Relu:_FusedConv2D",
            ("tf_cnn_1/conv_1/convolution", "tf_cnn_1/conv_1/BiasAdd", "tf_cnn_1/conv_1/Relu"),
        ),
        (
            "cnn-infer-eigen",
            "tf_cnn_1/dense2_1/BiasAdd:_FusedMatMul",
            ("tf_cnn_1/dense2_1/MatMul", "tf_cnn_1/dense2_1/BiasAdd"),
        ),
        (
            "depthwise",
            "sequential_1/dw_1/Relu:_MklNativeFusedDepthwiseConv2dNative",
            ("sequential_1/dw_1/depthwise", "sequential_1/dw_1/BiasAdd", "sequential_1/dw_1/Relu"),
        ),
        (
            "cnn-train",
            "gradient_tape/tf_cnn_1/conv_1/convolution/Conv2DBackpropFilter:"
            "_MklNativeConv2DBackpropFilterWithBias",
            (
                "gradient_tape/tf_cnn_1/conv_1/convolution/Conv2DBackpropFilter",
                "gradient_tape/tf_cnn_1/conv_1/BiasAdd/BiasAddGrad",
            ),
        ),
    ],
)
def test_fused_kernel_is_shared_by_its_whole_chain(
    fixture: str, kernel: str, chain: tuple[str, ...]
) -> None:
    entries = by_name(correlate(fixture, "tf"))
    members = [entries[name] for name in chain]
    for name, entry in zip(chain, members, strict=True):
        assert entry.data.kernels == (kernel,)
        assert set(entry.data.fused_with) == set(chain) - {name}
    # The shares add up to exactly the kernel's measured time: nothing counted twice.
    measured = sum(event_durations(bundle(fixture))[kernel])
    assert sum(e.data.total_ns for e in members) == measured


def test_base_rule_gives_the_fused_time_to_the_base_op() -> None:
    entries = by_name(correlate("cnn-infer", "tf", rule="base"))
    conv = entries["tf_cnn_1/conv_1/convolution"].data
    relu = entries["tf_cnn_1/conv_1/Relu"].data
    measured = sum(
        event_durations(bundle("cnn-infer"))["tf_cnn_1/conv_1/Relu:_MklNativeFusedConv2D"]
    )
    assert conv.total_ns == measured
    assert relu.total_ns == 0 and relu.count == conv.count


def test_unknown_fused_time_rule_is_rejected() -> None:
    with pytest.raises(CorrelationError, match="fused_time_rule"):
        correlate("cnn-infer", "tf", rule="bogus")


def test_post_grappler_fused_op_takes_its_kernel_alone() -> None:
    entries = by_name(correlate("cnn-infer", "post-grappler"))
    fused = entries["tf_cnn_1/conv_1/Relu"]
    assert fused.op_name == "tf._FusedConv2D"
    assert fused.data.kernels == ("tf_cnn_1/conv_1/Relu:_MklNativeFusedConv2D",)
    assert fused.data.fused_with == ()


def test_call_inlined_by_the_runtime_reaches_the_callee_ops() -> None:
    result = correlate("nested", "tf")
    inner = [e for e in result.opprofile.entries if e.key.name == "MatMul@__inference_hidden_98"]
    assert len(inner) == 1
    assert inner[0].data.kernels == ("StatefulPartitionedCall/MatMul:_MklMatMul",)
    call = [o for o in result.coverage.unmatched_ops if o.op_name == "tf.StatefulPartitionedCall"]
    assert call and "inlined" in call[0].reason
    # A 3-op model: only argument/result plumbing stays unattributed.
    assert {e.name.rpartition(":")[2] for e in result.coverage.unmatched_events} <= {
        "_Arg",
        "_Retval",
    }


def test_eager_trace_matches_by_type_and_order_with_a_warning() -> None:
    result = correlate("cnn-eager", "tf")
    assert any("eager trace" in w for w in result.coverage.warnings)
    entries = {e.op_name: e for e in result.opprofile.entries}
    assert entries["tf.Conv2D"].data.kernels == ("EagerLocalExecute: Conv2D",)
    assert entries["tf.Conv2D"].data.count == bundle("cnn-eager").manifest().steps
    assert result.coverage.nontrivial_coverage >= 0.95
    assert {e.name for e in result.coverage.unmatched_events} <= {
        "EagerLocalExecute: _EagerConst",
        "EagerLocalExecute: Shape",
    }


def test_argument_events_are_reported_not_dropped() -> None:
    coverage = correlate("cnn-infer", "tf").coverage
    args = [e for e in coverage.unmatched_events if e.name.endswith(":_Arg")]
    assert args and all("block argument" in e.reason for e in args)
    assert coverage.attributed_ns + sum(e.total_ns for e in coverage.unmatched_events) == (
        coverage.profiled_ns
    )


def test_annotate_bundle_writes_annotated_ir_and_coverage(tmp_path: Path) -> None:
    run = RunBundle(Path(shutil.copytree(TF_FIXTURES / "cnn-infer", tmp_path / "run")))
    outcome = annotate_bundle(run, level="tf-standard")
    text = run.annotated_path("tf-standard").read_text()
    assert text.count("irprof.profile = {") == outcome.ops_annotated > 0
    assert "_MklNativeFusedConv2D" in text
    coverage = orjson.loads(run.coverage_path.read_bytes())["levels"]["tf-standard"]
    assert coverage["time_coverage"] >= 0.99


def test_profile_of_another_model_is_rejected(tmp_path: Path) -> None:
    # GIVEN the CNN's IR with the trace of a different model (the nested MLP)
    run_dir = Path(shutil.copytree(TF_FIXTURES / "cnn-infer", tmp_path / "run"))
    shutil.rmtree(run_dir / "trace")
    shutil.copytree(TF_FIXTURES / "nested" / "trace", run_dir / "trace")
    manifest = orjson.loads((run_dir / "manifest.json").read_bytes())
    manifest["trace_files"] = [
        str(p.relative_to(run_dir)) for p in (run_dir / "trace").rglob("*.xplane.pb")
    ]
    (run_dir / "manifest.json").write_bytes(orjson.dumps(manifest))
    run = RunBundle(run_dir)
    # WHEN annotating THEN it refuses, and writes nothing
    with pytest.raises(CorrelationError, match="another model"):
        annotate_bundle(run, level="tf")
    assert not run.annotated_path("tf").exists()
    # unless explicitly allowed
    annotate_bundle(run, level="tf", allow_low_coverage=True)
    assert run.annotated_path("tf").is_file()


def test_kernel_type_normalisation_and_time_shares() -> None:
    assert base_kernel_type("_MklNativeFusedConv2D") == "FusedConv2D"
    assert base_kernel_type("_MklMatMul") == "MatMul"
    assert base_kernel_type("_FusedMatMul") == "FusedMatMul"
    assert base_kernel_type("Relu") == "Relu"
    assert share_time(10, 3, "default") == [4, 3, 3]
    assert share_time(10, 3, "base") == [10, 0, 0]


def test_events_of_ops_merged_by_cse_go_to_the_survivor() -> None:
    # tf-standard-pipeline's CSE keeps one of the optimizer's identical ReadVariableOps.
    merged = "sgd_1/Cast_5/ReadVariableOp:ReadVariableOp"
    result = correlate("cnn-train", "tf-standard")
    holders = [e for e in result.opprofile.entries if merged in e.data.kernels]
    assert len(holders) == 1
    assert holders[0].op_name == "tf.ReadVariableOp"
    assert holders[0].key.name != "sgd_1/Cast_5/ReadVariableOp"
    assert merged not in {e.name for e in result.coverage.unmatched_events}
