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
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.step_stats import bundle_step_samples
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.opprofile import ProfileData

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
    """Step windows and complete events by name, in ns since the epoch (Kineto's `ts` are
    microseconds after `baseTimeNanoseconds`), from the trace's JSON."""
    with gzip.open(bundle.root / "trace" / "torch.pt.trace.json.gz") as handle:
        document = json.load(handle)
    base, events = int(document["baseTimeNanoseconds"]), document["traceEvents"]
    windows: list[tuple[int, int]] = []
    by_name: dict[str, list[tuple[int, int]]] = {}
    for event in events:
        if event.get("ph") != "X":
            continue
        start = base + ns(event["ts"])
        end = start + ns(event.get("dur", 0))
        if str(event["name"]).startswith("ProfilerStep#"):
            windows.append((start, end))
        by_name.setdefault(event["name"], []).append((start, end - start))
    return sorted(windows), by_name


def expected_steps(bundle: RunBundle) -> Callable[[ProfileData], list[float]]:
    """The per-step samples a linalg op's profile should get, worked out from the raw JSON:
    the events of its torch ops (through their origins), in each step window, times the op's
    share of them."""
    windows, by_name = raw_events(bundle)
    assert len(windows) == 2
    upper = json.loads((bundle.root / "opprofile.torch.json").read_text())
    kernels_of = {e["key"]["origin"]: e["profile"]["kernels"] for e in upper["entries"]}
    # Where an event name ran several torch ops (`aten::linear` of every linear layer), the
    # torch level lists the starts of each op's own events; the op's samples are of those.
    starts_of = {e["key"]["origin"]: e["profile"].get("event_ts", []) for e in upper["entries"]}
    shared = [starts for starts in starts_of.values() if starts]
    assert shared and all(len(starts) == len(windows) for starts in shared), "one per step"

    def expected(profile: ProfileData) -> list[float]:
        origins = [label.rsplit(" ", 1)[-1] for label in profile.kernels]
        names = {name for origin in origins for name in kernels_of[origin]}
        # (only when every torch op of the linalg op has them: one without would lose its events)
        listed = all(starts_of[origin] for origin in origins)
        own = {start for origin in origins for start in starts_of[origin]} if listed else set()
        events = [
            (start, dur)
            for name in names
            for start, dur in by_name[name]
            if not own or start in own
        ]
        per_step = [
            sum(dur for start, dur in events if begin <= start < end) for begin, end in windows
        ]
        everything = sum(dur for _, dur in events)
        basis = sum(per_step) if profile.total_ns <= sum(per_step) else everything
        return [value * profile.total_ns / basis for value in per_step]

    return expected


def test_linalg_ops_have_the_steps_of_their_torch_ops_events(bundle: RunBundle) -> None:
    expected = expected_steps(bundle)
    loaded = load_annotated_level(bundle, "linalg")
    samples = bundle_step_samples(bundle, loaded.profiled.ops, "wall")
    assert samples.method == "step-markers"
    checked = 0
    for op in loaded.profiled.ops:
        if op.profile is None or op.profile.total_ns == 0:
            continue
        got = samples.values[op.index]
        assert got == pytest.approx(expected(op.profile), abs=1), op.runtime_name
        checked += 1
    assert checked >= 10, "the linalg level should hold measured ops"


def test_linalg_rankings_use_the_median_not_the_sum(bundle: RunBundle) -> None:
    from irprof.analyses.top_view import load_top_view

    view = load_top_view(bundle, level="linalg", stat="median", time="wall")
    assert (view.table.stat, view.table.stat_note) == ("median", "")
