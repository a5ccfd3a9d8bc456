"""ONNX Runtime profiles made by hand (no onnxruntime needed): the kinds ORT's events get, the
node an event ran, and which profiles are refused.

Written from `readers/onnxruntime.py`'s first mutation run: its tests live in
`tests/frameworks/onnx/`, whose every test carries the `onnx` marker, which the mutation runs
deselect, so 62 of its 64 mutants had no test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.onnxruntime import node_of_event, read_onnxruntime
from irprof.trace.model import EventKind


def _event(name: str, cat: str, ts: int, op: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"cat": cat, "pid": 7, "tid": 8, "dur": 5, "ts": ts, "ph": "X"}
    event["name"] = name
    event["args"] = {"op_name": op, "provider": "CPUExecutionProvider"} if op else {}
    return event


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(events))
    return path


def test_ort_events_get_their_kinds(tmp_path: Path) -> None:
    events = [
        _event("model_loading_uri", "Session", 0),
        _event("model_run", "Session", 100),
        _event("Gemm_0_fence_before", "Node", 110, "Gemm"),
        _event("Gemm_0_kernel_time", "Node", 120, "Gemm"),
        _event("Relu_1_kernel_time", "Node", 130, "Relu"),
        _event("SequentialExecutor::Execute", "Session", 140),
    ]
    trace = read_trace(_write(tmp_path / "profile.data", events))
    assert trace.metadata["format"] == "onnxruntime"
    kinds = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert kinds == {
        "model_loading_uri": EventKind.RUNTIME,
        "model_run": EventKind.STEP,
        "Gemm_0_fence_before": EventKind.RUNTIME,
        "Gemm_0_kernel_time": EventKind.FRAMEWORK_OP,
        "Relu_1_kernel_time": EventKind.FRAMEWORK_OP,
        "SequentialExecutor::Execute": EventKind.RUNTIME,
    }
    assert trace.kind.dtype.itemsize == 1
    assert trace.ts_ns.tolist() == [0, 100_000, 110_000, 120_000, 130_000, 140_000]


def test_node_of_an_event() -> None:
    assert node_of_event("Gemm_0_kernel_time") == "Gemm_0"
    assert node_of_event("_kernel_time") == ""
    assert node_of_event("Gemm_0_fence_before") is None
    assert node_of_event("model_run") is None


def test_a_profile_with_one_node_and_no_run_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", [_event("Add_kernel_time", "Node", 0, "Add")])
    trace = read_onnxruntime(path, path.read_bytes())
    assert [EventKind(int(k)) for k in trace.kind] == [EventKind.FRAMEWORK_OP]


def test_a_profile_with_a_run_and_no_node_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", [_event("model_run", "Session", 0)])
    trace = read_onnxruntime(path, path.read_bytes())
    assert [EventKind(int(k)) for k in trace.kind] == [EventKind.STEP]


def test_a_profile_without_node_or_run_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", [_event("model_loading_uri", "Session", 0)])
    with pytest.raises(TraceFormatError) as caught:
        read_onnxruntime(path, path.read_bytes())
    assert str(caught.value) == (
        f"{path}: not an ONNX Runtime profile: no Node event (with args.op_name) and no "
        "model_run event; was the session run before end_profiling()?"
    )


def test_a_time_chrome_refuses_names_the_profile(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.json", [_event("Add_kernel_time", "Node", 10**17, "Add")])
    with pytest.raises(TraceFormatError) as caught:
        read_onnxruntime(path, path.read_bytes())
    assert caught.value.path == str(path)
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path, format="onnxruntime")
    assert caught.value.path == str(path)
