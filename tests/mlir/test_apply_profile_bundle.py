"""`annotate_bundle` / `irprof annotate`: orchestration around a correlator, on a real TF IR file.

The correlator here is a small, real one written for the test: it joins a list of
`(node name, duration)` "events" to the IR's ops by runtime name, like the TF correlator does
with XPlane events, and builds its coverage with `coverage_for`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import irprof.annotation as annotate_module
import irprof.cli.main as cli_main
from irprof.annotation import annotate_bundle
from irprof.bundle import Manifest, RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.coverage import UnmatchedEvent, load_coverages
from irprof.errors import BundleError, CorrelationError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import OpIndex, derive_op_keys, walk_ops
from irprof.mlir.profile_attrs import get_profile, get_summary
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"


@dataclass(frozen=True)
class NameJoinCorrelator:
    """Joins (node name, ns) events to ops whose runtime name equals the node name."""

    events: tuple[tuple[str, int], ...]
    framework: str = "tf"
    levels: tuple[str, ...] = ("tf",)

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        module = bundle.ir(level)
        keyed = derive_op_keys(module)
        index = OpIndex(keyed)
        profiled = sum(ns for _, ns in self.events)
        entries, annotated, unmatched, attributed = [], set(), [], 0
        for name, ns in self.events:
            positions = index.match_positions(OpKey(name=name))
            if not positions:
                unmatched.append(UnmatchedEvent(name, ns, 1, "no op has this node name"))
                continue
            attributed += ns
            annotated.update(positions)
            data = ProfileData.from_durations([ns], 0, profiled, kernels=[f"{name}:K"])
            entries.append(OpProfileEntry(OpKey(name=name), data))
        opprofile = OpProfile(
            level=level, framework="tf", entries=tuple(entries),
            totals={"profiled_ns": profiled, "attributed_ns": attributed},
            source_trace="trace/x.xplane.pb",
        )  # fmt: skip
        coverage = coverage_for(
            keyed, annotated, level=level, profiled_ns=profiled, attributed_ns=attributed,
            unmatched_events=unmatched,
        )  # fmt: skip
        return CorrelationResult(opprofile, coverage)


def _bundle(tmp_path: Path) -> RunBundle:
    bundle = RunBundle(tmp_path / "run")
    (bundle.root / "ir").mkdir(parents=True)
    shutil.copy(FIXTURES / "tf.function.mlir", bundle.ir_path("tf"))
    bundle.write_manifest(
        Manifest(
            framework="tf",
            model="m.py",
            entry="model",
            steps=1,
            device="cpu",
            versions={},
            ir_levels=("tf",),
            trace_files=(),
        )
    )
    return bundle


@dataclass(frozen=True)
class NameJoinFramework:
    """The `Framework` record's correlator side, pointing at `NameJoinCorrelator`."""

    events: tuple[tuple[str, int], ...]
    name: str = "tf"
    levels: tuple[str, ...] = ("tf",)

    def load_correlator(self) -> NameJoinCorrelator:
        return NameJoinCorrelator(self.events)


def _use(monkeypatch: pytest.MonkeyPatch, events: tuple[tuple[str, int], ...]) -> None:
    monkeypatch.setattr(annotate_module, "bundle_framework", lambda _: NameJoinFramework(events))


GOOD_EVENTS = (
    ("dense1/MatMul", 6000),
    ("dense1/BiasAdd", 1000),
    ("Relu@__inference_inner_14", 2000),
    ("elsewhere/Conv2D", 500),
)


def test_annotate_bundle_writes_ir_opprofile_and_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(monkeypatch, GOOD_EVENTS)
    bundle = _bundle(tmp_path)
    outcome = annotate_bundle(bundle)
    assert outcome.level == "tf" and outcome.ops_annotated == 3
    annotated = load_module(bundle.annotated_path("tf"), make_context())
    profiled = {op.name: get_profile(op) for op in walk_ops(annotated) if get_profile(op)}
    assert profiled["tf.MatMul"].total_ns == 6000  # type: ignore[union-attr]
    summary = get_summary(annotated)
    assert summary is not None and summary["framework"] == "tf"
    assert summary["profiled_ns"] == 9500 and summary["attributed_ns"] == 9000
    assert OpProfile.load(bundle.opprofile_level_path("tf")).level == "tf"
    assert not (bundle.root / "opprofile.json").exists()  # one profile file per level
    coverage = load_coverages(bundle.coverage_path)["tf"]
    assert coverage.unmatched_events[0].name == "elsewhere/Conv2D"
    assert coverage.ops_nontrivial_annotated == 3
    reasons = {op.op_name: op.reason for op in coverage.unmatched_ops}
    assert "tf.Mul" in reasons and "mul@__inference_inner_14" in reasons["tf.Mul"]
    # The input IR is never modified.
    assert bundle.ir_path("tf").read_bytes() == (FIXTURES / "tf.function.mlir").read_bytes()


def test_near_zero_coverage_is_refused_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(monkeypatch, (("other_model/dense/MatMul", 10_000), ("dense1/MatMul", 100)))
    bundle = _bundle(tmp_path)
    with pytest.raises(CorrelationError, match="another model"):
        annotate_bundle(bundle)
    assert not bundle.annotated_path("tf").exists() and not bundle.coverage_path.exists()
    outcome = annotate_bundle(bundle, allow_low_coverage=True, attr="ts-dur")
    assert outcome.coverage.time_coverage < 0.05
    assert "profiler_data = {dur = 100 : i64" in bundle.annotated_path("tf").read_text()


def test_cli_annotate_prints_the_coverage_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _use(monkeypatch, GOOD_EVENTS)
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("irprof.cli.annotate_cmd",))
    bundle = _bundle(tmp_path)
    assert cli_main.main(["annotate", str(bundle.root)]) == 0
    out = capsys.readouterr().out
    assert "time coverage" in out and "94.7%" in out
    assert "elsewhere/Conv2D" in out
    assert cli_main.main(["annotate", str(bundle.root), "--level", "stablehlo"]) == 2
    assert "cannot annotate level 'stablehlo'" in capsys.readouterr().err
    assert cli_main.main(["annotate", str(tmp_path / "nothing")]) == 2
    assert "not a run bundle" in capsys.readouterr().err


def test_missing_level_ir_is_a_bundle_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(monkeypatch, GOOD_EVENTS)
    bundle = _bundle(tmp_path)
    bundle.ir_path("tf").unlink()
    with pytest.raises(BundleError, match=r"IR level .tf. named by manifest.json is missing"):
        annotate_bundle(bundle)
