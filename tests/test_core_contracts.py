"""Plain-data contracts: opprofile.json, coverage.json, the run bundle manifest, registries."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from irprof.bundle import Manifest, RunBundle
from irprof.coverage import (
    Coverage,
    UnmatchedEvent,
    UnmatchedOp,
    is_trivial_op,
    load_coverages,
    save_coverages,
)
from irprof.errors import BundleError, IrprofError, UsageError
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData
from irprof.registry import Registry


def test_profile_data_aggregates_durations() -> None:
    data = ProfileData.from_durations(
        [30, 10, 20], first_ts_ns=5, profiled_ns=120, kernels=["k", "k", "j"], source="test"
    )
    assert (data.count, data.total_ns, data.mean_ns, data.min_ns, data.max_ns) == (
        3,
        60,
        20,
        10,
        30,
    )
    assert data.fraction == pytest.approx(0.5)
    assert data.kernels == ("k", "j")


def test_opprofile_round_trips_through_json(tmp_path: Path) -> None:
    data = ProfileData.from_durations([7], 1, 7, kernels=["MatMul"], fused_with=["b/BiasAdd"])
    profile = OpProfile(
        level="tf",
        framework="tf",
        entries=(OpProfileEntry(OpKey(name="a/MatMul", ordinal=0), data, "tf.MatMul", "loc"),),
        totals={"profiled_ns": 7},
    )
    path = tmp_path / "opprofile.json"
    profile.save(path)
    assert OpProfile.load(path) == profile


def test_opprofile_rejects_other_versions(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(orjson.dumps({"version": 99, "entries": []}))
    with pytest.raises(IrprofError, match="version 99"):
        OpProfile.load(path)


def test_coverage_ratios_and_round_trip(tmp_path: Path) -> None:
    cov = Coverage(
        level="tf",
        profiled_ns=200,
        attributed_ns=150,
        ops_total=10,
        ops_nontrivial=4,
        ops_annotated=3,
        ops_nontrivial_annotated=3,
        unmatched_events=(UnmatchedEvent("x", 50, 2, "no op named x"),),
        unmatched_ops=(UnmatchedOp("tf.Relu", "loc", "no event"),),
    )
    assert cov.time_coverage == pytest.approx(0.75)
    assert cov.nontrivial_coverage == pytest.approx(0.75)
    save_coverages(tmp_path / "coverage.json", {"tf": cov})
    assert load_coverages(tmp_path / "coverage.json") == {"tf": cov}


def test_trivial_ops() -> None:
    assert is_trivial_op("tf.Const") and is_trivial_op("func.return")
    assert is_trivial_op("torch.operator_terminator")  # the end of an imported If's branch
    assert not is_trivial_op("tf.MatMul") and not is_trivial_op("stablehlo.dot_general")


def test_bundle_manifest_round_trip_and_errors(tmp_path: Path) -> None:
    bundle = RunBundle(tmp_path / "run")
    with pytest.raises(BundleError, match="not a run bundle"):
        bundle.manifest()
    manifest = Manifest("tf", "m.py", "irprof_model", 3, "cpu", {"tf": "2.21"}, ("tf",), ("t.pb",))
    bundle.write_manifest(manifest)
    assert bundle.manifest() == manifest
    assert bundle.ir_path("tf") == tmp_path / "run" / "ir" / "tf.mlir"
    bundle.manifest_path.write_text("{not json")
    assert bundle.manifest() == manifest  # parsed once per loader
    with pytest.raises(BundleError, match="malformed manifest"):
        RunBundle(bundle.root).manifest()


@pytest.mark.parametrize(
    ("field", "value", "complaint"),
    [
        ("framework", ["torch"], r"Expected `str`, got `array` - at `\$.framework`"),
        ("trace_files", [5], r"Expected `str`, got `int` - at `\$.trace_files\[0\]`"),
        ("model", 5, r"Expected `str`, got `int` - at `\$.model`"),
        ("ir_levels", "torch", r"Expected `array`, got `str` - at `\$.ir_levels`"),
        ("ir_levels", ["../x"], "IR level '../x' is not a plain name"),
        ("steps", -1, "steps"),
    ],
)
def test_manifest_fields_are_type_checked(
    tmp_path: Path, field: str, value: object, complaint: str
) -> None:
    bundle = RunBundle(tmp_path / "run")
    good = Manifest("tf", "m.py", "e", 3, "cpu", {}, ("tf",), ("t.pb",))
    bundle.write_manifest(good)
    obj = orjson.loads(bundle.manifest_path.read_bytes())
    obj[field] = value
    bundle.manifest_path.write_bytes(orjson.dumps(obj))
    with pytest.raises(BundleError, match=complaint):
        RunBundle(bundle.root).manifest()


@pytest.mark.parametrize("named", ["/etc/passwd", "../outside.json", "trace/../../outside.json"])
def test_bundle_refuses_paths_outside_it(tmp_path: Path, named: str) -> None:
    (tmp_path / "outside.json").write_text("{}")
    bundle = RunBundle(tmp_path / "run")
    bundle.write_manifest(Manifest("tf", "m.py", "e", 3, "cpu", {}, ("tf",), (named,)))
    with pytest.raises(BundleError, match="outside the bundle"):
        bundle.trace_paths()


def test_bundle_refuses_symlinks_out_and_non_regular_files(tmp_path: Path) -> None:
    (tmp_path / "outside.json").write_text("{}")
    bundle = RunBundle(tmp_path / "run")
    (bundle.root / "trace").mkdir(parents=True)
    (bundle.root / "trace" / "link.json").symlink_to(tmp_path / "outside.json")
    (bundle.root / "trace" / "zero").symlink_to("/dev/zero")
    bundle.write_manifest(
        Manifest("tf", "m.py", "e", 3, "cpu", {}, ("tf",), ("trace/link.json", "trace/zero"))
    )
    with pytest.raises(BundleError, match="outside the bundle"):
        bundle.member("trace/link.json")
    with pytest.raises(BundleError, match="outside the bundle"):
        bundle.member("trace/zero")


def test_registry_is_lazy_and_rejects_duplicates() -> None:
    registry: Registry[object] = Registry("thing")
    registry.register("one", "irprof_lazy_probe:VALUE")
    assert "irprof_lazy_probe" not in sys.modules
    with pytest.raises(ModuleNotFoundError):  # imported on first get, not at register
        registry.get("one")
    registry2: Registry[object] = Registry("thing")
    registry2.register("one", "irprof.registry:Registry")
    assert (
        registry2.get("one") is Registry
        and registry2.reference("one") == "irprof.registry:Registry"
    )
    with pytest.raises(ValueError, match="duplicate thing"):
        registry2.register("one", "irprof.registry:Registry")
    with pytest.raises(ValueError, match="not 'module:attr'"):
        registry2.register("two", "irprof.registry.Registry")
    registry = registry2
    with pytest.raises(UsageError, match="unknown thing 'two'; known: one"):
        registry.get("two")
