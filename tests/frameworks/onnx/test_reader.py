"""ONNX Runtime's profile JSON: detected by content, exact ns, ORT's events given irprof's kinds,
and bad files refused naming the file (exit 2)."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.readers import read_trace
from irprof.trace.model import EventKind

PROFILE = Path(__file__).parents[2] / "fixtures" / "onnx" / "mlp.ort_profile.json"


def _raw_events() -> list[dict[str, object]]:
    events = json.loads(PROFILE.read_text())
    assert isinstance(events, list)
    return events


def test_detected_by_content_under_any_file_name(tmp_path: Path) -> None:
    renamed = tmp_path / "profile.data"
    shutil.copyfile(PROFILE, renamed)
    assert read_trace(renamed).metadata["format"] == "onnxruntime"


def test_a_plain_chrome_trace_is_not_taken_for_onnxruntime(tmp_path: Path) -> None:
    kineto = tmp_path / "trace.json"
    kineto.write_text(
        json.dumps([{"cat": "cpu_op", "ph": "X", "name": "aten::mm", "ts": 1, "dur": 2,
                     "pid": 1, "tid": 1, "args": {}}])
    )  # fmt: skip
    assert read_trace(kineto).metadata["format"] == "chrome"


def test_node_times_are_exact_nanoseconds() -> None:
    expected: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for event in _raw_events():
        if event["cat"] == "Node" and str(event["name"]).endswith("_kernel_time"):
            # ORT writes integer microseconds.
            start, duration = int(str(event["ts"])), int(str(event["dur"]))
            expected[str(event["name"])].append((start * 1000, duration * 1000))
    trace = read_trace(PROFILE)
    found: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
        found[trace.name_of(row)].append((int(trace.ts_ns[row]), int(trace.dur_ns[row])))
    assert {name: sorted(times) for name, times in found.items()} == {
        name: sorted(times) for name, times in expected.items()
    }
    assert len(expected) >= 5


def test_kinds_follow_ort_categories() -> None:
    trace = read_trace(PROFILE)
    kinds = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    raw = _raw_events()
    runs = [event for event in raw if event["name"] == "model_run"]
    assert kinds["model_run"] is EventKind.STEP
    assert sum(1 for row in trace.rows_of_kind(EventKind.STEP).tolist()) == len(runs) == 3
    for event in raw:
        name = str(event["name"])
        if event["cat"] == "Session" and name != "model_run":
            assert kinds[name] is EventKind.RUNTIME, name
        if event["cat"] == "Node" and name.endswith("_kernel_time"):
            assert kinds[name] is EventKind.FRAMEWORK_OP, name
    for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
        assert trace.args(row)["provider"] == "CPUExecutionProvider"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(
            lambda data: data.replace(b'"ts" :', b'"ts" : "soon", "was" :', 1), id="ts-not-a-number"
        ),
        pytest.param(lambda data: data[:300] + b"\x00 not json", id="garbage-after-head"),
    ],
)
def test_bad_profiles_exit_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: object
) -> None:
    bad = tmp_path / "onnxruntime_profile.json"
    bad.write_bytes(content(PROFILE.read_bytes()))  # type: ignore[operator]
    assert main(["trace", "summary", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err
