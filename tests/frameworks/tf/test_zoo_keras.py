"""Models from public library code: `keras.applications.MobileNetV2` and a Keras Conv1D + LSTM
(examples/zoo/tf_mobilenetv2.py, tf_conv1d_lstm.py), each captured once at every TF level it has
and annotated. Answers are checked against the bundle's own files (executed graph, IR def-use,
trace events), computed here: no op that ran is "never ran", each MobileNetV2 block's rewritten
adds carry that block's kernels, time coverage >= 99%, and `top` never sums past profiled time.

The LSTM bundle has no `post-grappler` level: TensorFlow's `convert_graph_def` cannot import a
graph holding a lowered while loop (`NextIteration` is "not supported for lifting out of
tf_executor.graph"), so that capture runs without `--post-grappler`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from irprof.api import Run
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.tf.capture import TfCaptureOptions
from irprof.frameworks.tf.correlate import CORRELATOR, DEAD_AT_LEVEL
from tests.frameworks.tf.test_grappler_rewrites import (
    annotated_levels,
    entry_ops,
    every_unmatched_op,
    live_op_names,
    never_ran_names,
    ran_node_names,
    reference_events,
    rewrite_groups,
    runtime_nodes,
    timed_events,
    users,
)
from tests.zoo_captures import ZooCaptures

ZOO = Path(__file__).resolve().parents[3] / "examples" / "zoo"
# model -> whether its graph can be imported after grappler (see the module docstring)
MODELS = {"tf_mobilenetv2": True, "tf_conv1d_lstm": False}
TIME_FLOOR = 0.99
# MobileNetV2's inverted residual blocks with a skip add (`block_<k>_add`) at alpha 0.35:
# blocks 2, 4, 5, 7, 8, 9, 11, 12, 14, 15 (the others change the stride or the width).
MOBILENET_SKIP_BLOCKS = 10


@pytest.fixture(scope="module")
def runs(zoo_captures: ZooCaptures) -> dict[str, Run]:
    """Each model captured once (2 steps; the LSTM's capture is the e2e zoo test's) and
    annotated at every level it has."""
    captured = {}
    for model, post_grappler in MODELS.items():
        options = TfCaptureOptions(steps=2, post_grappler=post_grappler)
        run = Run.of(zoo_captures(model, options))
        for level in annotated_levels(run):
            run.annotate(level)
        captured[model] = run
    return captured


def cases() -> list[tuple[str, str]]:
    return [
        (model, level)
        for model, post_grappler in MODELS.items()
        for level in ("tf", "tf-standard", "post-grappler")
        if post_grappler or level != "post-grappler"
    ]


@pytest.mark.parametrize(("model", "level"), cases())
def test_no_op_that_ran_is_never_ran(runs: dict[str, Run], model: str, level: str) -> None:
    """GIVEN the ops between the model's input and output (IR def-use) and the nodes with an
    event in the trace THEN none of them is listed as never ran."""
    run = runs[model]
    coverage = every_unmatched_op(run, level)
    never = never_ran_names(coverage)
    assert not never & live_op_names(run, level)
    assert not never & ran_node_names(run)


@pytest.mark.parametrize(("model", "level"), cases())
def test_time_coverage_and_top_rows(runs: dict[str, Run], model: str, level: str) -> None:
    run = runs[model]
    coverage = run.coverage(level)
    assert coverage is not None
    listed = sum(event.total_ns for event in coverage.unmatched_events)
    assert coverage.attributed_ns + listed == coverage.profiled_ns
    assert coverage.time_coverage >= TIME_FLOOR, coverage.unmatched_events
    for by in ("op", "type", "scope"):
        table = run.top(level, by=by, limit=None)  # type: ignore[arg-type]
        assert table.profiled_ns == coverage.profiled_ns
        assert sum(row.total_ns for row in table.rows) <= table.profiled_ns, by
        assert table.total_ns <= table.profiled_ns, by


@pytest.mark.parametrize("level", ["tf", "tf-standard", "post-grappler"])
def test_mobilenet_blocks_keep_their_own_add_kernels(
    runs: dict[str, Run], level: str, tmp_path: Path
) -> None:
    """GIVEN each skip block's BN add and skip Add rewritten into an add tree that reads the
    previous block's THEN each block's two adds carry exactly its own tree's events (found by
    the executed graph's def-use). The trees' adds are cheap kernels TF's timed profiler level
    does not record: by default they are listed as run but untimed, and with their time taken
    from the reference steps (`reference_time`) each block's adds get their own tree's."""
    run = runs["tf_mobilenetv2"]
    groups = rewrite_groups(run, level)
    assert len(groups) == MOBILENET_SKIP_BLOCKS
    untimed = [group for group in groups if not group.events]
    if untimed:
        coverage = run.coverage(level)
        assert coverage.ops_untimed > 0
    folder = tmp_path / "run"
    shutil.copytree(run.root, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["options"]["reference_time"] = True
    (folder / "manifest.json").write_text(json.dumps(manifest))
    bundle = RunBundle(folder)
    result = CORRELATOR.correlate(bundle, level, CorrelationOptions())
    entries = {(e.key.name or "").split("@")[0]: e for e in result.opprofile.entries}
    observed = {**reference_events(bundle), **timed_events(bundle)}
    for group in rewrite_groups(bundle, level, observed):
        assert len(group.replaced) == 2 and group.events, group
        for name in group.replaced:
            assert name in entries, f"{name}: no time, though its rewrite ran ({group})"
            assert set(entries[name].data.kernels) == set(group.events), (name, group)
            assert entries[name].data.total_ns > 0


def test_lstm_reads_tf_standard_dropped_are_explained(runs: dict[str, Run], tmp_path: Path) -> None:
    """GIVEN the variable reads of the LSTM's first step, which Keras computes outside the loop
    and grappler prunes (the reads stay: they are stateful) and which `tf-standard-pipeline`
    removes as dead code WHEN their reference-step time is taken THEN each read's event is listed
    with that reason, not as an op "moved or merged": no op at `tf-standard` does that work."""
    folder = tmp_path / "run"
    shutil.copytree(runs["tf_conv1d_lstm"].root, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["options"]["reference_time"] = True
    (folder / "manifest.json").write_text(json.dumps(manifest))
    bundle = RunBundle(folder)
    nodes = runtime_nodes(bundle)
    raw, standard = entry_ops(bundle, "tf"), entry_ops(bundle, "tf-standard")
    # Reads of the raw level whose every reader grappler pruned, and that tf-standard lost.
    dead = {
        name
        for name, op in raw.by_name.items()
        if op.name == "tf.ReadVariableOp"
        and name in nodes
        and name not in standard.by_name
        and users(op)
        and all(raw.name_of.get(user) not in nodes for user in users(op))
    }
    assert dead  # the LSTM cell's kernel, recurrent kernel and bias
    coverage = CORRELATOR.correlate(bundle, "tf-standard", CorrelationOptions()).coverage
    listed = {e.name.split(":")[0]: e.reason for e in coverage.unmatched_events}
    assert {name for name in listed if name in dead} == dead
    assert all(listed[name] == DEAD_AT_LEVEL for name in dead)
    assert not [reason for reason in listed.values() if "moved or merged" in reason]
