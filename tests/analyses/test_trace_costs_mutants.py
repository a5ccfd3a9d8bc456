"""`load_costed_trace_export` on a small bundle with two annotated levels: which ops get FLOPs
per event (profiled, not inclusive, of known non-zero FLOPs), the split over an op's distinct
kernels, the levels it reads (all, or the one asked for), the trace and manifest it carries and
the error for a bundle never annotated.

Written from the survivors of `analyses/trace_costs.py`. The bundle is the views' synthetic TF
model (`tests/analyses/test_support.py`) with a one-event Chrome trace; its element-wise ops
work on `tensor<1x8xf32>`: one FLOP per element, 8 per run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from irprof.analyses.trace_costs import load_costed_trace_export
from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module, write_module
from irprof.mlir.op_index import walk_ops
from irprof.mlir.profile_attrs import attach_profile, attribute_name, get_profile
from tests.analyses.test_support import make_bundle

ELEMENTS = 1 * 8  # tensor<1x8xf32>


def rewrite_profiles(bundle: RunBundle, level: str) -> None:
    """Ops 2 and 7 (BiasAdd) keep one kernel and get none; op 3 (Relu) two kernels; the
    Softmax is an inclusive call; the MaxPool and the MatMul lose their profiles."""
    path = bundle.annotated_path(level)
    module = parse_module(path.read_text(), make_context())
    ops = walk_ops(module)
    assert [ops[i].name for i in (2, 3, 4, 6, 7, 8)] == [
        "tf.BiasAdd", "tf.Relu", "tf.MaxPool", "tf.MatMul", "tf.BiasAdd", "tf.Softmax",
    ]  # fmt: skip
    for index, changes in ((3, {"kernels": ("a", "b")}), (7, {"kernels": ()}),
                           (8, {"source": "xplane:call:inclusive"})):  # fmt: skip
        profile = get_profile(ops[index])
        assert profile is not None
        attach_profile(ops[index], dataclasses.replace(profile, **changes))
    for index in (4, 6):
        del ops[index].attributes[attribute_name("irprof")]
    write_module(path, module)


def two_level_bundle(root: Path) -> RunBundle:
    """The synthetic bundle, its level copied as `tf2`, and a trace of one event."""
    bundle = make_bundle(root)
    shutil.copy(bundle.ir_path("tf"), bundle.ir_path("tf2"))
    shutil.copy(bundle.annotated_path("tf"), bundle.annotated_path("tf2"))
    rewrite_profiles(bundle, "tf2")
    event = {"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
    (bundle.trace_dir / "t.json").write_text(json.dumps({"traceEvents": [event]}))
    manifest = dataclasses.replace(
        bundle.manifest(), ir_levels=("tf", "tf2"), trace_files=("trace/t.json",)
    )
    bundle.write_manifest(manifest)
    return RunBundle(bundle.root)


def test_flops_per_event_of_the_level_asked_for(tmp_path: Path) -> None:
    bundle = two_level_bundle(tmp_path / "run")
    export = load_costed_trace_export(bundle, "tf2")
    assert [level for level, _ in export.levels] == ["tf2"]
    # BiasAdd (one kernel): 8; Relu (two kernels): 8 / 2; BiasAdd without kernels: 8; the
    # inclusive Softmax, the unprofiled MaxPool and MatMul, and the Conv2D of unknown FLOPs:
    # none
    assert export.flops_per_event == {
        ("tf2", 2): float(ELEMENTS),
        ("tf2", 3): ELEMENTS / 2,
        ("tf2", 7): float(ELEMENTS),
    }
    assert export.trace_path == "trace/t.json"
    assert export.manifest == bundle.manifest()


def test_every_annotated_level_without_one_asked_for(tmp_path: Path) -> None:
    bundle = two_level_bundle(tmp_path / "run")
    export = load_costed_trace_export(bundle)
    assert [level for level, _ in export.levels] == ["tf", "tf2"]
    # level tf keeps the synthetic profiles (one kernel each): every op of known FLOPs but the
    # Conv2D; its element-wise ops 8 each
    tf = {index for level, index in export.flops_per_event if level == "tf"}
    assert tf == {2, 3, 4, 6, 7, 8}
    assert export.flops_per_event[("tf", 3)] == float(ELEMENTS)
    assert {index for level, index in export.flops_per_event if level == "tf2"} == {2, 3, 7}


def test_a_bundle_never_annotated(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run", annotate=False)
    with pytest.raises(BundleError) as error:
        load_costed_trace_export(bundle)
    root = bundle.root
    assert str(error.value) == (
        f"{root}: no annotated IR under annotated/; run `irprof annotate {root}`"
    )
