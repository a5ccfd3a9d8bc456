"""Plain-data contracts: opprofile.json, coverage.json, the run bundle manifest, registries."""

from __future__ import annotations

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
    with pytest.raises(BundleError, match="malformed manifest"):
        bundle.manifest()


def test_registry_is_lazy_and_rejects_duplicates() -> None:
    loads: list[str] = []
    registry: Registry[int] = Registry("thing")
    registry.register("one", lambda: loads.append("one") or 1)
    assert loads == []
    assert registry.get("one") == 1 and registry.get("one") == 1
    assert loads == ["one"]
    with pytest.raises(ValueError, match="duplicate thing"):
        registry.register("one", lambda: 2)
    with pytest.raises(UsageError, match="unknown thing 'two'; known: one"):
        registry.get("two")
