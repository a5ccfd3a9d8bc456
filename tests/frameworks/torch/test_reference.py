"""Timed steps without call stacks, stacks from the untimed reference step, and the overhead record.

Unit tests align events built in code; the others read the shipped capture of
examples/torch_attention.py (tests/fixtures/torch/attention_timed).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.torch.correlate import CORRELATOR, load_torch_run
from irprof.frameworks.torch.events import OpEvent, top_level_op_events
from irprof.frameworks.torch.reference import OUTSIDE_STEPS, align_step, borrow_call_stacks
from irprof.renderers.coverage_table import capture_overhead, capture_overhead_text
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

TIMED = Path(__file__).parents[2] / "fixtures" / "torch" / "attention_timed"


def _event(row: int, name: str, chain: tuple[str, ...] = ()) -> OpEvent:
    return OpEvent(row, name, row * 100, 50, chain)


def test_identical_steps_borrow_stacks_one_to_one() -> None:
    reference = [
        _event(0, "aten::linear", ("Net_0", "Linear_0")),
        _event(1, "aten::relu", ("Net_0",)),
    ]
    step = [_event(10, "aten::linear"), _event(11, "aten::relu")]
    joined, alone = align_step(step, reference)
    assert alone == []
    assert [(e.row, e.chain) for e in joined] == [(10, ("Net_0", "Linear_0")), (11, ("Net_0",))]


def test_an_op_the_reference_did_not_run_borrows_nothing_and_the_rest_still_align() -> None:
    """A step with one extra call: the others keep their own reference event, by order."""
    reference = [
        _event(0, "aten::linear", ("A",)),
        _event(1, "aten::relu", ("B",)),
        _event(2, "aten::linear", ("C",)),
    ]
    step = [
        _event(10, "aten::linear"),
        _event(11, "aten::dropout"),
        _event(12, "aten::relu"),
        _event(13, "aten::linear"),
    ]
    joined, alone = align_step(step, reference)
    assert [e.row for e in alone] == [11]
    assert [(e.row, e.chain) for e in joined] == [(10, ("A",)), (12, ("B",)), (13, ("C",))]


def _trace(steps: list[list[tuple[str, str]]], *, stray: str | None = None) -> Trace:
    """Steps of (name, call stack) events, each inside a ProfilerStep marker."""
    builder = TraceBuilder()
    track = builder.track(1, 1)
    clock = 0
    for number, events in enumerate(steps):
        start = clock
        for name, stack in events:
            args: dict[str, Any] = {"Call stack": stack} if stack else {}
            builder.add(clock + 10, 50, track, name, EventKind.FRAMEWORK_OP, args)
            clock += 100
        builder.add(start, clock - start, track, f"ProfilerStep#{number}", EventKind.STEP)
    if stray:
        builder.add(clock + 500, 50, track, stray, EventKind.FRAMEWORK_OP)
    return builder.build()


def test_every_timed_step_borrows_from_the_one_reference_step() -> None:
    reference = _trace(
        [
            [
                ("aten::linear", "nn.Module: Net_0;nn.Module: Linear_0;"),
                ("aten::relu", "nn.Module: Net_0;"),
            ]
        ]
    )
    timed = _trace([[("aten::linear", ""), ("aten::relu", "")]] * 2, stray="aten::copy_")
    borrowed = borrow_call_stacks(
        timed, top_level_op_events(timed), reference, top_level_op_events(reference)
    )
    chains = [(e.name, e.chain) for e in borrowed.events if e.row not in borrowed.unaligned]
    assert (
        chains
        == [
            ("aten::linear", ("Linear_0", "Net_0")),
            ("aten::relu", ("Net_0",)),
        ]
        * 2
    )
    assert list(borrowed.unaligned.values()) == [OUTSIDE_STEPS]


@pytest.fixture(scope="module")
def timed_results() -> dict[str, Any]:
    bundle = RunBundle(TIMED)
    return {
        lv: CORRELATOR.correlate(bundle, lv, CorrelationOptions()) for lv in ("torch", "linalg")
    }


def _trace_events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return [e for e in events if e.get("cat") == "cpu_op"]


def test_timed_steps_recorded_no_call_stacks_or_shapes_and_the_reference_step_did() -> None:
    """What made op times larger is only in the untimed step's file."""
    timed = _trace_events(TIMED / "trace" / "torch.pt.trace.json.gz")
    reference = _trace_events(TIMED / "trace" / "reference" / "torch.stacks.pt.trace.json.gz")
    assert timed and reference
    assert not any("Call stack" in e["args"] or "Input Dims" in e["args"] for e in timed)
    assert any("Input Dims" in e["args"] for e in reference)
    assert any("Call stack" in e["args"] for e in reference)


def test_borrowed_stacks_give_the_same_coverage_as_stacks_in_the_timed_trace(
    timed_results: dict[str, Any],
) -> None:
    """Every event found its reference event, its FX call and its node's source frame."""
    run = load_torch_run(RunBundle(TIMED))
    assert run.unaligned == {}
    assert all(event.chain for event in run.events)
    for level in ("torch", "linalg"):
        coverage = timed_results[level].coverage
        assert coverage.time_coverage == 1.0
        assert coverage.unmatched_events == ()
        assert coverage.warnings == ()
        assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial


def test_the_loops_identical_blocks_stay_apart_through_the_reference(
    timed_results: dict[str, Any],
) -> None:
    addmm = {
        (entry.key.name or "").split("|")[0]: entry.data
        for entry in timed_results["torch"].opprofile.entries
        if entry.op_name == "torch.aten.addmm" and ".query|" in (entry.key.name or "") + "|"
    }
    assert sorted(addmm) == ["blocks.0.query", "blocks.1.query", "blocks.2.query"]
    assert all(data.count == 2 for data in addmm.values())
    firsts = [addmm[f"blocks.{i}.query"].first_ts_ns for i in range(3)]
    assert firsts == sorted(firsts) and len(set(firsts)) == 3


def test_the_manifest_records_step_times_without_and_with_the_profilers() -> None:
    record = capture_overhead(RunBundle(TIMED).manifest().options)
    assert record is not None
    assert set(record) == {"no_profiler_ns", "profiler_ns", "irprof_ns", "steps"}
    assert record["steps"] == 2 and min(record.values()) > 0


GOOD = {"no_profiler_ns": 5, "profiler_ns": 6, "irprof_ns": 7}


@pytest.mark.parametrize(
    "overhead",
    [
        None,
        "1.2x",
        {"no_profiler_ns": 5, "profiler_ns": 6},
        {**GOOD, "no_profiler_ns": True},
        {**GOOD, "no_profiler_ns": -5},
        {**GOOD, "irprof_ns": 5.5},
    ],
)
def test_an_overhead_record_that_is_not_three_positive_integers_is_not_shown(overhead: Any) -> None:
    """Manifests are input: an edited or older one shows nothing rather than garbage."""
    assert capture_overhead({"overhead": overhead}) is None
    assert capture_overhead_text({"overhead": overhead}) == ""


def test_overhead_text_gives_each_time_and_the_ratios() -> None:
    options = {
        "overhead": {
            "no_profiler_ns": 200_000,
            "profiler_ns": 250_000,
            "irprof_ns": 255_000,
            "steps": 5,
        }
    }
    text = capture_overhead_text(options)
    assert "200 us without profiler" in text and "250 us under the framework's profiler" in text
    assert "1.02x the profiler alone" in text and "1.27x no profiler" in text
    assert capture_overhead_text(options, brief=True) == "timed steps 1.02x the profiler alone"


def test_annotate_and_top_show_the_capture_overhead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(TIMED, run)
    assert main(["annotate", str(run)]) == 0
    assert "capture overhead (median step time of 2 timed)" in capsys.readouterr().out
    assert main(["top", str(run), "-n", "3"]) == 0
    assert "x the profiler alone" in capsys.readouterr().out.replace("\n", " ")


DYNAMIC = Path(__file__).parents[2] / "fixtures" / "torch" / "dynamic"


def test_dynamic_dimension_size_reads_join_the_calls_that_use_them_with_no_time() -> None:
    """`aten.sym_size.int` nodes (decomposition reading a dynamic dim) run no eager event."""
    result = CORRELATOR.correlate(RunBundle(DYNAMIC), "torch", CorrelationOptions())
    assert "!torch.vtensor<[?,?]" in (DYNAMIC / "ir" / "torch.mlir").read_text()
    sizes = [e for e in result.opprofile.entries if e.op_name == "torch.aten.size.int"]
    assert len(sizes) == 2
    assert all(e.data.total_ns == 0 and e.data.group_size > 1 for e in sizes)
    assert all(e.data.group.startswith("torch:") for e in sizes)
    coverage = result.coverage
    assert coverage.time_coverage == 1.0
    assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial


def test_a_capture_whose_reference_trace_cannot_be_read_is_refused(tmp_path: Path) -> None:
    """torch once wrote raw bytes into a call stack: the capture must not hand that on."""
    from irprof.errors import CaptureError
    from irprof.frameworks.torch.capture import check_reference_trace

    staged = tmp_path / "staged"
    shutil.copytree(TIMED, staged)
    reference = staged / "trace" / "reference" / "torch.stacks.pt.trace.json.gz"
    text = gzip.decompress(reference.read_bytes())
    assert b'"Call stack":"' in text
    text = text.replace(b'"Call stack":"', b'"Call stack":"\t', 1)  # a raw tab: invalid JSON
    reference.write_bytes(gzip.compress(text))
    with pytest.raises(CaptureError, match="reference step wrote a trace irprof cannot read"):
        check_reference_trace(staged, tmp_path / "run")
    check_reference_trace(TIMED, tmp_path / "run")  # the shipped one reads
