"""TF work XLA compiled, joined from the timed steps: a `jit_compile=True` function and a Keras
`model.fit` at its defaults (whose grouped convolution Keras runs through XLA on CPU).

Two captures per module (about 15 s and 35 s). Expected figures are read from the XSpace with
TensorFlow's own protobuf classes (the XPlane and XLA's HloProto), not through irprof.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import get_profile
from irprof.readers import read_trace
from irprof.trace.model import EventKind

pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.slow]

ZOO = Path(__file__).resolve().parents[3] / "examples" / "zoo"
MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "tf" / "models"
STEP_MARKER = "irprof_step"


@pytest.fixture(scope="module")
def jit_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    out = tmp_path_factory.mktemp("tf_jit") / "run"
    return capture_tf(ZOO / "tf_jit_compile.py", out, TfCaptureOptions(steps=3, warmup=1))


@pytest.fixture(scope="module")
def lambda_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    out = tmp_path_factory.mktemp("tf_lambda") / "run"
    return capture_tf(MODELS / "xla_lambda.py", out, TfCaptureOptions(steps=3, warmup=1))


@pytest.fixture(scope="module")
def fit_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    out = tmp_path_factory.mktemp("tf_fit") / "run"
    options = TfCaptureOptions(mode="fit", steps=2, warmup=1)
    return capture_tf(ZOO / "tf_keras_fit.py", out, options)


def correlate(bundle: RunBundle, level: str) -> CorrelationResult:
    return CORRELATOR.correlate(bundle, level, CorrelationOptions())


def xspace_thunks(bundle: RunBundle) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Thunk events inside the step markers (name, hlo_op, hlo_module, recorded `ns`, and
    `async_ns` up to the end of the `end: <instruction>` event its `_p` stat links to, where a
    multi-threaded executable finished the work) and the HLO modules by name, decoded with
    TensorFlow's own XPlane and HloProto classes."""
    from tensorflow.compiler.xla.service import hlo_pb2
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(bundle.primary_trace_path.read_bytes())
    modules: dict[str, Any] = {}
    thunks: list[dict[str, Any]] = []
    for plane in space.planes:
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if stat_names.get(stat.metadata_id) == "Hlo Proto":
                    proto = hlo_pb2.HloProto()
                    proto.ParseFromString(stat.bytes_value)
                    # XProf names it `<module>(<program id>)`; thunks name the module alone.
                    modules[re.sub(r"\(\d+\)$", "", metadata.name)] = proto.hlo_module
        windows, events = [], []
        end_by_consumer: dict[int, int] = {}
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                begin = line.timestamp_ns * 1000 + event.offset_ps
                span = (begin, begin + event.duration_ps)
                if name == STEP_MARKER:
                    windows.append(span)
                stats = {stat_names.get(s.metadata_id): s for s in event.stats}
                if "hlo_op" in stats:
                    events.append((span, name, stats))
                elif name.startswith("end: ") and "_c" in stats:
                    link = stats["_c"]
                    end_by_consumer[link.uint64_value or link.int64_value] = span[1]
        for (begin, end), name, stats in events:
            if any(b <= begin <= e for b, e in windows):
                link = stats.get("_p")
                producer = (link.uint64_value or link.int64_value) if link is not None else 0
                async_end = max(end, end_by_consumer.get(producer, end))
                thunks.append(
                    {
                        "name": name,
                        "hlo_op": stat_names.get(stats["hlo_op"].ref_value, ""),
                        "hlo_module": stat_names.get(stats["hlo_module"].ref_value, ""),
                        "ns": (end - begin) // 1000,
                        "async_ns": (async_end - begin) // 1000,
                    }
                )
    return thunks, modules


def kernel_op_names(module: Any, instruction: str) -> set[str]:
    """TF node names of the instructions a thunk of `instruction` runs (fusions: recursively)."""
    by_id = {c.id: c for c in module.computations}
    for computation in module.computations:
        for instr in computation.instructions:
            if instr.name != instruction:
                continue
            names = {instr.metadata.op_name} if instr.metadata.op_name else set()
            pending = list(instr.called_computation_ids)
            while pending:
                for inner in by_id[pending.pop()].instructions:
                    if inner.metadata.op_name:
                        names.add(inner.metadata.op_name)
                    pending.extend(inner.called_computation_ids)
            return names
    return set()


def time_by_node(result: CorrelationResult) -> dict[str, int]:
    """Op time by TF node name (the `@function` suffix of a called function's ops dropped)."""
    times: dict[str, int] = defaultdict(int)
    for entry in result.opprofile.entries:
        times[(entry.key.name or "").partition("@")[0]] += entry.data.total_ns
    return times


@pytest.mark.parametrize("level", ["tf", "tf-standard", "xla"])
def test_jit_compile_time_comes_from_the_timed_thunks(jit_bundle: RunBundle, level: str) -> None:
    """GIVEN a `jit_compile=True` function THEN every level covers >= 99% of the time from
    the timed steps alone, no op is "never ran", and no step counts more than it lasted."""
    assert jit_bundle.manifest().ir_levels == ("tf", "tf-standard", "xla")
    coverage = correlate(jit_bundle, level).coverage
    assert coverage.time_coverage >= 0.99
    assert "reference_ns" not in coverage.extra
    # Only ops XLA left no instruction for (folded, or passed as a parameter) are "removed".
    removed = [u for u in coverage.unmatched_ops if "no instruction" in u.reason]
    assert coverage.ops_not_executed <= max(len(removed), 25 if coverage.unmatched_ops else 0)
    assert not [u for u in coverage.unmatched_ops if u.reason.startswith("never ran")]
    assert coverage.extra["step_check"]["over_steps"] == []
    thunks, _ = xspace_thunks(jit_bundle)
    assert coverage.extra["xla"]["thunk_ns"] <= sum(t["async_ns"] for t in thunks)


def test_a_kernel_of_one_tf_node_gives_that_op_its_recorded_time(jit_bundle: RunBundle) -> None:
    """Each kernel whose instructions all name one TF node gives that node's op at least the
    kernel's recorded time and at most its time up to its asynchronous end (the executable ran
    the work on another thread); kernels naming it with others give it at most theirs."""
    thunks, modules = xspace_thunks(jit_bundle)
    only: dict[str, int] = defaultdict(int)
    only_async: dict[str, int] = defaultdict(int)
    shared: dict[str, int] = defaultdict(int)
    for thunk in thunks:
        names = kernel_op_names(modules[thunk["hlo_module"]], thunk["hlo_op"])
        for name in names:
            if len(names) == 1:
                only[name] += thunk["ns"]
                only_async[name] += thunk["async_ns"]
            else:
                shared[name] += thunk["async_ns"]
    got = time_by_node(correlate(jit_bundle, "tf"))
    assert only, "no single-node kernel in the capture"
    for node, ns in only.items():
        assert ns <= got[node] <= only_async[node] + shared.get(node, 0), node


def test_the_xla_level_is_annotated(jit_bundle: RunBundle) -> None:
    outcome = annotate_bundle(jit_bundle, level="xla")
    assert outcome.coverage.time_coverage >= 0.99
    text = (jit_bundle.root / "annotated" / "xla.mlir").read_text()
    assert "stablehlo.convolution" in text and "irprof.profile" in text
    module = load_module(text, make_context())
    convolutions = [i for i in derive_op_infos(module) if i.op_name == "stablehlo.convolution"]
    assert convolutions and all(get_profile(i.op) is not None for i in convolutions)


def test_xla_level_ops_with_no_time_are_explained_by_the_compiled_program(
    jit_bundle: RunBundle,
) -> None:
    """GIVEN the XLA level (the cluster's StableHLO before XLA's passes) THEN an op with no time
    is explained: ran inside another thunk, left no instruction in the compiled program
    (removed by the compiler), or sits in a function nothing refers to (the HLO importer keeps
    each reducer's computation as a private function besides the reduce op's own region). None
    falls back to "no profiled event named after", and the uncalled functions' ops are counted
    as not executed, not as ops that lower the non-trivial coverage."""
    text = jit_bundle.ir_path("xla").read_text()
    private = re.findall(r"func\.func private @([\w.$-]+)\(", text)
    uncalled = {name for name in private if len(re.findall(rf"@{re.escape(name)}\b", text)) == 1}
    assert uncalled, "no uncalled reducer function in the capture"
    module = load_module(text, make_context())
    in_uncalled = 0
    for function in module.body.operations:
        name = function.attributes["sym_name"]
        if str(name).strip('"') in uncalled:
            in_uncalled += sum(
                1
                for block in function.regions[0].blocks
                for op in block.operations
                if op.operation.name != "func.return"
            )
    coverage = correlate(jit_bundle, "xla").coverage
    reasons = [u.reason for u in coverage.unmatched_ops]
    assert not [r for r in reasons if r.startswith("no profiled event named after")], reasons
    assert coverage.ops_not_executed >= in_uncalled
    uncalled_listed = [r for r in reasons if "which nothing in the module calls" in r]
    assert {r.split("@")[1].split(",")[0] for r in uncalled_listed} <= uncalled


UNCALLED_MODULE = """
func.func private @called(%a: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.negate %a : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @reducer(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [0]
    : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  %neg = func.call @called(%sum) : (tensor<f32>) -> tensor<f32>
  return %neg : tensor<f32>
}
"""


def test_only_ops_of_functions_nothing_refers_to_are_uncalled() -> None:
    """`func.call`'s callee runs, the entry runs, the reduce's own region runs; the reducer's
    function copy, which no symbol names, does not."""
    from irprof.frameworks.tf.graph import TfOpIndex
    from irprof.frameworks.tf.xla import XLA_ENTRY, uncalled_reasons

    view = TfOpIndex.of(load_module(UNCALLED_MODULE, make_context()))
    found = uncalled_reasons(view, XLA_ENTRY)
    assert sorted((view.infos[p].op_name, view.function_of[p]) for p in found) == [
        ("func.return", "reducer"),
        ("stablehlo.add", "reducer"),
    ]
    assert all(
        why.startswith("in @reducer, which nothing in the module calls") for why in found.values()
    )


def test_a_jit_compiled_lambda_called_from_python_is_joined(lambda_bundle: RunBundle) -> None:
    """GIVEN `tf.function(lambda ..., jit_compile=True)` called from Python (its launching
    event has no display name, so it is no op event) THEN each timed step's launch is found,
    the cluster is matched to the lambda's function, its thunks are the level's time, and the
    ops XLA compiled are listed as compiled, not as ops the runtime ran without an event."""
    (function,) = re.findall(
        r'func\.func @"(__inference_<lambda>_\d+)"', lambda_bundle.ir_path("tf").read_text()
    )
    outcome = annotate_bundle(lambda_bundle, level="tf")
    coverage = outcome.coverage
    assert coverage.time_coverage >= 0.99
    xla = coverage.extra["xla"]
    assert xla["launch_events"] == lambda_bundle.manifest().steps == 3
    assert list(xla["modules"].values()) == [function]
    thunks, _ = xspace_thunks(lambda_bundle)
    assert sum(t["ns"] for t in thunks) <= xla["thunk_ns"] <= sum(t["async_ns"] for t in thunks)
    assert coverage.profiled_ns == xla["thunk_ns"]
    assert all(
        u.reason.startswith(("compiled into the XLA cluster", "launches the XLA cluster"))
        for u in coverage.unmatched_ops
    ), [u.reason for u in coverage.unmatched_ops]


def test_xla_level_ops_carry_the_model_scripts_frames(lambda_bundle: RunBundle) -> None:
    """XLA locates its ops by node name and one frame inside TensorFlow; the capture gives each
    the chain of its node's op in the tf level, so the model's own line is among its frames."""
    module = load_module(lambda_bundle.ir_path("xla").read_text(), make_context())
    compute = [
        info
        for info in derive_op_infos(module)
        if info.op_name in ("stablehlo.convolution", "stablehlo.dot_general")
    ]
    assert compute
    for info in compute:
        assert any(frame.startswith("xla_lambda.py:") for frame in info.keys.chain), info.keys


def test_keras_fit_at_defaults_joins_its_xla_clusters(fit_bundle: RunBundle) -> None:
    """GIVEN `model.fit` at its defaults (Keras runs the grouped convolution and its gradient
    through XLA) THEN the tf level covers >= 99% from the timed steps, each cluster is matched
    to the function XLA compiled, and the convolution's gradient ops get the gradient thunks."""
    result = correlate(fit_bundle, "tf")
    coverage = result.coverage
    assert coverage.time_coverage >= 0.99
    assert "reference_ns" not in coverage.extra
    assert coverage.extra["step_check"]["over_steps"] == []
    modules = coverage.extra["xla"]["modules"]
    assert len(modules) == 2 and all(modules.values())
    thunks, hlo = xspace_thunks(fit_bundle)
    gradient_nodes = {
        name
        for thunk in thunks
        for name in kernel_op_names(hlo[thunk["hlo_module"]], thunk["hlo_op"])
        if name.startswith("gradients/")
    }
    got = time_by_node(result)
    assert gradient_nodes and all(got.get(node, 0) > 0 for node in gradient_nodes)


def test_no_op_that_ran_is_listed_as_never_ran(fit_bundle: RunBundle) -> None:
    """An op listed "never ran" has no event in the reference steps (host level 3 records every
    kernel the executor runs, inside a call as `<call node>/<node>`) and no HLO instruction of a
    cluster names it."""
    _, hlo = xspace_thunks(fit_bundle)
    compiled = {
        i.metadata.op_name for m in hlo.values() for c in m.computations for i in c.instructions
    }
    reference = read_trace(fit_bundle.trace_paths()[1])
    ran = {
        reference.name_of(row).rpartition(":")[0]
        for row in reference.rows_of_kind(EventKind.FRAMEWORK_OP).tolist()
    }
    assert ran  # the reference steps recorded kernels
    # A node of a called function runs as `<call node>/.../<node>`: strip leading call nodes.
    module = load_module(fit_bundle.ir_path("tf").read_text(), make_context())
    calls = {
        (info.keys.name or "").partition("@")[0]
        for info in derive_op_infos(module)
        if info.op_name in ("tf.StatefulPartitionedCall", "tf.PartitionedCall")
    }
    runtime = set(ran)
    for name in ran:
        parts = name.split("/")
        while len(parts) > 1 and parts[0] in calls:
            parts = parts[1:]
            runtime.add("/".join(parts))
    coverage = correlate(fit_bundle, "tf").coverage
    never = [u for u in coverage.unmatched_ops if u.reason.startswith("never ran")]
    for op in never:
        for name in re.findall(r"'([^']*)'", op.location):
            node = name.partition("@")[0]
            assert node not in compiled, op
            assert node not in runtime, op
