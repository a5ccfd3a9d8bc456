"""`load_top_view` on a small bundle whose trace gives one op two events per step: the
default options, the median taken event by event, the model script and the roofline's level
and peaks.

Written from the mutants of `analyses/top_view.py`. The bundle is the views' synthetic TF
model (`tests/analyses/test_support.py`) with a Chrome trace of three profiler steps; every
figure checked is worked out below from the event durations the test writes.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import statistics
from pathlib import Path

import msgspec

from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.top_view import load_top_view
from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, SchedRecord, ThreadSched
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module, write_module
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import attach_profile, get_profile
from tests.analyses.test_support import LAYERS, make_bundle

MATMUL = "sequential/dense1/MatMul"
STEP_US = 1_000
# The MatMul's two events in each of the three steps, in microseconds. Step by step the sums
# are 11, 11 and 2 (median 11); event by event the medians are 1 and 1 (typical step 2).
MATMUL_EVENTS_US = ((1, 10), (10, 1), (1, 1))


def bundle_with_steps(root: Path) -> RunBundle:
    """The synthetic bundle plus a trace of three steps: the MatMul's events only."""
    bundle = make_bundle(root)
    events: list[dict[str, object]] = []
    for step, durations in enumerate(MATMUL_EVENTS_US):
        start = step * STEP_US
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1,
             "tid": 1, "ts": start, "dur": STEP_US - 1}
        )  # fmt: skip
        cursor = start + 1
        for duration in durations:
            events.append(
                {"ph": "X", "cat": "cpu_op", "name": f"{MATMUL}:MatMul", "pid": 1, "tid": 2,
                 "ts": cursor, "dur": duration}
            )  # fmt: skip
            cursor += duration + 1
    (bundle.trace_dir / "steps.json").write_text(json.dumps({"traceEvents": events}))
    manifest = bundle.manifest()
    bundle.write_manifest(dataclasses.replace(manifest, trace_files=("trace/steps.json",)))
    return RunBundle(bundle.root)


def test_defaults_rank_ops_by_the_event_by_event_median(tmp_path: Path) -> None:
    view = load_top_view(bundle_with_steps(tmp_path / "run"))
    table = view.table
    assert table.by == "op" and table.stat == "median" and view.level == "tf"
    assert view.roofline is None
    # Every profiled op is a row of its own, keyed by its node name.
    profiled = [node for _, node, ns in LAYERS if ns is not None]
    assert sorted(row.key for row in table.rows) == sorted(profiled)
    matmul = next(row for row in table.rows if row.key == MATMUL)
    # The trace's times are scaled to the op's attributed total (2 ms): 24 us were traced.
    measured_ns = dict((node, ns) for _, node, ns in LAYERS)[MATMUL]
    assert measured_ns is not None and matmul.total_ns == measured_ns
    scale = measured_ns / (sum(map(sum, MATMUL_EVENTS_US)) * 1_000)
    occurrences = zip(*MATMUL_EVENTS_US, strict=True)
    typical_ns = sum(statistics.median(values) for values in occurrences) * 1_000 * scale
    steps = len(MATMUL_EVENTS_US)
    assert matmul.stat_ns == round(typical_ns * steps) == 500_000
    per_step = [round(sum(durations) * 1_000 * scale) for durations in MATMUL_EVENTS_US]
    assert matmul.step_ns == tuple(per_step)
    # Step by step the median is 11/24 of the total: far from the event-by-event one.
    assert matmul.step_median_ns == statistics.median(per_step) == 916_667


def test_the_script_is_the_manifests_model_when_no_file_is_there(tmp_path: Path) -> None:
    view = load_top_view(make_bundle(tmp_path / "run"))
    assert view.script == "examples/tf_cnn.py"


def test_the_script_is_a_path_to_the_model_when_it_exists(tmp_path: Path) -> None:
    script = tmp_path / "examples" / "tf_cnn.py"
    script.parent.mkdir()
    script.write_text("print('model')\n")
    view = load_top_view(make_bundle(tmp_path / "run"))
    assert Path(view.script).resolve() == script.resolve()


def test_the_roofline_has_the_level_and_the_peaks_given(tmp_path: Path) -> None:
    peaks = MachinePeaks(gflops=100.0, gbps=10.0, source="given")
    view = load_top_view(make_bundle(tmp_path / "run"), with_roofline=True, peaks=peaks)
    assert view.roofline is not None
    assert view.roofline.level == "tf"
    assert view.roofline.peaks == peaks
    assert view.roofline.by == "op"
    unpeaked = load_top_view(make_bundle(tmp_path / "other"), with_roofline=True)
    assert unpeaked.roofline is not None and unpeaked.roofline.peaks is None


def test_an_estimated_share_stays_marked_with_its_group_unless_expanded(tmp_path: Path) -> None:
    """The MatMul's time made an estimated share of a two-op group whose other member is not
    a row: collapsed (the default), its row names the group; expanded, it does not."""
    bundle = make_bundle(tmp_path / "run")
    path = bundle.annotated_path("tf")
    module = parse_module(path.read_text(), make_context())
    for info in derive_op_infos(module):
        data = get_profile(info.op)
        if info.op_name == "tf.MatMul" and data is not None:
            shared = dataclasses.replace(
                data, group="fusion.1", group_total_ns=2 * data.total_ns, group_size=2
            )
            attach_profile(info.op, shared)
    write_module(path, module)
    collapsed = load_top_view(RunBundle(bundle.root)).table
    assert {row.key: row.group for row in collapsed.rows}[MATMUL] == "fusion.1"
    assert {row.key: row.estimated_ns for row in collapsed.rows}[MATMUL] == 2_000_000
    expanded = load_top_view(RunBundle(bundle.root), expand_groups=True).table
    assert {row.key: row.group for row in expanded.rows}[MATMUL] == ""


def test_the_options_given_reach_the_table(tmp_path: Path) -> None:
    """Every option `load_top_view` takes reaches the ranking: the level and grouping asked
    for, the statistic, the row limit, the profiled total of the level (not of the rows kept),
    the noise record of the manifest and, without a scheduler record, no on-CPU note."""
    bundle = bundle_with_steps(tmp_path / "run")
    noise = {"load_1m_before": 3.5, "load_1m_after": 1.0, "cpus": 2, "steal_share": 0.125}
    manifest = bundle.manifest()
    options = {**manifest.options, "noise": noise}
    bundle.write_manifest(dataclasses.replace(manifest, options=options))
    view = load_top_view(RunBundle(bundle.root), level="tf", limit=1, time="wall")
    table = view.table
    every = load_top_view(RunBundle(bundle.root), level="tf", limit=None, time="wall").table
    assert len(every.rows) > 1 and table.rows == every.rows[:1]
    # The level's profiled time: every op of LAYERS and the 250 us no op holds (test_support),
    # not only the row kept.
    profiled = sum(ns for _, _, ns in LAYERS if ns is not None) + 250_000
    assert table.profiled_ns == view.profiled.profiled_ns == profiled
    assert table.noise is not None
    assert (table.noise.load_1m, table.noise.cpus, table.noise.steal_share) == (3.5, 2, 0.125)
    assert table.noise.warnings[0] == (
        "load average 3.50 exceeded the 2 CPUs during capture: "
        "other processes competed for the cores"
    )
    assert table.oncpu_note == ""
    by_type = load_top_view(RunBundle(bundle.root), by="type").table
    assert by_type.by == "type"
    assert load_top_view(RunBundle(bundle.root), stat="min").table.stat == "min"


def test_on_cpu_time_is_the_default_when_the_scheduler_was_recorded(tmp_path: Path) -> None:
    """With a scheduler record (the MatMul's thread on a CPU throughout, never waiting), the
    default ranks on-CPU time and says so in the note; `time="wall"` leaves the note out."""
    bundle = bundle_with_steps(tmp_path / "run")
    thread = ThreadSched(2, "python", [0, 10 * STEP_US * 1_000], [])
    record = SchedRecord(1, "CLOCK_REALTIME ns", 0, 0, 0, [thread])
    (bundle.root / SCHED_FILE).write_bytes(msgspec.json.encode(record))
    oncpu = load_top_view(RunBundle(bundle.root)).table
    assert oncpu.oncpu_note.startswith("on-CPU time: each event's waits for a CPU")
    wall = load_top_view(RunBundle(bundle.root), time="wall").table
    assert wall.oncpu_note == ""
    # No waits: both rank the MatMul at its event-by-event median (see the first test).
    assert {row.key: row.stat_ns for row in oncpu.rows}[MATMUL] == 500_000
    assert {row.key: row.stat_ns for row in wall.rows}[MATMUL] == 500_000


def test_the_level_asked_for_is_loaded_not_the_first(tmp_path: Path) -> None:
    """A bundle annotated at two levels ("hlo" first): the default is the first, and
    `level="tf"` loads tf's module."""
    bundle = make_bundle(tmp_path / "run")
    shutil.copy(bundle.annotated_path("tf"), bundle.annotated_path("hlo"))
    manifest = bundle.manifest()
    bundle.write_manifest(dataclasses.replace(manifest, ir_levels=("hlo", "tf")))
    assert load_top_view(RunBundle(bundle.root)).level == "hlo"
    view = load_top_view(RunBundle(bundle.root), level="tf")
    assert view.level == "tf"
    assert view.profiled.path.endswith("annotated/tf.mlir")


def test_untimed_reference_time_is_scaled_to_the_timed_steps(tmp_path: Path) -> None:
    """Ops recorded only in the reference steps: their time there, times timed steps over
    reference steps (3 timed, 2 reference: 1 ms -> 1.5 ms); 0 without a record of it."""
    from irprof.coverage import Coverage

    bundle = bundle_with_steps(tmp_path / "run")
    assert load_top_view(bundle).table.untimed_ns == 0  # no coverage record
    bundle.record_coverage(Coverage("tf", 2_000_000, 2_000_000, 4, 3, 3, 3))
    assert load_top_view(RunBundle(bundle.root)).table.untimed_ns == 0  # none untimed
    extra = {"untimed_reference_ns": 1_000_000}
    bundle.record_coverage(Coverage("tf", 2_000_000, 2_000_000, 4, 3, 3, 3, extra=extra))
    manifest = bundle.manifest()
    assert manifest.steps == 3
    options = {**manifest.options, "reference_steps": 2}
    bundle.write_manifest(dataclasses.replace(manifest, options=options))
    assert load_top_view(RunBundle(bundle.root)).table.untimed_ns == 1_500_000
    options = {**manifest.options, "reference_steps": "two"}  # unreadable: unscaled
    bundle.write_manifest(dataclasses.replace(manifest, options=options))
    assert load_top_view(RunBundle(bundle.root)).table.untimed_ns == 1_000_000
    # boundaries: one reference step scales by the timed steps, none (or a negative count)
    # leaves the time as recorded, and whole nanoseconds are kept (1 ns x 3 / 2 is 1 ns)
    for reference_steps, untimed_ns, expected in ((1, 1_000, 3_000), (0, 1_000, 1_000), (2, 1, 1)):
        extra = {"untimed_reference_ns": untimed_ns}
        bundle.record_coverage(Coverage("tf", 2_000_000, 2_000_000, 4, 3, 3, 3, extra=extra))
        options = {**manifest.options, "reference_steps": reference_steps}
        bundle.write_manifest(dataclasses.replace(manifest, options=options))
        shown = load_top_view(RunBundle(bundle.root)).table.untimed_ns
        assert shown == expected and isinstance(shown, int), (reference_steps, untimed_ns)
