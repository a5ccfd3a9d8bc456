"""Conformance on real traces: public Kineto files (GPU, NCCL, MTIA, CPU-only) read exactly as
an independent count of their raw JSON says (see tests/fixtures/traces/public/README.md)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter, defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from irprof.analyses.ranks import summarize_ranks
from irprof.analyses.trace_summary import summarize_trace
from irprof.cli.main import main
from irprof.readers import read_trace
from irprof.trace.model import EventKind

PUBLIC = Path(__file__).parents[1] / "fixtures" / "traces" / "public"
FILES = sorted(PUBLIC.glob("*.json.gz"))
SLICE_PHASES = {"X", "i", "I", "n", "C"}
# What each Kineto category means, stated here independently of the reader's table.
EXPECTED_KIND = {
    "cpu_op": "framework_op",
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "mtia_ccp_events": "kernel",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "cuda_sync": "runtime",
    "mtia_runtime": "runtime",
    "user_annotation": "annotation",
    "gpu_user_annotation": "annotation",
    "cuda_profiler_range": "annotation",
    "Trace": "envelope",
}


def raw_document(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return document


def expected_kind(event: dict[str, Any]) -> str:
    if event["ph"] in {"i", "I", "n"}:
        return "instant"
    label = EXPECTED_KIND.get(event.get("cat", ""), "other")
    if label == "kernel" and event["name"].lower().startswith("nccl"):
        return "collective"
    if label == "annotation" and event["name"].startswith("ProfilerStep"):
        return "step"
    return label


def ns(micros: float) -> int:
    """Microseconds as written (decimal text) -> ns, with no float step."""
    return int((Decimal(repr(micros)) * 1000).to_integral_value(ROUND_HALF_EVEN))


def flow_pairs(events: list[dict[str, Any]]) -> int:
    """Links between consecutive points of one (cat, id), a flow end closing its chain."""
    points: dict[tuple[Any, Any], list[tuple[float, int, str]]] = defaultdict(list)
    for index, event in enumerate(events):
        if event["ph"] in {"s", "t", "f"}:
            points[(event.get("cat"), event["id"])].append((event["ts"], index, event["ph"]))
    return sum(
        sum(1 for first, _second in pairwise(chain) if first[2] != "f")
        for chain in (sorted(found) for found in points.values())
    )


def test_the_corpus_is_present_with_its_licence() -> None:
    assert len(FILES) == 8
    assert "MIT License" in (PUBLIC / "LICENSE").read_text()


@pytest.mark.parametrize("path", FILES, ids=[path.name.split(".")[0] for path in FILES])
def test_counts_times_and_kinds_match_the_raw_json(path: Path) -> None:
    # GIVEN the raw events, counted here without the reader
    document = raw_document(path)
    events = [event for event in document["traceEvents"] if event["ph"] in SLICE_PHASES]
    base_ns = int(document.get("baseTimeNanoseconds", 0))
    # WHEN irprof reads the file (most of them start with a newline: once taken for XPlane)
    trace = read_trace(path)
    # THEN events, tracks, flows, time range and kinds all agree
    assert len(trace) == len(events)
    assert len(trace.tracks) == len({(event["pid"], event["tid"]) for event in events})
    assert len(trace.flows) == flow_pairs(document["traceEvents"])
    assert trace.warnings == ()
    first = min(ns(event["ts"]) for event in events) + base_ns
    last = max(ns(event["ts"]) + ns(event.get("dur", 0)) for event in events) + base_ns
    assert trace.span_ns() == (first, last)
    kinds = Counter(EventKind(int(kind)).label for kind in trace.kind)
    assert kinds == Counter(expected_kind(event) for event in events)
    assert int(trace.dur_ns.sum()) == pytest.approx(
        sum(event.get("dur", 0) for event in events) * 1000, abs=len(events)
    )


@pytest.mark.parametrize("path", FILES, ids=[path.name.split(".")[0] for path in FILES])
def test_convert_round_trips_every_column(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = read_trace(path)
    for suffix in (".json", ".parquet"):
        out = tmp_path / f"events{suffix}"
        assert main(["trace", "convert", str(path), "-o", str(out)]) == 0
        again = read_trace(out)
        for column in ("ts_ns", "dur_ns", "kind", "track"):
            assert np.array_equal(getattr(again, column), getattr(trace, column)), column
        assert again.names() == trace.names()
        assert np.array_equal(again.flows.src, trace.flows.src)
        assert np.array_equal(again.flows.dst, trace.flows.dst)
        assert again.args_many(range(len(again))) == trace.args_many(range(len(trace)))


def test_gpu_trace_summary_splits_device_time_by_stream() -> None:
    # GIVEN rank 0 of an NCCL pair: kernels on stream 7, NCCL on streams 84 and 203
    path = PUBLIC / "trace_filter__sampled_rank-0.json.gz"
    raw = [event for event in raw_document(path)["traceEvents"] if event["ph"] == "X"]
    nccl = [event for event in raw if event.get("cat") == "kernel" and "nccl" in event["name"]]
    summary = summarize_trace(read_trace(path))
    # THEN one device, "GPU 0" (Kineto's process label), with each category's time
    (gpu,) = summary.devices
    assert gpu.device == "GPU 0"
    streams = {stream.stream: stream for stream in summary.streams}
    assert set(streams) == {"stream 7", "stream 23", "stream 25", "stream 84", "stream 203"}
    on_84 = [event for event in nccl if event["tid"] == 84]
    assert streams["stream 84"].communication_ns == round(sum(e["dur"] for e in on_84) * 1000)
    assert streams["stream 84"].compute_ns == 0
    assert gpu.compute_ns + gpu.communication_ns + gpu.memory_ns >= gpu.busy_ns > 0
    assert gpu.idle_ns == gpu.window_ns - gpu.busy_ns
    # AND the top device work is the NCCL kernel; the profiler's envelope is in no top list
    assert summary.top_device[0].kind == "collective"
    listed = {row.name for row in summary.top_by_total + summary.top_by_self}
    assert "PyTorch Profiler (0)" not in listed


def test_mtia_device_work_is_kernels_on_the_mtia_device() -> None:
    path = PUBLIC / "mtia_inference_trace__mtia_inference_rank_0.json.gz"
    raw = raw_document(path)["traceEvents"]
    ccp = [event for event in raw if event.get("cat") == "mtia_ccp_events"]
    summary = summarize_trace(read_trace(path))
    assert [device.device for device in summary.devices] == ["MTIA 17"]
    assert summary.devices[0].events == len(ccp)
    assert sum(stream.events for stream in summary.streams) == len(ccp)


def test_cpu_only_trace_has_no_device_table(capsys: pytest.CaptureFixture[str]) -> None:
    path = PUBLIC / "mixed_files__rank_non_gpu.json.gz"
    assert summarize_trace(read_trace(path)).devices == ()
    assert main(["trace", "summary", str(path)]) == 0
    assert "Device time" not in capsys.readouterr().out


def test_rank_directory_gives_a_rank_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a directory with the two ranks of one run
    for number in (0, 1):
        name = f"trace_filter__sampled_rank-{number}.json.gz"
        shutil.copy(PUBLIC / name, tmp_path / name)
    table = summarize_ranks(sorted(tmp_path.glob("*.json.gz")))
    # THEN ranks come from distributedInfo, step time is the ProfilerStep mean
    assert [rank.rank for rank in table.ranks] == [0, 1]
    for rank in table.ranks:
        trace = read_trace(rank.source)
        steps = trace.rows_of_kind(EventKind.STEP)
        assert rank.steps == 2 and rank.step_ns == int(trace.dur_ns[steps].mean())
        assert rank.communication_ns > 0 and rank.compute_ns > 0
    assert table.stragglers == ()  # 615 ms and 619 ms: within 10% of the median
    # AND a tight threshold flags the slower rank
    assert summarize_ranks(sorted(tmp_path.glob("*.json.gz")), threshold=0.001).stragglers == (1,)
    assert main(["trace", "summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Ranks" in out and "trace_filter__sampled_rank-1.json.gz" in out


def test_rank_from_file_name_and_duplicate_ranks(tmp_path: Path) -> None:
    # GIVEN the MTIA trace (no distributedInfo) under two rank-numbered names
    source = PUBLIC / "mtia_inference_trace__mtia_inference_rank_0.json.gz"
    shutil.copy(source, tmp_path / "worker_3.json.gz")
    shutil.copy(source, tmp_path / "worker_5.json.gz")
    table = summarize_ranks(sorted(tmp_path.glob("*.json.gz")))
    assert [rank.rank for rank in table.ranks] == [3, 5]
    # AND two files claiming one rank is refused, naming both
    shutil.copy(PUBLIC / "trace_filter__sampled_rank-0.json.gz", tmp_path / "a.json.gz")
    shutil.copy(PUBLIC / "trace_filter__sampled_rank-0.json.gz", tmp_path / "b.json.gz")
    with pytest.raises(Exception, match=r"rank 0 is also the rank of .*a\.json\.gz"):
        summarize_ranks([tmp_path / "a.json.gz", tmp_path / "b.json.gz"])


def union_length(intervals: list[tuple[int, int]]) -> int:
    """Length of a union of [start, end) intervals, by sorting and merging (written here)."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def test_gpu_overlap_and_exclusive_breakdown_match_the_raw_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN an NCCL rank whose compute kernels and collectives run on different streams
    path = PUBLIC / "trace_filter__sampled_rank-0.json.gz"
    device = [
        event
        for event in raw_document(path)["traceEvents"]
        if event["ph"] == "X" and event.get("cat") in {"kernel", "gpu_memcpy", "gpu_memset"}
    ]

    def spans(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
        return [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events]

    comm = [e for e in device if e["cat"] == "kernel" and e["name"].lower().startswith("nccl")]
    compute = [e for e in device if e["cat"] == "kernel" and e not in comm]
    memory = [e for e in device if e["cat"] != "kernel"]
    compute_ns, comm_ns = union_length(spans(compute)), union_length(spans(comm))
    either_ns = union_length(spans(compute + comm))
    busy_ns = union_length(spans(device))
    window = spans(device)
    window_ns = max(end for _, end in window) - min(start for start, _ in window)
    # WHEN it is summarized
    (gpu,) = summarize_trace(read_trace(path)).devices
    # THEN communication hidden under compute is the intersection of the two unions
    assert gpu.comm_hidden_ns == compute_ns + comm_ns - either_ns > 0
    assert gpu.comm_hidden_fraction == pytest.approx((compute_ns + comm_ns - either_ns) / comm_ns)
    # AND the exclusive parts add up to the window, each instant counted once
    parts = gpu.exclusive_ns()
    assert parts == {
        "compute": compute_ns,
        "communication": either_ns - compute_ns,
        "memory": busy_ns - either_ns,
        "idle": window_ns - busy_ns,
    }
    assert sum(parts.values()) == gpu.window_ns == window_ns
    assert len(memory) > 0  # the trace has copies: the memory part is exercised
    # AND `trace summary` shows both
    assert main(["trace", "summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "exclusive" in out and "hidden" in out


@pytest.mark.parametrize(
    "name",
    [
        "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
        "trace_filter__sampled_rank-0.json.gz",  # no flows: launches joined by correlation id
    ],
)
def test_idle_time_splits_into_host_and_kernel_wait_as_the_raw_json_says(name: str) -> None:
    # GIVEN the raw events: device work per stream, host runtime calls by correlation id
    events = [e for e in raw_document(PUBLIC / name)["traceEvents"] if e["ph"] == "X"]
    device = [e for e in events if e.get("cat") in {"kernel", "gpu_memcpy", "gpu_memset"}]
    launch_at = {
        e["args"]["correlation"]: ns(e["ts"])
        for e in sorted(events, key=lambda e: e["ts"], reverse=True)  # the first call wins
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    expected = {}
    for stream in sorted({e["tid"] for e in device}):
        mine = sorted(
            (e for e in device if e["tid"] == stream), key=lambda e: (ns(e["ts"]), -ns(e["dur"]))
        )
        host = kernel = unknown = 0
        reach = ns(mine[0]["ts"])
        for e in mine:
            start = ns(e["ts"])
            launched = launch_at.get(e["args"].get("correlation"))
            if start > reach:
                gap = start - reach
                if launched is None:
                    unknown += gap
                else:
                    waited = min(max(launched - reach, 0), gap)
                    host, kernel = host + waited, kernel + gap - waited
            reach = max(reach, start + ns(e["dur"]))
        short = sum(1 for e in mine if ns(e["dur"]) < 10_000)
        expected[f"stream {stream}"] = (host, kernel, unknown, short, len(mine))
    # WHEN the trace is summarized
    waits = summarize_trace(read_trace(PUBLIC / name)).waits
    got = {
        w.stream: (w.host_wait_ns, w.kernel_wait_ns, w.unexplained_ns, w.short_events, w.events)
        for w in waits
    }
    # THEN every stream's idle time is split as computed here, and the parts add up
    assert got == expected
    assert all(w.idle_ns == w.host_wait_ns + w.kernel_wait_ns + w.unexplained_ns for w in waits)
    assert sum(w.host_wait_ns for w in waits) > 0
    streams = {
        stream.stream: stream for stream in summarize_trace(read_trace(PUBLIC / name)).streams
    }
    assert all(w.idle_ns == streams[w.stream].idle_ns for w in waits)


@pytest.mark.parametrize(
    "name", ["trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"]
)
def test_per_step_device_time_is_the_raw_kernels_clipped_to_each_step(name: str) -> None:
    """GIVEN a Kineto trace with ProfilerStep markers THEN each step's row holds, per category,
    the union of that category's device events clipped to the step's window, computed here from
    the raw JSON by brute force on the set of covered nanoseconds' interval endpoints."""
    raw = [e for e in raw_document(PUBLIC / name)["traceEvents"] if e["ph"] == "X"]
    steps = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in raw
        if str(e["name"]).startswith("ProfilerStep#")
    )
    kernels = [e for e in raw if e.get("cat") == "kernel"]
    compute = [e for e in kernels if "nccl" not in e["name"]]
    memory = [e for e in raw if e.get("cat") in {"gpu_memcpy", "gpu_memset"}]

    def union_in(events: list[dict[str, Any]], begin: int, end: int) -> int:
        spans = sorted(
            (max(ns(e["ts"]), begin), min(ns(e["ts"]) + ns(e["dur"]), end)) for e in events
        )
        total, reach = 0, begin
        for start, stop in spans:
            if stop <= start:
                continue
            total += max(0, stop - max(start, reach))
            reach = max(reach, stop)
        return total

    rows = summarize_trace(read_trace(PUBLIC / name)).steps
    assert [row.step for row in rows] == list(range(len(steps))) and len(steps) == 2
    for row, (begin, end) in zip(rows, steps, strict=True):
        assert row.time.window_ns == end - begin
        assert row.time.compute_ns == union_in(compute, begin, end)
        assert row.time.busy_ns == union_in(kernels + memory, begin, end)
        parts = row.time.exclusive_ns()
        assert sum(parts.values()) == end - begin
        assert parts["idle"] == end - begin - union_in(kernels + memory, begin, end)


def test_queue_length_is_launched_and_unfinished_kernels_from_the_raw_json() -> None:
    """GIVEN rank 0 of the NCCL pair (launches joined by correlation id) THEN each stream's
    queue length is the number of device events launched and not yet finished: its maximum and
    time-weighted mean recomputed here by brute force over the elementary intervals."""
    name = "trace_filter__sampled_rank-0.json.gz"
    events = [e for e in raw_document(PUBLIC / name)["traceEvents"] if e["ph"] == "X"]
    device = [e for e in events if e.get("cat") in {"kernel", "gpu_memcpy", "gpu_memset"}]
    launch_at = {
        e["args"]["correlation"]: ns(e["ts"])
        for e in sorted(events, key=lambda e: e["ts"], reverse=True)  # the first call wins
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    waits = {w.stream: w for w in summarize_trace(read_trace(PUBLIC / name)).waits}
    checked = 0
    for stream in sorted({e["tid"] for e in device}):
        spans = [
            (launch_at[e["args"]["correlation"]], ns(e["ts"]) + ns(e["dur"]))
            for e in device
            if e["tid"] == stream and e.get("args", {}).get("correlation") in launch_at
        ]
        points = sorted({p for span in spans for p in span})
        counts = [sum(1 for a, b in spans if a <= p < b) for p in points[:-1]]
        area = sum(c * (q - p) for c, p, q in zip(counts, points, points[1:], strict=False))
        row = waits[f"stream {stream}"]
        assert row.queue_max == max(counts)
        assert row.queue_mean == pytest.approx(area / (points[-1] - points[0]), rel=1e-9)
        checked += 1
    assert checked == 5 and max(w.queue_max for w in waits.values()) > 10
