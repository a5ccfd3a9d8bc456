"""What the HTML report gathers from a bundle (`build_report_data`), checked field by field
against values worked out from the bundle itself: the op texts at their length limits, the
unannotated ops and why, the DAG file, the per-level tables, noise and roofline, and a diff."""

from __future__ import annotations

import io
import shutil
from dataclasses import replace
from pathlib import Path

import msgspec
import orjson
import pytest
from iree.compiler import ir

from irprof.analyses.annotated_level import AnnotatedLevel, load_annotated_level
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.report_data import (
    IR_LOCATION_LIMIT,
    IR_TEXT_LIMIT,
    _ir_texts,
    _unannotated,
    build_report_data,
)
from irprof.analyses.step_stats import bundle_step_samples
from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, SchedRecord, ThreadSched
from irprof.coverage import Coverage, UnmatchedOp, save_coverages
from irprof.errors import BundleError, UsageError
from irprof.mlir.context import make_context
from irprof.opprofile import ProfileData
from tests.analyses.test_support import FIXTURES, LAYERS, annotate_copy, make_bundle
from tests.analyses.test_top_view_mutants import STEP_US, bundle_with_steps

ELEMENTS = ", ".join(str(i) for i in range(1, 18))  # 17 elements: over the limit of 16


def _module(marker: str, location: str, *, elements: bool = True) -> str:
    big = f"big = dense<[{ELEMENTS}]> : tensor<17xi32>, " if elements else ""
    return f"""
module {{
  func.func @f(%x: f32 {{test.a = 1 : i32}}) -> f32 {{
    %0 = arith.addf %x, %x {{{big}marker = "{marker}"}} : f32 loc({location})
    %1 = scf.execute_region -> f32 {{
      scf.yield %0 : f32
    }}
    return %1 : f32
  }}
}}
"""


def _printed(marker: str, location: str, *, elements: bool = True) -> tuple[str, str]:
    """The report's text of the `arith.addf` (walk index 1) and the op as MLIR's printer
    writes it (without its location)."""
    with make_context():
        module = ir.Module.parse(_module(marker, location, elements=elements))
        func = module.body.operations[0]
        add = func.regions[0].blocks[0].operations[0]
        buffer = io.StringIO()
        add.print(file=buffer)
        return _ir_texts(module, {1})[1], buffer.getvalue()


def _texts(marker: str, location: str, *, elements: bool = True) -> tuple[str, int]:
    """The report's text of the `arith.addf` and the length of its printed op."""
    text, printed = _printed(marker, location, elements=elements)
    return text, len(printed)


def test_ops_with_regions_show_their_header_up_to_the_first_brace() -> None:
    with make_context():
        module = ir.Module.parse(_module("m", '"n"'))
        texts = _ir_texts(module, {0, 2, 4})
    # The function's header stops at the first `{` (its argument's attributes).
    assert texts[0] == "func.func @f(%arg0: f32 { ... }"
    assert texts[2] == "%1 = scf.execute_region -> f32 { ... }"
    assert texts[4].startswith("func.return %1 : f32")


def test_a_short_op_keeps_its_seventeen_elements_and_its_location() -> None:
    text, _ = _texts("m", '"n"')
    assert f"dense<[{ELEMENTS}]>" in text and "__elided__" not in text
    assert text.endswith(' loc("n")')


def test_an_op_over_four_times_the_limit_has_its_elements_elided() -> None:
    text, length = _texts("a" * 17_000, '"n"')
    assert 4 * IR_TEXT_LIMIT < length < 5 * IR_TEXT_LIMIT
    assert "big = dense_resource<__elided__> : tensor<17xi32>" in text
    assert ELEMENTS not in text
    assert text.endswith(" ...") and len(text) == IR_TEXT_LIMIT + 4


def test_an_op_of_exactly_four_times_the_limit_is_printed_as_it_is() -> None:
    _, base = _texts("", '"n"')
    text, length = _texts("a" * (4 * IR_TEXT_LIMIT - base), '"n"')
    assert length == 4 * IR_TEXT_LIMIT
    assert f"dense<[{ELEMENTS}]>" in text and "__elided__" not in text


def test_text_of_exactly_the_limit_is_whole_one_more_is_cut() -> None:
    long_location = '"' + "l" * IR_LOCATION_LIMIT + '"'
    _, base = _texts("", long_location, elements=False)
    text, length = _texts("a" * (IR_TEXT_LIMIT - base), long_location, elements=False)
    assert length == IR_TEXT_LIMIT and len(text) == IR_TEXT_LIMIT and not text.endswith("...")
    longer, printed = _printed("a" * (IR_TEXT_LIMIT - base + 1), long_location, elements=False)
    assert len(printed) == IR_TEXT_LIMIT + 1
    assert longer == printed[:IR_TEXT_LIMIT] + " ..."


def test_a_location_of_exactly_its_limit_is_kept() -> None:
    location = '"' + "n" * (IR_LOCATION_LIMIT - 7) + '"'  # printed as loc("nnn...")
    text, _ = _texts("m", location)
    assert text.endswith(f" loc({location})")
    assert len(f"loc({location})") == IR_LOCATION_LIMIT


def test_the_location_is_kept_only_while_text_space_location_fit_the_limit() -> None:
    location = '"' + "n" * 193 + '"'  # printed as 200 characters
    printed = f"loc({location})"
    assert len(printed) == 200
    _, base = _texts("", location, elements=False)
    fits = IR_TEXT_LIMIT - 1 - len(printed) - base  # text + " " + location == the limit
    text, length = _texts("a" * fits, location, elements=False)
    assert length + 1 + len(printed) == IR_TEXT_LIMIT
    assert text.endswith(" " + printed) and len(text) == IR_TEXT_LIMIT
    over, length = _texts("a" * (fits + 1), location, elements=False)
    assert length + 1 + len(printed) == IR_TEXT_LIMIT + 1
    assert "loc(" not in over and len(over) == length


# --- ops without a profile, and why ------------------------------------------------------

PROFILE = ProfileData.from_durations([500], first_ts_ns=0, profiled_ns=1_000, kernels=["k"])


def _op(index: int, **fields: object) -> ProfiledOp:
    base: dict[str, object] = {
        "index": index,
        "op_name": f"t.op{index}",
        "function": "f",
        "runtime_name": "",
        "scope": "",
        "source": "",
        "chain": (),
        "location": f"loc{index}",
        "profile": None,
        "trivial": False,
    }
    base.update(fields)
    return ProfiledOp(**base)  # type: ignore[arg-type]


OPS = (
    # Named, placed at its source; coverage gives a reason under its printed location.
    _op(0, runtime_name="net/relu", source="m.py:3:1", chain=("a.py:9:1",)),
    # A private-function op reached by two calls: named and placed through the calls.
    _op(1, call_name="jit(f)", call_sites=2, call_chain=("<frozen x>:1:1", "u.py:5:1")),
    # No name; coverage gives a reason under its source position.
    _op(2, source="c.py:1:1"),
    # No name, source or reason: its location and the fallback reason.
    _op(3),
    _op(4, trivial=True),  # a trivial op: never listed
    _op(5, profile=PROFILE, runtime_name="net/dense"),  # measured: never listed
)
COVERAGE = Coverage(
    level="x",
    profiled_ns=1_000,
    attributed_ns=500,
    ops_total=6,
    ops_nontrivial=5,
    ops_annotated=1,
    ops_nontrivial_annotated=1,
    unmatched_ops=(
        UnmatchedOp(op_name="t.op0", location="loc0", reason="by location"),
        UnmatchedOp(op_name="t.op2", location="c.py:1:1", reason="by source"),
    ),
)
FALLBACK = "no profiled event carries this op's name or source position"


def _level() -> AnnotatedLevel:
    with make_context():
        module = ir.Module.parse("module {}")
    return AnnotatedLevel("x", Path("x.mlir"), module, ProfiledModule("x.mlir", OPS, {}))


def test_unannotated_ops_are_named_placed_and_explained() -> None:
    listed = _unannotated(_level(), COVERAGE)
    assert [(u.op_index, u.op_name) for u in listed] == [
        (0, "t.op0"),
        (1, "t.op1"),
        (2, "t.op2"),
        (3, "t.op3"),
    ]
    assert [u.name for u in listed] == ["net/relu", "jit(f)/t.op1 (2 call sites)", "", ""]
    assert [u.location for u in listed] == ["m.py:3:1", "u.py:5:1", "c.py:1:1", "loc3"]
    assert [u.reason for u in listed] == ["by location", FALLBACK, "by source", FALLBACK]


def test_without_coverage_every_reason_is_the_fallback() -> None:
    listed = _unannotated(_level(), None)
    assert [u.reason for u in listed] == [FALLBACK] * 4


# --- the whole report of a bundle ---------------------------------------------------------


@pytest.fixture(scope="module", name="jax_run")
def fixture_jax_run(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The real JAX MLP capture: step samples and the manifest's noise record."""
    return annotate_copy(FIXTURES / "jax" / "mlp_run", tmp_path_factory.mktemp("jax") / "run")


PEAKS = MachinePeaks(100.0, 10.0, "given")


def test_the_report_holds_the_bundle_its_levels_and_their_views(jax_run: RunBundle) -> None:
    report = build_report_data(jax_run, peaks=PEAKS)
    assert report.bundle == str(jax_run.root)
    assert report.against == ""
    assert report.peaks is PEAKS
    assert report.coverages == jax_run.coverages() and report.coverages
    assert report.dag is None  # no dag.json in the bundle
    trace = jax_run.primary_trace_path.relative_to(jax_run.root).as_posix()
    assert report.dag_note == f"causal DAG of {trace}" and report.event_dag is not None
    (level,) = report.levels
    assert level.annotated.level == "stablehlo" == jax_run.annotated_levels()[0]
    assert level.coverage == jax_run.coverages()["stablehlo"]
    assert level.roofline is not None and level.roofline.peaks is PEAKS
    assert level.roofline.level == "stablehlo"
    assert level.scopes is not None and level.graph is not None
    assert level.diff is None
    ops = level.annotated.profiled.ops
    # Every measured op's and every drawn op's text (the return only through the graph).
    measured = {op.index for op in ops if op.profile is not None}
    drawn = {node.op_index for node in level.graph.nodes if node.op_index is not None}
    assert measured <= set(level.ir_texts) and drawn <= set(level.ir_texts)
    assert any(ops[i].op_name == "func.return" for i in drawn)


def test_the_tables_carry_the_runs_noise_and_are_ranked_by_the_steps(jax_run: RunBundle) -> None:
    options = jax_run.manifest().options["noise"]
    (level,) = build_report_data(jax_run).levels
    noise = level.noise
    assert noise is not None
    assert noise.steps == jax_run.manifest().steps == 3
    assert noise.cpus == options["cpus"] == 2
    assert noise.load_1m == max(options["load_1m_before"], options["load_1m_after"])
    tables = (level.by_op, level.by_op_expanded, level.by_type, level.by_scope)
    assert [table.by for table in tables] == ["op", "op", "type", "scope"]
    for table in tables:
        assert table.noise == noise
        assert table.profiled_ns == level.annotated.profiled.profiled_ns
        assert table.stat == "median"
    # Rows have their per-step times; an op's typical step, times three, ranks it.
    typical = bundle_step_samples(jax_run, level.annotated.profiled.ops).typical
    apart = 0
    for row in level.by_op.rows:
        assert row.steps == 3 and len(row.step_ns) == 3
        if row.ops == 1 and row.op_index in typical:
            assert row.stat_ns == round(typical[row.op_index] * 3)
            apart += row.stat_ns != row.step_median_ns * 3
    assert apart  # the typical step is not the median of the steps' sums
    expanded_ops = sum(row.ops for row in level.by_op_expanded.rows)
    assert len(level.by_op_expanded.rows) == expanded_ops  # every op its own row
    assert len(level.by_op.rows) < expanded_ops  # a fused group is one row


def test_sum_ranks_by_the_attributed_totals(jax_run: RunBundle) -> None:
    (level,) = build_report_data(jax_run, stat="sum").levels
    assert level.by_op.stat == "sum"
    for row in level.by_op.rows:
        assert row.stat_ns == row.total_ns


def test_the_dag_file_is_read_when_it_is_an_object(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    bundle.dag_path.parent.mkdir(parents=True, exist_ok=True)
    bundle.dag_path.write_bytes(orjson.dumps({"nodes": [1, 2]}))
    report = build_report_data(bundle)
    assert report.dag == {"nodes": [1, 2]}
    assert report.event_dag is None and report.dag_note.startswith("trace not readable: ")
    bundle.dag_path.write_bytes(b"[1, 2]")
    assert build_report_data(bundle).dag is None
    bundle.dag_path.write_bytes(b"{not json")
    with pytest.raises(BundleError, match=r"dag\.json: not JSON \("):
        build_report_data(bundle)


def test_the_unannotated_op_has_the_reason_coverage_json_gives(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    (op,) = [op for op in load_annotated_level(bundle).profiled.ops if op.op_name == "tf.Reshape"]
    coverage = bundle.coverages()["tf"]
    reason = UnmatchedOp(op_name="tf.Reshape", location=op.location, reason="an alias")
    save_coverages(bundle.coverage_path, {"tf": replace(coverage, unmatched_ops=(reason,))})
    (level,) = build_report_data(RunBundle(bundle.root)).levels
    (reshape,) = level.unannotated
    assert (reshape.op_index, reshape.reason) == (op.index, "an alias")
    assert reshape.op_index in level.ir_texts


def test_a_bundle_without_annotated_ir_is_refused(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run", annotate=False)
    with pytest.raises(BundleError, match=r"no annotated IR under annotated/; run `irprof "):
        build_report_data(bundle)


def test_each_level_is_loaded_as_itself(tmp_path: Path) -> None:
    """Two annotated levels: each report level shows its own module (not the first twice)."""
    bundle = make_bundle(tmp_path / "run")
    manifest = bundle.manifest()
    bundle.write_manifest(type(manifest)(**{**manifest.__dict__, "ir_levels": ("tf", "tf2")}))
    text = bundle.annotated_path("tf").read_text()
    bundle.annotated_path("tf2").write_text(text.replace("tf.Softmax", "tf.Sigmoid"))
    report = build_report_data(bundle)
    assert [level.annotated.level for level in report.levels] == ["tf", "tf2"]
    names = [{op.op_name for op in level.annotated.profiled.ops} for level in report.levels]
    assert "tf.Softmax" in names[0] and "tf.Sigmoid" in names[1]
    assert load_annotated_level(bundle, "tf2").level == "tf2"


def test_a_report_against_another_run_diffs_each_shared_level(
    jax_run: RunBundle, tmp_path: Path
) -> None:
    other = RunBundle(tmp_path / "other")
    shutil.copytree(jax_run.root, other.root)
    report = build_report_data(jax_run, against=other)
    assert report.against == str(other.root)
    (level,) = report.levels
    assert level.diff is not None
    assert level.diff.run_a == str(other.root) and level.diff.run_b == str(jax_run.root)
    assert level.diff.level_a == level.diff.level_b == "stablehlo"


def test_a_report_against_a_run_sharing_no_level_is_refused(
    jax_run: RunBundle, tmp_path: Path
) -> None:
    other = make_bundle(tmp_path / "tf")
    manifest = other.manifest()
    other.write_manifest(replace(manifest, ir_levels=("tf", "tf2")))
    shutil.copy(other.annotated_path("tf"), other.annotated_path("tf2"))
    with pytest.raises(UsageError) as refused:
        build_report_data(jax_run, against=RunBundle(other.root))
    assert str(refused.value) == (
        f"{other.root} (annotated: tf, tf2) shares no annotated level with {jax_run.root} "
        "(annotated: stablehlo); annotate the same level in both"
    )


def test_a_report_against_an_unannotated_run_names_the_levels_of_each(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    manifest = bundle.manifest()
    bundle.write_manifest(type(manifest)(**{**manifest.__dict__, "ir_levels": ("tf", "tf2")}))
    shutil.copy(bundle.annotated_path("tf"), bundle.annotated_path("tf2"))
    other = make_bundle(tmp_path / "other", annotate=False)
    with pytest.raises(UsageError) as refused:
        build_report_data(bundle, against=other)
    assert str(refused.value) == (
        f"{other.root} (annotated: none) shares no annotated level with {bundle.root} "
        "(annotated: tf, tf2); annotate the same level in both"
    )


def test_tables_of_on_cpu_time_by_default_say_so_when_the_scheduler_was_recorded(
    tmp_path: Path,
) -> None:
    bundle = bundle_with_steps(tmp_path / "run")
    thread = ThreadSched(2, "python", [0, 10 * STEP_US * 1_000], [])
    record = SchedRecord(1, "CLOCK_REALTIME ns", 0, 0, 0, [thread])
    (bundle.root / SCHED_FILE).write_bytes(msgspec.json.encode(record))
    (level,) = build_report_data(RunBundle(bundle.root)).levels
    for table in (level.by_op, level.by_op_expanded, level.by_type, level.by_scope):
        assert table.oncpu_note.startswith("on-CPU time: each event's waits for a CPU")
    (wall,) = build_report_data(RunBundle(bundle.root), time="wall").levels
    assert wall.by_op.oncpu_note == ""


def test_the_diff_compares_the_shared_level_not_the_other_runs_first(tmp_path: Path) -> None:
    bundle = bundle_with_steps(tmp_path / "b")
    against = bundle_with_steps(tmp_path / "a")
    manifest = against.manifest()
    against.write_manifest(replace(manifest, ir_levels=("pre", "tf")))
    text = against.annotated_path("tf").read_text()
    against.annotated_path("pre").write_text(text.replace("tf.Softmax", "tf.Sigmoid"))
    (level,) = build_report_data(bundle, against=RunBundle(against.root)).levels
    assert level.diff is not None
    assert (level.diff.level_a, level.diff.level_b) == ("tf", "tf")


def test_a_level_without_ops_has_no_graph(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    bundle.annotated_path("tf").write_text("module {\n}\n")
    (level,) = build_report_data(RunBundle(bundle.root)).levels
    assert level.annotated.profiled.ops == ()
    assert level.graph is None and level.by_op.rows == () and level.ir_texts == {}


def test_shares_are_of_the_summarys_profiled_time_not_of_the_rows_sum(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    (level,) = build_report_data(bundle).levels
    profiled_ns = sum(ns for _, _, ns in LAYERS if ns) + 250_000  # plus unattributed time
    for table in (level.by_op, level.by_op_expanded, level.by_type, level.by_scope):
        assert table.profiled_ns == profiled_ns
    conv = next(row for row in level.by_op_expanded.rows if row.key.endswith("conv1/Conv2D"))
    assert conv.share == pytest.approx(5_000_000 / profiled_ns)
