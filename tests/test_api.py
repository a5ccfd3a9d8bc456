"""The Python API: the same loop as the CLI, returning plain data, on real run bundles.

Every `Run` method gives the figures its CLI command prints or writes; expectations come from the
files the commands wrote (opprofile, coverage, dag.json), read directly. Tables convert to Arrow
(and pandas, when installed) with their own totals.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

import irprof
from irprof.analyses.hotspots import HotspotRow, HotspotTable
from irprof.analyses.machine_peaks import given_peaks
from irprof.api import Run
from irprof.cli.main import main
from irprof.mlir.profile_attrs import get_summary
from irprof.renderers.units import format_ns

FIXTURES = Path(__file__).parent / "fixtures"
MLP_RUN = FIXTURES / "jax" / "mlp_run"
BUNDLES = {
    "jax": FIXTURES / "jax" / "mlp_run",
    "tf": FIXTURES / "tf" / "cnn-infer",
    "torch": FIXTURES / "torch" / "cnn",
}


@pytest.fixture(name="run_dir")
def fixture_run_dir(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(MLP_RUN, target)
    return target


def test_open_annotate_top_report_as_data(run_dir: Path) -> None:
    run = irprof.open_run(run_dir)
    assert run.manifest().framework == "jax" and run.annotated_levels() == []
    trace = run.trace()
    assert trace is run.trace()  # read once per loader
    outcome = irprof.annotate(run)
    assert outcome.level == "stablehlo" and outcome.coverage.time_coverage > 0.9
    assert run.annotated_levels() == ["stablehlo"]
    assert run.coverage("stablehlo") == outcome.coverage
    profile = run.profile("stablehlo")
    assert profile.level == "stablehlo" and profile.entries
    table = run.top(limit=3, stat="sum")
    times = [row.total_ns for row in table.rows]
    assert len(times) == 3 and times == sorted(times, reverse=True) and times[0] > 0
    # The hottest row is the hottest op of the written profile (call sites, whose profile
    # repeats their callee's ops, marked `:inclusive`, are left out of sums and rows).
    own = [e.data.total_ns for e in profile.entries if not e.data.source.endswith(":inclusive")]
    assert times[0] == max(own)
    report = irprof.report(run)
    assert report == run_dir / "report.html" and report.read_bytes().startswith(b"<!DOCTYPE")
    summary = get_summary(run.ir("stablehlo"))
    assert summary is None  # the source IR is untouched; the annotated copy carries it
    annotated = run_dir / "annotated" / "stablehlo.mlir"
    assert "irprof.summary" in annotated.read_text()


def test_read_trace_and_errors_from_the_package(tmp_path: Path) -> None:
    trace = irprof.read_trace(MLP_RUN / "trace" / "jax_mlp.xplane.pb")
    assert len(trace) > 0
    missing = tmp_path / "nothing"
    with pytest.raises(irprof.BundleError, match="not a run bundle"):
        irprof.open_run(missing)
    with pytest.raises(
        irprof.UsageError, match="unknown framework 'mxnet'; known: iree, jax, onnx, tf, torch"
    ):
        irprof.capture_model("mxnet", "model.py", tmp_path / "out")
    with pytest.raises(AttributeError):
        irprof.no_such_function  # noqa: B018


def test_api_names_stay_functions_after_every_subpackage_is_imported() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.walk_packages(irprof.__path__, "irprof."):
        if module.ispkg:
            importlib.import_module(module.name)
    for name in sorted(irprof._API - {"Run"}):
        assert callable(getattr(irprof, name)) and getattr(irprof, name).__module__ == "irprof.api"


def test_one_command_reads_the_manifest_trace_and_ir_once(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import irprof.bundle
    import irprof.mlir.load
    import irprof.readers

    calls: dict[str, int] = {"manifest": 0, "trace": 0, "ir": 0}

    def counted(name: str, original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return original(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        irprof.bundle.Manifest,
        "decode",
        staticmethod(counted("manifest", irprof.bundle.Manifest.decode)),
    )
    monkeypatch.setattr(
        irprof.readers, "read_trace_bytes", counted("trace", irprof.readers.read_trace_bytes)
    )
    monkeypatch.setattr(
        irprof.mlir.load, "load_module", counted("ir", irprof.mlir.load.load_module)
    )
    assert main(["annotate", str(run_dir)]) == 0
    # one manifest, one trace, one IR: the correlator reads the module that is then annotated
    assert calls == {"manifest": 1, "trace": 1, "ir": 1}


def annotated_copy(source: Path, destination: Path) -> Run:
    shutil.copytree(source, destination)
    run = irprof.open_run(destination)
    run.annotate()
    return run


@pytest.fixture(scope="module", name="runs")
def fixture_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = tmp_path_factory.mktemp("runs")
    return {name: annotated_copy(path, root / name) for name, path in BUNDLES.items()}


def opprofile_entries(run: Run, level: str) -> list[dict[str, Any]]:
    data = orjson.loads((run.root / f"opprofile.{level}.json").read_bytes())
    return list(data["entries"])


def kind_totals(run: Run, level: str) -> dict[str, int]:
    """Time per op kind straight from opprofile.json, calls (inclusive of callees) left out."""
    totals: dict[str, int] = defaultdict(int)
    for entry in opprofile_entries(run, level):
        profile = entry["profile"]
        if entry["op"] == "func.call" or profile["source"].endswith(":inclusive"):
            continue
        totals[entry["op"]] += profile["total_ns"]
    return dict(totals)


@pytest.mark.parametrize("framework", sorted(BUNDLES))
def test_top_by_kind_sums_the_written_profile(runs: dict[str, Run], framework: str) -> None:
    run = runs[framework]
    table = run.top(by="type", limit=None)
    expected = kind_totals(run, table.level)
    assert {row.key for row in table.rows} == set(expected)
    for row in table.rows:
        # Measured time is exact; an estimated share of a fused group is rounded per op.
        tolerance = 0 if row.estimated_ns == 0 else max(1, row.estimated_ns // 1000)
        assert abs(row.total_ns - expected[row.key]) <= tolerance, row.key
    assert table.total_ns == pytest.approx(sum(expected.values()), rel=1e-4)
    assert table.profiled_ns == run.coverage(table.level).profiled_ns  # type: ignore[union-attr]


@pytest.mark.parametrize("framework", sorted(BUNDLES))
def test_top_matches_the_cli_rows(
    runs: dict[str, Run],
    framework: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = runs[framework]
    monkeypatch.setenv("COLUMNS", "400")  # no cell is shortened
    capsys.readouterr()
    assert main(["top", str(run.root), "-n", "5", "--by", "scope"]) == 0
    printed = capsys.readouterr().out
    table = run.top(by="scope", limit=5)
    caption = re.search(r"(\d+) rows · (.+) attributed of (.+) profiled", printed)
    assert caption is not None and int(caption.group(1)) == len(table.rows)
    assert caption.group(2) == format_ns(table.total_ns)
    assert caption.group(3) == format_ns(run.coverage(table.level).profiled_ns)  # type: ignore[union-attr]
    printed_keys = [line.split("│")[2].strip() for line in printed.splitlines() if "│" in line]
    assert printed_keys == [row.key for row in table.rows]


def test_coverage_profile_and_annotate_agree_with_the_files(runs: dict[str, Run]) -> None:
    run = runs["jax"]
    written = orjson.loads((run.root / "coverage.json").read_bytes())["levels"]["stablehlo"]
    coverage = run.coverage("stablehlo")
    assert coverage is not None
    assert (coverage.profiled_ns, coverage.attributed_ns) == (
        written["profiled_ns"],
        written["attributed_ns"],
    )
    assert len(run.profile("stablehlo").entries) == len(opprofile_entries(run, "stablehlo"))


def test_diff_is_the_cli_json(runs: dict[str, Run], tmp_path: Path) -> None:
    run = runs["jax"]
    out = tmp_path / "diff.json"
    assert main(["diff", str(run.root), str(run.root), "--json", str(out)]) == 0
    written = orjson.loads(out.read_bytes())
    result = run.diff(run.root)
    assert orjson.loads(orjson.dumps(result.to_json())) == written
    assert written["total"]["delta_ns"] == 0.0 and result.total.a_ns == result.total.b_ns
    table = result.to_arrow()
    assert table.num_rows == len(result.ops) + len(result.scopes) + len(result.kinds)
    kinds = [row for row in table.to_pylist() if row["part"] == "kind"]
    assert sum(row["a_ns"] for row in kinds) == pytest.approx(sum(r.a_ns for r in result.kinds))


@pytest.mark.parametrize("fmt", ["chrome", "model-explorer"])
def test_export_writes_what_the_cli_writes(runs: dict[str, Run], tmp_path: Path, fmt: str) -> None:
    run = runs["jax"]
    by_cli, by_api = tmp_path / "cli.out", tmp_path / "api.out"
    assert main(["export", str(run.root), "--to", fmt, "-o", str(by_cli)]) == 0
    assert run.export(fmt, by_api) == by_api
    assert by_api.read_bytes() == by_cli.read_bytes()


def test_dag_and_critical_path_are_the_cli_dag(runs: dict[str, Run], tmp_path: Path) -> None:
    run = runs["jax"]
    out = tmp_path / "dag.json"
    assert main(["dag", str(run.root), "-o", str(out)]) == 0
    written = orjson.loads(out.read_bytes())
    view = run.dag()
    assert len(view.dag) == len(written["nodes"]) and view.critical_path is None
    path = run.critical_path()
    assert path.events and path.length_ns <= path.span_ns
    assert any(op.startswith("stablehlo: ") for event in path.events for op in event.ops)
    table = path.to_arrow()
    assert table.num_rows == len(path.events)
    assert sum(table.column("self_ns").to_pylist()) == path.length_ns
    same = irprof.trace_dag(run.root)
    assert len(same.dag) == len(view.dag)


def test_roofline_rows_are_the_top_rows(runs: dict[str, Run]) -> None:
    run = runs["jax"]
    points = run.roofline(limit=None, peaks=given_peaks(100.0, 10.0))
    table = run.top(limit=None)
    assert [point.key for point in points.points] == [row.key for row in table.rows]
    arrow = points.to_arrow()
    assert arrow.num_rows == len(points.points) and "peaks" not in arrow.column_names
    assert sum(arrow.column("total_ns").to_pylist()) == points.total_ns == table.total_ns
    assert set(arrow.column("bound").to_pylist()) <= {"compute", "memory", "overhead", "unknown"}


def test_graph_counts_the_ops_the_cli_draws(
    runs: dict[str, Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = runs["jax"]
    capsys.readouterr()
    annotated = run.annotated_path("stablehlo")
    assert main(["graph", str(annotated), "-o", str(tmp_path / "g.dot")]) == 0
    said = re.search(r"@(\S+): (\d+) ops -> (\d+) nodes", capsys.readouterr().err)
    graph = run.graph("stablehlo")
    assert said is not None
    assert (graph.function, graph.op_count, len(graph.nodes)) == (
        said.group(1),
        int(said.group(2)),
        int(said.group(3)),
    )
    assert irprof.op_graph(annotated).op_count == graph.op_count


def test_sql_sums_the_written_profile(runs: dict[str, Run]) -> None:
    run = runs["jax"]
    result = run.sql("SELECT op, total_ns FROM ops WHERE level = 'stablehlo' ORDER BY op")
    entries = opprofile_entries(run, "stablehlo")
    assert len(result.rows) == len(entries)
    expected = sum(entry["profile"]["total_ns"] for entry in entries)
    assert sum(row[1] for row in result.rows) == expected
    table = result.to_arrow()
    assert table.column_names == ["op", "total_ns"] and table.num_rows == len(entries)
    assert sum(table.column("total_ns").to_pylist()) == expected


def test_report_writes_the_html(runs: dict[str, Run], tmp_path: Path) -> None:
    target = runs["jax"].report(tmp_path / "r.html")
    assert target == tmp_path / "r.html" and b"<html" in target.read_bytes()[:500].lower()


def test_a_plain_bundle_becomes_a_run_sharing_what_it_loaded(runs: dict[str, Run]) -> None:
    from irprof.bundle import RunBundle

    bundle = RunBundle(runs["jax"].root)
    trace = bundle.trace()
    run = Run.of(bundle)
    assert run.trace() is trace and Run.of(run) is run


def test_hotspot_table_round_trips_through_arrow(runs: dict[str, Run]) -> None:
    table = runs["torch"].top(limit=None)
    arrow = table.to_arrow()
    assert arrow.num_rows == len(table.rows)
    assert sum(arrow.column("total_ns").to_pylist()) == table.total_ns
    assert arrow.column("key").to_pylist() == [row.key for row in table.rows]


def test_trace_to_arrow_is_one_row_per_event(runs: dict[str, Run]) -> None:
    trace = runs["jax"].trace()
    table = trace.to_arrow()
    assert table.num_rows == len(trace)
    assert sum(table.column("dur_ns").to_pylist()) == int(trace.dur_ns.sum())


def _hostile_table() -> HotspotTable:
    row = HotspotRow(
        key="<script>alert(1)</script>",
        op_name="x.op",
        total_ns=7,
        share=1.0,
        count=1,
        mean_ns=7,
        ops=1,
        kernels=("k&1",),
        fused_with=(),
        location="m.py:1:1",
        op_index=0,
    )
    return HotspotTable(by="op", rows=(row,), total_ns=7, profiled_ns=7)


def test_notebook_view_escapes_names() -> None:
    shown = _hostile_table()._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;" in shown and "k&amp;1" in shown


def test_to_pandas_round_trips() -> None:
    table = _hostile_table()
    frame = table.to_pandas()  # pandas is a dev dependency: the conversion runs for real
    assert len(frame) == 1 and int(frame["total_ns"].sum()) == table.total_ns


def test_to_pandas_without_pandas_names_the_missing_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(irprof.UsageError, match="needs pandas: `pip install pandas`"):
        _hostile_table().to_pandas()


def test_summarize_trace_counts_the_events_of_the_file() -> None:
    path = MLP_RUN / "trace" / "jax_mlp.xplane.pb"
    summary = irprof.summarize_trace(path, top=2)
    assert summary.format == "xplane" and len(summary.top_by_total) == 2
    # The count and the span, independently: every event of the trace as read.
    trace = irprof.read_trace(path)
    assert summary.events == len(trace)
    assert summary.span_start_ns == int(trace.ts_ns.min())


def test_opt_runs_native_and_irprof_passes_on_text() -> None:
    text = (
        "func.func @f() -> i32 {\n"
        "  %a = arith.constant 2 : i32\n"
        "  %b = arith.addi %a, %a : i32\n"
        '  return %b : i32 loc("f.py":3:5)\n'
        "}"
    )
    folded = str(irprof.opt(text, "builtin.module(canonicalize)"))
    assert "arith.addi" not in folded and "arith.constant 4 : i32" in folded
    stamped = irprof.opt(text, "builtin.module(irprof-stamp-origin{level=l})")
    assert "irprof.origin" in stamped.operation.get_asm(enable_debug_info=True)
    with pytest.raises(irprof.PipelineError):
        irprof.opt(text, "builtin.module(no-such-pass)")


def test_convert_trace_writes_one_file_or_a_rank_dataset_with_progress(tmp_path: Path) -> None:
    from irprof.analyses.rank_dataset import ConvertedTrace, RankDataset

    public = Path(__file__).parent / "fixtures" / "traces" / "public"
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in (0, 1):
        name = f"trace_filter__sampled_rank-{rank}.json.gz"
        shutil.copy(public / name, ranks / name)
    # One file: streamed to Parquet, every event of the trace as the reader sees it.
    single = irprof.convert_trace(
        ranks / "trace_filter__sampled_rank-0.json.gz", tmp_path / "e.parquet"
    )
    assert isinstance(single, ConvertedTrace) and single.streamed
    assert single.events == len(irprof.read_trace(ranks / "trace_filter__sampled_rank-0.json.gz"))
    assert len(irprof.read_trace(tmp_path / "e.parquet")) == single.events
    # A folder of ranks: a dataset partitioned by rank, progress reported once per rank.
    reports: list[tuple[int, int]] = []
    dataset = irprof.convert_trace(
        ranks,
        tmp_path / "ds",
        workers=0,
        on_progress=lambda done, total: reports.append((done, total)),
    )
    assert isinstance(dataset, RankDataset) and not dataset.failures
    assert sorted(part.rank for part in dataset.parts) == [0, 1]
    assert reports == [(1, 2), (2, 2)] and dataset.converted_by == "in this process"
    with pytest.raises(irprof.UsageError, match="dataset folder, not one file"):
        irprof.convert_trace(ranks, tmp_path / "ds.parquet", workers=0)
