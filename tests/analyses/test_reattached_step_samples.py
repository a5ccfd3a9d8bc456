"""Per-step samples of a level whose time was carried down from another (torch -> linalg).

A linalg op's profile names the torch ops that fed it (`torch.aten.mm torch#17`), not trace
events, so its steps were unknown and `top --level linalg` ranked by the sum, where one stalled
event decides the order. Its samples are now read from the trace through its torch ops' events,
as the torch level reads them. The expected values are computed here from the raw Chrome JSON
(the `ProfilerStep#N` windows and the events named by the torch level's profile), by the rule
docs/views.md states: an op's share of its events' time in each step.
"""

from __future__ import annotations

import gzip
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.step_stats import bundle_step_samples
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "torch" / "attention_timed"


@pytest.fixture(scope="module", name="bundle")
def fixture_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    out = tmp_path_factory.mktemp("attention") / "run"
    shutil.copytree(FIXTURE, out)
    bundle = RunBundle(out)
    annotate_bundle(bundle, "torch")
    annotate_bundle(bundle, "linalg")
    return bundle


def ns(value: float | int | str) -> int:
    return int(Decimal(str(value)) * 1000)


def raw_events(bundle: RunBundle) -> tuple[list[tuple[int, int]], dict[str, list[tuple[int, int]]]]:
    """Step windows and complete events by name, in ns, from the trace's JSON."""
    with gzip.open(bundle.root / "trace" / "torch.pt.trace.json.gz") as handle:
        events = json.load(handle)["traceEvents"]
    windows: list[tuple[int, int]] = []
    by_name: dict[str, list[tuple[int, int]]] = {}
    for event in events:
        if event.get("ph") != "X":
            continue
        start, end = ns(event["ts"]), ns(event["ts"]) + ns(event.get("dur", 0))
        if str(event["name"]).startswith("ProfilerStep#"):
            windows.append((start, end))
        by_name.setdefault(event["name"], []).append((start, end - start))
    return sorted(windows), by_name


def test_linalg_ops_have_the_steps_of_their_torch_ops_events(bundle: RunBundle) -> None:
    windows, by_name = raw_events(bundle)
    assert len(windows) == 2
    upper = json.loads((bundle.root / "opprofile.torch.json").read_text())
    kernels_of = {e["key"]["origin"]: e["profile"]["kernels"] for e in upper["entries"]}
    loaded = load_annotated_level(bundle, "linalg")
    samples = bundle_step_samples(bundle, loaded.profiled.ops, "wall")
    assert samples.method == "step-markers"
    checked = 0
    for op in loaded.profiled.ops:
        if op.profile is None or op.profile.total_ns == 0:
            continue
        origins = [label.rsplit(" ", 1)[-1] for label in op.profile.kernels]
        names = {name for origin in origins for name in kernels_of[origin]}
        per_step = [
            sum(dur for name in names for start, dur in by_name[name] if begin <= start < end)
            for begin, end in windows
        ]
        everything = sum(dur for name in names for _, dur in by_name[name])
        basis = sum(per_step) if op.profile.total_ns <= sum(per_step) else everything
        expected = [value * op.profile.total_ns / basis for value in per_step]
        got = samples.values[op.index]
        assert got == pytest.approx(expected, abs=1), (op.runtime_name, names)
        checked += 1
    assert checked >= 10, "the linalg level should hold measured ops"


def test_linalg_rankings_use_the_median_not_the_sum(bundle: RunBundle) -> None:
    from irprof.analyses.top_view import load_top_view

    view = load_top_view(bundle, level="linalg", stat="median", time="wall")
    assert (view.table.stat, view.table.stat_note) == ("median", "")
