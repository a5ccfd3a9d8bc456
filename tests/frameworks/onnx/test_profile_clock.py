"""ORT's profile on the realtime clock, so on-CPU time can subtract the scheduler's waits.

GIVEN ORT's profiling start read by `get_profiling_start_time_ns` (realtime with libstdc++, a
steady clock elsewhere) and both clocks read around the session's creation, WHEN the capture
places the start, THEN it is the realtime value, or the monotonic one moved by the clocks'
offset, or unknown (times kept relative, and said so); the written profile's `ts` are the
relative microseconds plus the origin's whole microseconds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import orjson
import pytest

from irprof.api import Run
from irprof.bundle import RunBundle
from irprof.frameworks.onnx.runner import profile_clock, split_profile

REALTIME = (1_795_768_247_377_153_264, 1_795_768_247_403_386_194)
MONOTONIC = (49_214_363_651_305, 49_214_389_886_198)


@pytest.mark.parametrize("start", [REALTIME[0], REALTIME[1], REALTIME[0] + 968_679])
def test_a_start_between_the_realtime_readings_is_realtime(start: int) -> None:
    clock = profile_clock(start, REALTIME, MONOTONIC)
    assert (clock.origin_ns, clock.note) == (start, "realtime")


@pytest.mark.parametrize("start", [MONOTONIC[0], MONOTONIC[1], MONOTONIC[0] + 5])
def test_a_monotonic_start_moves_by_the_offset_of_the_second_readings(start: int) -> None:
    clock = profile_clock(start, REALTIME, MONOTONIC)
    assert clock.origin_ns == start + (REALTIME[1] - MONOTONIC[1])
    assert clock.note == "monotonic, moved to realtime"


@pytest.mark.parametrize("start", [REALTIME[0] - 1, REALTIME[1] + 1, MONOTONIC[1] + 1, 0])
def test_a_start_on_neither_clock_keeps_relative_times_and_says_so(start: int) -> None:
    clock = profile_clock(start, REALTIME, MONOTONIC)
    assert clock.origin_ns is None
    assert f"{start} ns is on neither the realtime nor the monotonic clock" in clock.note


def _profile(tmp_path: Path) -> Path:
    events = [
        {"cat": "Session", "name": "model_run", "ts": 10, "dur": 5, "pid": 1, "tid": 1},
        {"cat": "Node", "name": "a_kernel_time", "ts": 11, "dur": 2, "pid": 1, "tid": 1},
        {"cat": "Session", "name": "model_run", "ts": 20, "dur": 5, "pid": 1, "tid": 1},
        {"cat": "Node", "name": "a_kernel_time", "ts": 20, "dur": 3, "pid": 1, "tid": 1},
        {"cat": "Session", "name": "model_run", "ts": 30, "dur": 5, "pid": 1, "tid": 1},
    ]
    full = tmp_path / "full.json"
    full.write_bytes(orjson.dumps(events))
    return full


def test_the_profiled_runs_are_written_on_the_realtime_clock(tmp_path: Path) -> None:
    full = _profile(tmp_path)
    origin_ns = 1_795_768_247_378_122_943
    start = split_profile(full, tmp_path / "out.json", 1, 3, origin_ns)
    written = json.loads((tmp_path / "out.json").read_text())
    # From the second model_run on (one warm-up run), each ts + 1,795,768,247,378,122 us.
    assert [(event["name"], event["ts"]) for event in written] == [
        ("model_run", 1_795_768_247_378_142),
        ("a_kernel_time", 1_795_768_247_378_142),
        ("model_run", 1_795_768_247_378_152),
    ]
    assert start == 1_795_768_247_378_142_000
    assert [event["dur"] for event in written] == [5, 3, 5]


def test_without_an_origin_the_times_stay_as_ort_wrote_them(tmp_path: Path) -> None:
    full = _profile(tmp_path)
    start = split_profile(full, tmp_path / "out.json", 1, 3)
    written = json.loads((tmp_path / "out.json").read_text())
    assert [event["ts"] for event in written] == [20, 20, 30] and start == 20_000


@pytest.mark.onnx
def test_a_capture_places_its_events_within_its_own_realtime_window(mlp_run: Path) -> None:
    manifest = json.loads((mlp_run / "manifest.json").read_text())
    assert manifest["options"]["trace_clock"] == "realtime"  # libstdc++ on Linux
    trace = RunBundle(mlp_run).trace()
    captured_at = (mlp_run / "manifest.json").stat().st_mtime_ns
    first, last = int(trace.ts_ns.min()), int((trace.ts_ns + trace.dur_ns).max())
    # The runs happened in the last few minutes before the manifest was written.
    assert captured_at - 600 * 10**9 < first <= last <= min(captured_at, time.time_ns())
    assert manifest["options"]["profiled_from_ns"] == first


@pytest.mark.onnx
def test_rankings_of_an_onnx_capture_subtract_the_scheduler_waits(mlp_run: Path) -> None:
    manifest = json.loads((mlp_run / "manifest.json").read_text())
    sched = manifest["options"]["noise"]["sched"]
    if not sched.get("recorded"):
        pytest.skip(f"no scheduler record on this machine: {sched}")
    table = Run(mlp_run).top(limit=None)
    # Every ORT event (the session's runs and the nodes' kernels) lies on a recorded thread.
    events = len(RunBundle(mlp_run).trace())
    assert table.oncpu_note.endswith(
        f"{events:,} of {events:,} events on threads the scheduler record matched"
    )
