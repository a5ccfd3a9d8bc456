"""IREE correlator on the real fixture bundle: dispatch time -> flow ops -> StableHLO ops."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import orjson
import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.iree.correlate import CORRELATOR
from irprof.frameworks.iree.sites import assign_rows
from irprof.opprofile import OpProfileEntry
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind

FIXTURE = Path(__file__).parents[2] / "fixtures" / "iree" / "mlp"
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


TWICE = Path(__file__).parents[2] / "fixtures" / "iree" / "twice"
TWICE_KEY = "main_dispatch_0_matmul_64x128x128_f32"


@pytest.fixture
def twice(tmp_path: Path) -> RunBundle:
    shutil.copytree(TWICE, tmp_path / "twice")
    return RunBundle(tmp_path / "twice")


def _by_name(entries: Iterable[OpProfileEntry]) -> dict[str | None, OpProfileEntry]:
    return {entry.key.name: entry for entry in entries if "inclusive" not in entry.data.source}


def test_one_executable_launched_twice_gives_each_layer_its_own_runs(twice: RunBundle) -> None:
    # GIVEN two identical layers: IREE deduplicates them into one executable with two launches
    flow = twice.ir_path("flow").read_text()
    assert flow.count(f"flow.dispatch @main_dispatch_0::@{TWICE_KEY}") == 2
    # WHEN the source level is correlated
    result = CORRELATOR.correlate(twice, "stablehlo", CorrelationOptions())
    entries = _by_name(result.opprofile.entries)
    # THEN each layer's matmul gets one event per profiled run, not the first layer both
    first, second = entries["layer1/dot_general"], entries["layer2/dot_general"]
    assert first.data.count == second.data.count == 5
    assert first.data.kernels == second.data.kernels == (TWICE_KEY,)
    # Each launch is its own group: the first layer did not fuse with the second.
    assert "layer2/dot_general" not in first.data.fused_with
    assert result.coverage.time_coverage >= 0.99
    assert result.coverage.nontrivial_coverage == 1.0


def test_flow_launch_sites_each_get_their_own_dispatches(twice: RunBundle) -> None:
    entries = CORRELATOR.correlate(twice, "flow", CorrelationOptions()).opprofile.entries
    launches = [e for e in entries if e.op_name == "flow.dispatch"]
    assert len(launches) == 2
    assert [e.data.count for e in launches] == [5, 5]
    total = sum(e.data.total_ns for e in launches)
    executable = sum(
        e.data.total_ns
        for e in entries
        if e.op_name != "flow.dispatch" and TWICE_KEY in e.data.kernels
    )
    assert abs(total - executable) <= len(entries)  # each launch inclusive of its own runs only


def test_launches_that_cannot_be_assigned_share_their_dispatch_time(twice: RunBundle) -> None:
    """Each run keeps one of its two launches (so no run can be matched to the two sites): the
    launch sites split each event between them, and together hold its time once, not twice."""
    trace_path = twice.root / "trace" / "dispatch.jsonl"
    kept, seen = [], set()
    for line in trace_path.read_bytes().splitlines():
        event = orjson.loads(line)
        if event["submission_id"] in seen:
            continue  # the run's second launch is dropped
        seen.add(event["submission_id"])
        kept.append(event)
    trace_path.write_bytes(b"\n".join(orjson.dumps(event) for event in kept) + b"\n")
    expected = sum(event["duration_ns"] for event in kept if event["key"] == TWICE_KEY)
    result = CORRELATOR.correlate(twice, "flow", CorrelationOptions())
    launches = [e for e in result.opprofile.entries if e.op_name == "flow.dispatch"]
    assert len(launches) == 2
    # Halves are rounded per event: at most 1 ns off per event.
    assert abs(sum(e.data.total_ns for e in launches) - expected) <= len(kept)
    assert result.coverage.attributed_ns <= result.coverage.profiled_ns == expected


def test_a_bundle_without_dispatch_regions_falls_back_to_the_executable(twice: RunBundle) -> None:
    # Bundles captured before the dispatch-creation IR was kept: every launch of an executable
    # is attributed through its body, which names the first instance only.
    manifest = orjson.loads(twice.manifest_path.read_bytes())
    del manifest["options"]["dispatch_regions"]
    twice.manifest_path.write_bytes(orjson.dumps(manifest))
    entries = _by_name(
        CORRELATOR.correlate(twice, "stablehlo", CorrelationOptions()).opprofile.entries
    )
    assert entries["layer1/dot_general"].data.count == 10
    assert "layer2/dot_general" not in entries


def test_launches_a_run_repeats_unevenly_follow_their_executable() -> None:
    builder = TraceBuilder()
    track = builder.track(0, 0)
    # One run (submission 1) launches key K three times, but the flow IR has two sites.
    for index in range(3):
        builder.add(100 * index, 10, track, "K", EventKind.DISPATCH, {"submission_id": 1})
    builder.add(400, 10, track, "L", EventKind.DISPATCH, {"submission_id": 1})
    builder.add(500, 10, track, "L", EventKind.DISPATCH, {"submission_id": 2})
    trace = builder.build()
    assigned, notes = assign_rows(trace, list(range(len(trace))), {"K": [7, 9], "L": [3]})
    k_rows = [row for row in range(len(trace)) if trace.name_of(row) == "K"]
    assert not any(row in assigned for row in k_rows)
    assert sorted(assigned.values()) == [3, 3]
    assert len(notes) == 1 and "K: 3 events in a run for 2 launch sites" in notes[0]


def test_two_launches_in_one_run_follow_program_order() -> None:
    builder = TraceBuilder()
    track = builder.track(0, 0)
    for run in range(2):
        for index in range(2):
            start = 1000 * run + 100 * index
            builder.add(start, 10, track, "K", EventKind.DISPATCH, {"submission_id": run})
    trace = builder.build()
    assigned, notes = assign_rows(trace, list(range(len(trace))), {"K": [7, 9]})
    assert not notes
    by_start = {int(trace.ts_ns[row]): site for row, site in assigned.items()}
    assert by_start == {0: 7, 100: 9, 1000: 7, 1100: 9}


def test_softmax_ops_iree_raised_into_one_op_share_its_dispatch(bundle: RunBundle) -> None:
    # IREE raises max/sub/exp/sum/div into one linalg.softmax located at the div only.
    result = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions())
    softmax = "main_dispatch_4_softmax_16x10xf32_dispatch_tensor_store"
    members = [
        e
        for e in result.opprofile.entries
        if softmax in e.data.kernels and "inclusive" not in e.data.source
    ]
    kinds = {e.op_name for e in members}
    assert {"stablehlo.divide", "stablehlo.exponential", "stablehlo.subtract"} <= kinds
    absorbed = [e for e in members if "absorbed into" in e.data.source]
    assert absorbed and all("jit(mlp)/div" in e.data.source for e in absorbed)
    divide = next(e for e in members if e.op_name == "stablehlo.divide")
    assert "absorbed into" not in divide.data.source
    dispatch_ns = sum(e.data.total_ns for e in members)
    assert divide.data.total_ns < dispatch_ns  # the div no longer holds the whole softmax
    assert result.coverage.nontrivial_coverage == 1.0


def test_reindexing_ops_are_free_with_their_reason(bundle: RunBundle) -> None:
    coverage = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions()).coverage
    broadcasts = [op for op in coverage.unmatched_ops if op.op_name == "stablehlo.broadcast_in_dim"]
    assert broadcasts and all("re-indexes data only" in op.reason for op in broadcasts)
    assert coverage.ops_not_executed >= len(broadcasts)


def test_a_copy_dispatch_goes_to_the_op_it_materialises(bundle: RunBundle) -> None:
    entries = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions()).opprofile.entries
    copy = [e for e in entries if "main_dispatch_0_slow_memcpy" in e.data.kernels]
    # The padding copy in front of the convolution: launched at the convolution's location.
    assert [e.op_name for e in copy if "inclusive" not in e.data.source] == [
        "stablehlo.convolution"
    ]


def test_a_copy_dispatch_at_the_flow_level_is_its_loads_and_stores(bundle: RunBundle) -> None:
    """A pure copy has no arithmetic to weigh: its time is shared evenly by the dispatch body's
    ops, not by the executable's implicit `flow.executable_end` after the body (which took a
    third of each of GPT-2's copies)."""
    key = "main_dispatch_0_slow_memcpy"
    lines = (bundle.root / "trace" / "dispatch.jsonl").read_text().splitlines()
    expected = sum(orjson.loads(line)["duration_ns"] for line in lines if key in line)
    entries = CORRELATOR.correlate(bundle, "flow", CorrelationOptions()).opprofile.entries
    copy = {
        e.op_name: e.data.total_ns
        for e in entries
        if key in e.data.kernels and "inclusive" not in e.data.source
    }
    assert set(copy) == {
        "iree_tensor_ext.dispatch.tensor.load",
        "iree_tensor_ext.dispatch.tensor.store",
    }
    assert abs(sum(copy.values()) - expected) <= len(copy)
    assert all(abs(share - expected / 2) <= 1 for share in copy.values())
