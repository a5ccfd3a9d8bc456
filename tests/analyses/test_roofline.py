"""Roofline: this machine's peaks (measured once, cached per machine), per-row intensity,
achieved rates, fraction of the roof and bound on the real JAX capture, the SVG plot, the
`irprof top --roofline` columns, and the FLOP features in the MLGO log and Perfetto export."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.hotspots import hotspots
from irprof.analyses.machine_peaks import (
    PeakSettings,
    given_peaks,
    load_or_measure_peaks,
    machine_fingerprint,
)
from irprof.analyses.roofline import Roofline, RooflineOptions, RooflinePoint, roofline
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.errors import UsageError
from irprof.renderers.roofline_svg import RENDERER
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    HOSTILE,
    fixture_hostile_bundle,
    fixture_jax_bundle,
    fixture_tf_bundle,
)

QUICK = PeakSettings(gemm_max_n=256, gemm_seconds=0.0, stream_bytes=1 << 20, repeats=1)
F32 = 4
SVG = "{http://www.w3.org/2000/svg}"


def test_peaks_are_measured_once_and_cached_for_this_machine_only(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "peaks.json"
    first = load_or_measure_peaks(cache, QUICK)
    assert first.source == "measured" and first.gflops > 0 and first.gbps > 0
    assert first.machine == machine_fingerprint()
    stored = orjson.loads(cache.read_bytes())
    assert stored["gflops"] == first.gflops and stored["method"].startswith("numpy float32 GEMM")
    again = load_or_measure_peaks(cache, QUICK)
    assert again.source == f"cache {cache}"
    assert (again.gflops, again.gbps, again.measured_at) == (
        first.gflops,
        first.gbps,
        first.measured_at,
    )
    # Another machine's numbers (or a damaged file) are measured again, never trusted.
    stored["machine"]["cpu"] = "some other CPU"
    stored["gflops"] = 123456.0
    cache.write_bytes(orjson.dumps(stored))
    remeasured = load_or_measure_peaks(cache, QUICK)
    assert remeasured.source == "measured" and remeasured.gflops != 123456.0
    cache.write_bytes(b"{not json")
    assert load_or_measure_peaks(cache, QUICK).source == "measured"
    # A cache that cannot be written still gives measured numbers, and says so.
    blocked = tmp_path / "file" / "peaks.json"
    (tmp_path / "file").write_text("a file where the cache folder should be")
    unwritten = load_or_measure_peaks(blocked, QUICK)
    assert unwritten.gflops > 0 and unwritten.source.startswith("measured (not cached: ")
    with pytest.raises(UsageError):
        given_peaks(0.0, 10.0)


def jax_roofline(bundle: RunBundle, gflops: float, gbps: float) -> Roofline:
    loaded = load_annotated_level(bundle, "stablehlo")
    table = hotspots(loaded.profiled.ops, by="op", profiled_ns=loaded.profiled.profiled_ns)
    return roofline(
        table, loaded.profiled, loaded.module, level="stablehlo", peaks=given_peaks(gflops, gbps)
    )


def test_rows_of_the_jax_mlp_on_the_roofline(jax_bundle: RunBundle) -> None:
    result = jax_roofline(jax_bundle, 100.0, 10.0)  # ridge at 10 FLOP/B
    assert result.costed_ns == result.total_ns > 0  # StableHLO knows every shape
    dense = next(p for p in result.points if p.op_name == "stablehlo.dot_general")
    # jax_mlp.py: x[16, 6272] @ w[6272, 128], 3 steps of one kernel each.
    assert dense.executions == 3
    assert dense.flops == 3 * 2 * 16 * 128 * 6272
    assert dense.bytes == 3 * (16 * 6272 + 6272 * 128 + 16 * 128) * F32
    assert dense.achieved_gflops == pytest.approx(dense.flops / dense.total_ns)
    assert dense.intensity == pytest.approx(2 * 16 * 128 * 6272 / dense.bytes * 3)
    assert dense.intensity is not None and dense.intensity < 10
    assert dense.bound == "memory"  # left of the ridge, and far above the overhead size
    roof_ns = dense.bytes / 10.0
    assert dense.roof_fraction == pytest.approx(roof_ns / dense.total_ns)
    # The ReLU fusion (bias add + max, across jax.nn.relu's private function): its measured
    # time against the conv output read once and the activation written once.
    relu = next(p for p in result.points if p.key == "jit(mlp)/add +3 ops")
    assert relu.ops == 4 and relu.category == "elementwise"
    activation = 16 * 28 * 28 * 8 * F32
    assert relu.bytes == 3 * (2 * activation + 8 * F32 + F32)  # + bias and the zero
    # The same rows under a machine with a low ridge are compute-bound.
    flipped = jax_roofline(jax_bundle, 10.0, 100.0)
    assert next(p for p in flipped.points if p.key == dense.key).bound == "compute"


def point(total_ns: int, flops: int | None, moved: int | None, runs: int = 1) -> RooflinePoint:
    return RooflinePoint(
        key="op",
        op_name="x.op",
        location="m.py:1:1",
        op_index=0,
        group="",
        ops=1,
        total_ns=total_ns,
        share=0.1,
        estimated=False,
        executions=runs,
        category="elementwise",
        flops=flops,
        bytes=moved,
        peaks=given_peaks(100.0, 10.0),
        options=RooflineOptions(overhead_ns=20_000, overhead_fraction=0.1),
    )


def test_bounds_compute_memory_overhead_unknown() -> None:
    assert point(1_000_000, 10**8, 10**6).bound == "compute"  # 100 FLOP/B >= ridge 10
    assert point(1_000_000, 10**6, 10**6).bound == "memory"
    # 5 us a run, and the roof says 0.1 us: fixed costs set the time.
    assert point(10_000, 1_000, 1_000, runs=2).bound == "overhead"
    assert point(10_000, 0, 0).bound == "overhead"  # time spent doing no work at all
    # A long op far below its roof is inefficient, not overhead-bound.
    assert point(10_000_000, 10**6, 10**6).bound == "memory"
    assert point(1_000, None, 1_000).bound == "unknown"


def test_svg_draws_each_row_with_flops_and_escapes_names(hostile_bundle: RunBundle) -> None:
    loaded = load_annotated_level(hostile_bundle, "tf")
    table = hotspots(loaded.profiled.ops, by="op", profiled_ns=loaded.profiled.profiled_ns)
    result = roofline(
        table, loaded.profiled, loaded.module, level="tf", peaks=given_peaks(50.0, 20.0)
    )
    svg = RENDERER.render(result)
    root = ET.fromstring(svg)  # well-formed XML whatever the names hold
    drawn = [p for p in result.points if p.intensity and p.achieved_gflops]
    groups = root.findall(f".//{SVG}g[@class='node point']")
    assert len(groups) == len(drawn) > 0
    titles = [g.find(f"{SVG}title").text or "" for g in groups]  # type: ignore[union-attr]
    assert any(HOSTILE in title and "examples/" in title for title in titles)
    assert b"<script" not in svg
    assert root.find(f".//{SVG}path[@class='roof']") is not None


def test_top_roofline_columns_and_svg(jax_bundle: RunBundle, tmp_path: Path) -> None:
    svg = tmp_path / "roof.svg"
    argv = ["top", str(jax_bundle.root), "--roofline", "-n", "3", "--svg", str(svg)]
    code = main([*argv, "--peak-gflops", "100", "--peak-gbps", "10"])
    assert code == 0 and svg.read_bytes().startswith(b"<svg")
    assert main([*argv, "--peak-gflops", "100"]) == 2  # one roof without the other
    assert main(["top", str(jax_bundle.root), "--svg", str(tmp_path / "x.svg")]) == 2


def test_top_roofline_prints_the_peaks_it_used(
    jax_bundle: RunBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    argv = ["top", str(jax_bundle.root), "--roofline", "-n", "3"]
    assert main([*argv, "--peak-gflops", "100", "--peak-gbps", "10"]) == 0
    out = capsys.readouterr().out
    for column in ("FLOP/B", "GFLOP/s", "GB/s", "roof", "bound"):
        assert column in out
    assert "peaks 100.0 GFLOP/s, 10.0 GB/s (ridge 10.0 FLOP/B; given)" in out
    assert "memory" in out  # the dense layer, left of the ridge


def test_svg_of_a_level_without_costs_or_peaks_still_draws_axes(tf_bundle: RunBundle) -> None:
    loaded = load_annotated_level(tf_bundle, "tf")  # unranked: no FLOPs known anywhere
    table = hotspots(loaded.profiled.ops, by="op", profiled_ns=loaded.profiled.profiled_ns)
    result = roofline(table, loaded.profiled, loaded.module, level="tf", peaks=None)
    assert all(point.bound == "unknown" for point in result.points)
    root = ET.fromstring(RENDERER.render(result))
    assert root.find(f".//{SVG}g[@class='node point']") is None
    caption = "".join(root.itertext())
    assert f"{len(result.points)} without FLOPs or a known cost not drawn" in caption
    assert "no peaks: no roofs" in caption


def test_report_against_a_run_sharing_no_level_exits_2_without_output(
    jax_bundle: RunBundle, tf_bundle: RunBundle, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    argv = ["report", str(jax_bundle.root), "--against", str(tf_bundle.root), "-o", str(out)]
    assert main([*argv, "--no-peaks"]) == 2  # stablehlo here, tf there: nothing to compare
    assert not out.exists()
