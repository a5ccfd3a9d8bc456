"""Run diff figures on hand-built runs: per-step times, deltas, intervals, rollups and notes.

Written from the mutants of `analyses/run_diff.py` the first tests let through. Two runs are
built from op lists and per-step samples, so every figure the diff shows is known in the test:
the per-step time of each op, scope, op kind and the total (inclusive calls left out), the
delta and its percentage of A, an interval that is a single point when every step took the
same time, the significance and `--fail-if-slower` at their edges, the order of rows, the
method labels, the match counts, the notes and the JSON and table forms.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.analyses.annotated_level import AnnotatedLevel
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.run_diff import (
    DiffOptions,
    DiffRow,
    DiffSide,
    RunDiff,
    common_level,
    diff_runs,
    load_diff_side,
)
from irprof.analyses.run_diff_samples import NO_SAMPLES, Samples, bootstrap_delta
from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.manifest import Manifest
from irprof.opprofile import ProfileData


def profile(total_ns: int, source: str = "trace") -> ProfileData:
    return ProfileData(1, total_ns, total_ns, total_ns, total_ns, 0, 0.5, source=source)


def op(
    index: int,
    name: str,
    kind: str,
    scope: str = "",
    source: str = "",
    *,
    callee: str = "",
    profiled: bool = True,
) -> ProfiledOp:
    return ProfiledOp(
        index=index,
        op_name=kind,
        function="main",
        runtime_name=name,
        scope=scope,
        source=source,
        chain=(),
        location=f"loc{index}",
        profile=profile(1) if profiled else None,
        trivial=False,
        callee=callee,
    )


def side(label: str, ops: list[ProfiledOp], samples: dict[int, Samples]) -> DiffSide:
    return DiffSide(label, "tf", ProfiledModule(f"{label}.mlir", tuple(ops), {}), samples, 3, 3)


def steps(*values: int) -> Samples:
    return Samples("step-markers", values, len(values))


OPTIONS = DiffOptions(confidence=0.9, resamples=100, seed=1)


def two_runs() -> tuple[DiffSide, DiffSide]:
    """conv in scope `block` (100 -> 150 per step), relu in `block` (40 -> 30), add without a
    scope (10 -> 10), a call repeating its callee's time (never summed), and one op per side
    the other lacks. Every step takes the same time, so each interval is one point."""
    a_ops = [
        op(0, "conv", "tf.Conv2D", "block", "m.py:1:1"),
        op(1, "relu", "tf.Relu", "block", "m.py:2:1"),
        op(2, "add", "tf.AddV2", "", "m.py:3:1"),
        op(3, "call", "func.call", "block", "m.py:4:1", callee="f"),
        op(4, "old", "tf.Mul", "", "m.py:5:1"),
    ]
    b_ops = [
        op(0, "conv", "tf.Conv2D", "block", "m.py:1:1"),
        op(1, "relu", "tf.Relu", "block", "m.py:2:1"),
        op(2, "add", "tf.AddV2", "", "m.py:3:1"),
        op(3, "call", "func.call", "block", "m.py:4:1", callee="f"),
        op(4, "new", "tf.Sub", "", "m.py:6:1"),
    ]
    a = side(
        "A",
        a_ops,
        {
            0: steps(100, 100),
            1: steps(40, 40),
            2: steps(10, 10),
            3: steps(999, 999),
            4: steps(7, 7),
        },
    )
    b = side(
        "B",
        b_ops,
        {0: steps(150, 150), 1: steps(30, 30), 2: steps(10, 10), 3: steps(1, 1), 4: steps(3, 3)},
    )
    return a, b


def test_every_row_of_a_diff_is_the_per_step_time_of_its_ops() -> None:
    diff = diff_runs(*two_runs(), OPTIONS)
    rows = {row.key: row for row in diff.ops}
    # (a, b) per op, per step; the call is no candidate (it repeats its callee's time).
    expected = {"conv": (100, 150), "relu": (40, 30), "add": (10, 10), "old": (7, 0), "new": (0, 3)}
    assert {key: (row.a_ns, row.b_ns) for key, row in rows.items()} == expected
    # Largest |delta| first, ties by key: conv 50, relu 10, old 7, new 3, add 0.
    assert [row.key for row in diff.ops] == ["conv", "relu", "old", "new", "add"]
    assert rows["conv"].interval == (50.0, 50.0)
    assert rows["conv"].significant and rows["conv"].delta_pct == 50.0
    assert rows["add"].interval == (0.0, 0.0) and not rows["add"].significant
    assert (rows["old"].a_index, rows["old"].b_index, rows["old"].match) == (4, -1, "only in A")
    assert (rows["new"].a_index, rows["new"].b_index, rows["new"].match) == (-1, 4, "only in B")
    assert rows["new"].interval == (3.0, 3.0)  # a side without the op has none of its time
    assert (rows["conv"].kind, rows["conv"].location, rows["conv"].match) == (
        "tf.Conv2D",
        "m.py:1:1",
        "name+source",
    )
    assert diff.match_counts == {"name+source": 3, "only in B": 1, "only in A": 1}
    # The total leaves the call out: 100 + 40 + 10 + 7 against 150 + 30 + 10 + 3.
    assert (diff.total.a_ns, diff.total.b_ns) == (157, 193)
    assert diff.total.interval == (36.0, 36.0)
    assert (diff.total.key, diff.total.kind, diff.total.location, diff.total.match) == (
        "all ops",
        "",
        "",
        "",
    )
    scopes = {row.key: (row.a_ns, row.b_ns) for row in diff.scopes}
    assert scopes == {"block": (140, 180), "(no scope)": (17, 13)}
    assert [row.key for row in diff.scopes] == ["block", "(no scope)"]
    kinds = {row.key: (row.a_ns, row.b_ns) for row in diff.kinds}
    assert kinds == {
        "tf.Conv2D": (100, 150),
        "tf.Relu": (40, 30),
        "tf.AddV2": (10, 10),
        "tf.Mul": (7, 0),
        "tf.Sub": (0, 3),
    }
    assert [row.key for row in diff.kinds] == [
        "tf.Conv2D",
        "tf.Relu",
        "tf.Mul",
        "tf.Sub",
        "tf.AddV2",
    ]
    assert all(row.kind == row.location == row.match == "" for row in diff.scopes + diff.kinds)
    assert (diff.run_a, diff.run_b, diff.level_a, diff.level_b) == ("A", "B", "tf", "tf")
    assert (diff.steps_a, diff.steps_b, diff.options) == (3, 3, OPTIONS)
    assert (diff.method_a, diff.method_b, diff.notes, diff.fusion) == (
        "step-markers",
        "step-markers",
        (),
        (),
    )


def test_ties_in_delta_are_ordered_by_key() -> None:
    ops = [op(0, "b", "tf.B", "s2"), op(1, "a", "tf.A", "s1"), op(2, "c", "tf.C", "s1")]
    a = side("A", ops, {0: steps(10, 10), 1: steps(10, 10), 2: steps(5, 5)})
    b = side("B", ops, {0: steps(20, 20), 1: steps(0, 0), 2: steps(5, 5)})
    diff = diff_runs(a, b, OPTIONS)
    assert [row.key for row in diff.ops] == ["a", "b", "c"]  # |-10| and |+10| tie
    assert [row.key for row in diff.kinds] == ["tf.A", "tf.B", "tf.C"]
    assert [(row.key, row.delta_ns) for row in diff.scopes] == [("s1", -10), ("s2", 10)]


def test_intervals_use_the_options() -> None:
    ops = [op(0, "x", "tf.X")]
    a_samples, b_samples = steps(10, 30, 20, 50), steps(40, 10, 60, 70)
    a, b = side("A", ops, {0: a_samples}), side("B", ops, {0: b_samples})
    for options in (DiffOptions(0.5, 100, 3), DiffOptions(0.99, 250, 7)):
        diff = diff_runs(a, b, options)
        expected = bootstrap_delta(
            (a_samples,),
            (b_samples,),
            resamples=options.resamples,
            confidence=options.confidence,
            seed=options.seed,
        )
        assert diff.ops[0].interval == expected
        assert diff.total.interval == expected
        assert diff.kinds[0].interval == expected
    assert diff_runs(a, b).options == DiffOptions(0.95, 2000, 0)


def test_options_at_their_bounds() -> None:
    a, b = two_runs()
    diff_runs(a, b, DiffOptions(0.5, 100))  # 100 resamples is the least allowed
    for options in (DiffOptions(0.95, 99), DiffOptions(0.0, 100), DiffOptions(1.0, 100)):
        with pytest.raises(UsageError) as caught:
            diff_runs(a, b, options)
        assert str(caught.value) == "confidence must be in (0, 1) and resamples at least 100"


def test_ops_without_samples_on_both_sides_are_left_out_and_methods_combine() -> None:
    ops = [op(0, "x", "tf.X"), op(1, "y", "tf.Y"), op(2, "z", "tf.Z")]
    a = side("A", ops, {0: steps(10, 10), 2: Samples("profile-only", (8,), 1)})
    b = side(
        "B",
        ops,
        {
            0: Samples("event-bootstrap", (4, 6), 2),
            2: NO_SAMPLES,
            1: Samples("profile-only", (5,), 1),
        },
    )
    diff = diff_runs(a, b, OPTIONS)
    rows = {row.key: row for row in diff.ops}
    assert set(rows) == {"x", "y", "z"}
    assert rows["x"].method == "step-markers | event-bootstrap"
    assert (rows["x"].a_ns, rows["x"].b_ns) == (10, 5)
    assert rows["y"].method == "profile-only"  # A has no samples: B's method
    assert rows["z"].method == "profile-only"  # B's are "none": A's method
    assert (rows["z"].a_ns, rows["z"].b_ns, rows["z"].interval) == (8, 0, None)
    assert diff.method_a == "step-markers/profile-only"
    assert diff.method_b == "event-bootstrap/profile-only"
    assert diff.notes == (
        "A: some ops have no events in the trace: their time is the profile's total, without "
        "an interval",
        "B: no per-step samples for some ops (no step markers and kernels not a multiple of the "
        "step count): their intervals resample single events",
        "B: some ops have no events in the trace: their time is the profile's total, without "
        "an interval",
    )
    only_a = side("A", ops[:1], {0: steps(1, 1)})
    assert diff_runs(only_a, side("B", ops[:1], {}), OPTIONS).ops[0].key == "x"
    assert diff_runs(side("A", ops[:1], {}), side("B", ops[:1], {}), OPTIONS).ops == ()


def test_a_side_returns_no_samples_for_an_op_it_lacks() -> None:
    a, _ = two_runs()
    assert a.of(None) == ()
    assert a.of(9) == ()
    assert a.of(0) == (steps(100, 100),)


@pytest.mark.parametrize(
    ("interval", "significant"),
    [
        (None, False),
        ((0.0, 5.0), False),
        ((-5.0, 0.0), False),
        ((0.5, 5.0), True),
        ((-5.0, -0.5), True),
        ((-1.0, 1.0), False),
    ],
)
def test_significant_means_the_interval_excludes_zero(
    interval: tuple[float, float] | None, significant: bool
) -> None:
    assert DiffRow("x", "", "", "", 1.0, 2.0, interval, "m").significant is significant


def total_row(a_ns: float, b_ns: float, interval: tuple[float, float] | None) -> RunDiff:
    total = DiffRow("all ops", "", "", "", a_ns, b_ns, interval, "step-markers")
    return RunDiff("A", "B", "tf", "tf", 2, 2, "m", "m", OPTIONS, total, (), (), (), (), {}, ())


def test_fail_if_slower_needs_more_than_the_threshold_and_significance() -> None:
    assert total_row(100.0, 120.0, (10.0, 30.0)).slower_by_more_than(19.9)
    assert not total_row(100.0, 120.0, (10.0, 30.0)).slower_by_more_than(20.0)
    assert not total_row(100.0, 120.0, (-1.0, 30.0)).slower_by_more_than(5.0)
    assert not total_row(0.0, 120.0, (10.0, 30.0)).slower_by_more_than(5.0)
    assert total_row(100.0, 90.0, (-20.0, -1.0)).slower_by_more_than(-10.1)


def test_json_rounds_and_names_every_figure() -> None:
    row = DiffRow("k", "tf.X", "m.py:1:1", "name", 3.14, 4.46, (0.04, 2.06), "m", 1, 2)
    document = row.to_json()
    assert document == {
        "key": "k",
        "kind": "tf.X",
        "location": "m.py:1:1",
        "match": "name",
        "a_ns": 3.1,
        "b_ns": 4.5,
        "delta_ns": 1.3,
        "delta_pct": round((4.46 - 3.14) / 3.14 * 100.0, 3),
        "interval_ns": [0.0, 2.1],
        "significant": True,
        "method": "m",
        "a_index": 1,
        "b_index": 2,
    }
    assert all(isinstance(document[key], float) for key in ("a_ns", "b_ns", "delta_ns"))
    empty = DiffRow("k", "", "", "", 0.0, 1.0, None, "none").to_json()
    assert (empty["delta_pct"], empty["interval_ns"], empty["significant"]) == (None, None, False)
    assert (empty["a_index"], empty["b_index"]) == (-1, -1)


def test_fusion_changes_are_written_to_json() -> None:
    def fused(index: int, name: str, group: str, kernels: tuple[str, ...]) -> ProfiledOp:
        base = op(index, name, "tf.X", source=f"m.py:{index}:1")
        data = dataclasses.replace(profile(10), group=group, kernels=kernels, group_size=2)
        return dataclasses.replace(base, profile=data)

    a_ops = [fused(0, "x", "g", ("fk",)), fused(1, "y", "g", ("fk",))]
    b_ops = [fused(0, "x", "", ("kx",)), fused(1, "y", "", ("ky",))]
    samples = {0: steps(5, 5), 1: steps(5, 5)}
    diff = diff_runs(side("A", a_ops, samples), side("B", b_ops, samples), OPTIONS)
    assert diff.to_json()["fusion"] == [
        {
            "change": "split in B",
            "members": ["x", "y"],
            "kernels_a": ["fk"],
            "kernels_b": ["kx", "ky"],
        }
    ]


def test_run_diff_json_and_table() -> None:
    diff = diff_runs(*two_runs(), OPTIONS)
    document = diff.to_json()
    assert document["version"] == 1
    assert (document["run_a"], document["run_b"], document["level_a"], document["level_b"]) == (
        "A",
        "B",
        "tf",
        "tf",
    )
    assert document["steps"] == {"a": 3, "b": 3}
    assert document["samples"] == {"a": "step-markers", "b": "step-markers"}
    assert (document["confidence"], document["resamples"], document["seed"]) == (0.9, 100, 1)
    assert document["total"] == diff.total.to_json()
    assert document["ops"] == [row.to_json() for row in diff.ops]
    assert document["scopes"] == [row.to_json() for row in diff.scopes]
    assert document["kinds"] == [row.to_json() for row in diff.kinds]
    assert document["matches"] == {"name+source": 3, "only in B": 1, "only in A": 1}
    assert (document["fusion"], document["notes"]) == ([], [])
    columns = diff.table_columns()
    assert columns[0] == "part"
    assert columns[-3:] == ("delta_ns", "delta_pct", "significant")
    rows = diff.table_rows()
    assert [row[0] for row in rows] == ["op"] * 5 + ["scope"] * 2 + ["kind"] * 5
    assert rows[0][columns.index("key")] == "conv"
    assert rows[0][columns.index("delta_pct")] == 50.0
    assert rows[5][columns.index("key")] == "block"
    assert diff.table_caption() == "A (tf) -> B (tf), ns per step"


def bundle_with(
    root: Path, levels: tuple[str, ...], annotated: tuple[str, ...], markers: int = 2
) -> RunBundle:
    """A run bundle whose manifest lists `levels` and which has `annotated` levels, a trace of
    `markers` step markers and one kernel `k1` in each of the first two steps (20 us, then
    30 us), and 5 steps run."""
    root.mkdir()
    trace = {
        "traceEvents": [
            {"ph": "X", "name": f"ProfilerStep#{n}", "ts": 100 * n, "dur": 100, "pid": 1,
             "tid": 1, "cat": "user_annotation"}
            for n in range(markers)
        ] + [
            {"ph": "X", "name": "k1", "ts": 100 * n + 10, "dur": 20 + 10 * n, "pid": 2,
             "tid": 7, "cat": "kernel"}
            for n in range(2)
        ]
    }  # fmt: skip
    (root / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    (root / "annotated").mkdir()
    for level in annotated:
        (root / "annotated" / f"{level}.mlir").write_text("module {}\n", encoding="utf-8")
    bundle = RunBundle(root)
    bundle.write_manifest(Manifest("torch", "m.py", "main", 5, "cpu", {}, levels, ("trace.json",)))
    return bundle


def test_common_level_is_the_first_of_a_in_b(tmp_path: Path) -> None:
    a = bundle_with(tmp_path / "a", ("torch", "linalg", "tf"), ("torch", "linalg", "tf"))
    b = bundle_with(tmp_path / "b", ("tf", "linalg"), ("tf", "linalg"))
    assert common_level(a, b) == "linalg"
    assert common_level(b, a) == "tf"
    none = bundle_with(tmp_path / "c", ("stablehlo",), ())
    with pytest.raises(UsageError) as caught:
        common_level(a, none)
    assert str(caught.value) == (
        f"{a.root} (annotated: torch, linalg, tf) and {none.root} (annotated: none) share no "
        "annotated level; annotate one in both or pass --level and --level-b"
    )
    with pytest.raises(UsageError) as caught:
        common_level(none, b)
    assert str(caught.value).startswith(
        f"{none.root} (annotated: none) and {b.root} (annotated: tf, linalg) share no "
    )


def test_a_diff_side_reads_per_step_samples_from_the_trace(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", ("tf",), ("tf",))
    kernel_op = dataclasses.replace(
        op(0, "x", "tf.X"), profile=dataclasses.replace(profile(50_000), kernels=("k1",))
    )
    profiled = ProfiledModule("tf.mlir", (kernel_op,), {})
    with ir.Context():
        loaded = AnnotatedLevel(
            "tf", bundle.annotated_path("tf"), ir.Module.parse("module {}"), profiled
        )
        side_of_run = load_diff_side(bundle, "tf", "A", loaded)
        unlabelled = load_diff_side(bundle, "tf", loaded=loaded)
    assert (side_of_run.label, side_of_run.level, side_of_run.profiled) == ("A", "tf", profiled)
    assert unlabelled.label == str(bundle.root)
    # Two step markers: the steps are the markers (the manifest says 5 steps ran).
    assert (side_of_run.steps, side_of_run.step_markers) == (2, 2)
    assert list(side_of_run.samples) == [0]
    found = side_of_run.samples[0]
    assert (found.method, found.values, found.divisor) == ("step-markers", (20_000, 30_000), 2)
    one = bundle_with(tmp_path / "one", ("tf",), ("tf",), markers=1)
    with ir.Context():
        loaded = dataclasses.replace(loaded, path=one.annotated_path("tf"))
        one_marker = load_diff_side(one, "tf", "A", loaded)
    # Without a loaded level the side parses the one asked for (not the first annotated).
    two = bundle_with(tmp_path / "two", ("torch", "tf"), ("torch", "tf"))
    parsed = load_diff_side(two, "tf", "B")
    assert (parsed.level, parsed.profiled.ops, parsed.label) == ("tf", (), "B")
    assert load_diff_side(two, "torch").level == "torch"
    # One marker cannot split the run into steps: the manifest's step count stands.
    assert (one_marker.steps, one_marker.step_markers) == (5, 1)


def test_a_diff_side_of_a_carried_down_level_reads_its_upper_ops_events(tmp_path: Path) -> None:
    """linalg ops of a torch run: each op's steps from the events its torch ops were measured by
    (`measured_events`), worked out here from the raw Chrome JSON as in
    `test_reattached_step_samples.py`."""
    import shutil

    from irprof.annotation import annotate_bundle
    from tests.analyses.test_reattached_step_samples import FIXTURE, expected_steps

    shutil.copytree(FIXTURE, tmp_path / "run")
    bundle = RunBundle(tmp_path / "run")
    annotate_bundle(bundle, "torch")
    annotate_bundle(bundle, "linalg")
    expected = expected_steps(bundle)
    side_b = load_diff_side(bundle, "linalg", "B")
    checked = 0
    for each in side_b.profiled.ops:
        if each.profile is None or each.profile.total_ns == 0:
            continue
        found = side_b.samples[each.index]
        assert found.method == "step-markers"
        assert found.values == pytest.approx(expected(each.profile), abs=1), each.runtime_name
        checked += 1
    assert checked >= 10
