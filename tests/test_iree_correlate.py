"""IREE correlator on the real fixture bundle: dispatch time -> flow ops -> StableHLO ops."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.correlate.iree import CORRELATOR

FIXTURE = Path(__file__).parent / "fixtures" / "iree" / "mlp"
MATMUL = "main_dispatch_2_matmul_16x128x6272_f32"


@pytest.fixture
def bundle(tmp_path: Path) -> RunBundle:
    shutil.copytree(FIXTURE, tmp_path / "run")
    return RunBundle(tmp_path / "run")


def test_source_level_gets_all_profiled_dispatch_time(bundle: RunBundle) -> None:
    result = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions())
    coverage = result.coverage
    assert coverage.time_coverage >= 0.99
    # Warm-up runs are left out: 5 profiled runs of 5 dispatches.
    assert result.opprofile.totals["dispatch_events"] == 25
    total = sum(
        e.data.total_ns for e in result.opprofile.entries if "inclusive" not in e.data.source
    )
    assert abs(total - coverage.attributed_ns) <= len(result.opprofile.entries)


def test_fused_dispatch_is_a_group_with_its_share_basis(bundle: RunBundle) -> None:
    entries = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions()).opprofile.entries
    in_matmul = [
        e for e in entries if MATMUL in e.data.kernels and "inclusive" not in e.data.source
    ]
    names = {e.key.name for e in in_matmul}
    assert {"dot_general", "add", "max"} <= names
    dot = next(e for e in in_matmul if e.key.name == "dot_general")
    add = next(e for e in in_matmul if e.key.name == "add")
    assert "add" in dot.data.fused_with and "estimated work" in dot.data.source
    assert dot.data.total_ns > 100 * add.data.total_ns  # 2*16*128*6272 vs 16*128 operations


def test_flow_level_annotates_dispatch_ops_and_launches(bundle: RunBundle) -> None:
    result = CORRELATOR.correlate(bundle, "flow", CorrelationOptions())
    assert result.coverage.time_coverage >= 0.99
    ops = {e.op_name for e in result.opprofile.entries}
    assert {"linalg.matmul", "flow.dispatch", "linalg.softmax"} <= ops


def test_a_dispatch_unknown_to_the_flow_ir_is_listed_unattributed(bundle: RunBundle) -> None:
    trace = bundle.root / "trace" / "dispatch.jsonl"
    trace.write_text(trace.read_text().replace(MATMUL, "main_dispatch_9_mystery"))
    coverage = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions()).coverage
    assert coverage.time_coverage < 0.9
    listed = {event.name: event.reason for event in coverage.unmatched_events}
    assert "no flow.executable export" in listed["main_dispatch_9_mystery"]
