"""The iree-profile dispatch JSONL reader: a real projection (tests/fixtures/iree), bad lines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.readers import detect_format, read_trace
from irprof.readers.iree_profile import read_iree_profile
from irprof.trace.model import EventKind

FIXTURE = Path(__file__).parents[1] / "fixtures" / "iree" / "mlp" / "trace" / "dispatch.all.jsonl"
PROFILED = FIXTURE.with_name("dispatch.jsonl")
EVENT = (
    b'{"type":"host_dispatch_event","physical_device_ordinal":0,"queue_ordinal":0,'
    b'"submission_id":3,"command_buffer_id":1,"command_index":2,"key":"main_dispatch_0_x",'
    b'"start_host_time_ns":1000,"duration_ns":250,"valid":true,"tile_count":2,'
    b'"tile_duration_sum_ns":400}'
)


def test_every_dispatch_invocation_is_one_event_with_its_context() -> None:
    trace = read_trace(FIXTURE)
    # 2 warm-up + 5 profiled runs of the MLP's 5 dispatches.
    assert len(trace) == 35
    assert set(trace.kind.tolist()) == {int(EventKind.DISPATCH)}
    assert trace.ts_ns.dtype == np.int64 and trace.dur_ns.dtype == np.int64
    names = set(trace.names())
    assert "main_dispatch_2_matmul_16x128x6272_f32" in names and len(names) == 5
    args = trace.args(0)
    assert args["dispatch"] == trace.name_of(0)
    for field in ("submission_id", "command_buffer_id", "command_index", "tile_count"):
        assert isinstance(args[field], int)
    assert trace.tracks.label(0) == "iree device 0/queue 0"
    assert trace.metadata["iree_dispatch_summary"]["matched_host_dispatches"] == 35


def test_sniffed_among_other_formats() -> None:
    assert detect_format(FIXTURE, FIXTURE.read_bytes()).name == "iree-profile"
    assert detect_format(PROFILED, PROFILED.read_bytes()).name == "iree-profile"


def test_the_profiled_runs_file_is_the_last_runs_lines_verbatim() -> None:
    # The capture keeps the lines of the 5 profiled runs (the 2 warm-up runs come first).
    everything = FIXTURE.read_bytes().splitlines()
    profiled = PROFILED.read_bytes().splitlines()
    assert len(profiled) == 25 and profiled == everything[10:35]
    trace = read_trace(PROFILED)
    # Each of the 5 dispatches once per profiled run: what the diff's per-step samples rely on.
    assert sorted(Counter(trace.name_of(row) for row in range(len(trace))).values()) == [5] * 5


def test_event_fields_are_copied_exactly(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(EVENT + b"\n")
    trace = read_iree_profile(path)
    assert (int(trace.ts_ns[0]), int(trace.dur_ns[0])) == (1000, 250)
    assert trace.args(0)["tile_duration_sum_ns"] == 400


def test_invalid_events_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(EVENT + b"\n" + EVENT.replace(b'"valid":true', b'"valid":false') + b"\n")
    trace = read_iree_profile(path)
    assert len(trace) == 1
    assert any("invalid" in warning for warning in trace.warnings)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"type":"host_dispatch_event", oops', "not a JSON object"),
        # Found by mutating a real profile: a byte flip inside a string's text.
        (EVENT.replace(b"main_dispatch", b"main\xb9dispatch"), "not UTF-8 text (invalid start"),
        (EVENT.replace(b'"duration_ns":250', b'"duration_ns":2.5'), "duration_ns"),
        (EVENT.replace(b'"key":"main_dispatch_0_x",', b""), "key"),
        (EVENT.replace(b'"start_host_time_ns":1000,', b""), "start time"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: bytes, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(EVENT + b"\n" + line + b"\n")
    with pytest.raises(TraceFormatError) as caught:
        read_iree_profile(path)
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)
    assert expected in str(caught.value)
