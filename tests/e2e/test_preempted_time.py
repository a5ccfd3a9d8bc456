"""Preempted time in a real capture: PyTorch profiled while one spinner per core competes.

One `capture_torch` of the bundled CNN with every core kept busy, then `top` on wall and on
on-CPU time. What the test knows on its own, from the files: the Kineto JSON's `ProfilerStep#`
windows and the OS thread id its ops carry, and `sched.json`'s waits of that thread. On-CPU
rows must never exceed their wall rows, and together they may lose at most the thread's
waits inside the steps (the rows' events lie in the steps and on that thread).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from irprof.api import Run
from irprof.capture.sched_trace import SCHED_FILE

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "torch_cnn.py"
SPIN = "while True: pass"


def kineto(run: Path) -> dict[str, object]:
    (path,) = (run / "trace").glob("*.pt.trace.json.gz")
    data: dict[str, object] = json.loads(gzip.decompress(path.read_bytes()))
    return data


def overlap(waits: list[int], start: int, end: int) -> int:
    return sum(
        max(0, min(end, b) - max(start, a)) for a, b in zip(waits[0::2], waits[1::2], strict=True)
    )


def test_on_cpu_rankings_lose_no_more_than_the_threads_waits(tmp_path: Path) -> None:
    from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch

    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(os.cpu_count() or 1)]
    try:
        bundle = capture_torch(
            SCRIPT, tmp_path / "run", TorchCaptureOptions(steps=8, levels=("torch",))
        )
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    run = Run(bundle.root)
    run.annotate()
    status = run.manifest().options["noise"]["sched"]
    if not status["recorded"]:  # no tracefs or no root: said so, and rankings are wall time
        assert status["reason"] and not (bundle.root / SCHED_FILE).exists()
        assert run.top(limit=None, stat="mean").oncpu_note == ""
        return
    # The thread the ops ran on, as Kineto names it (an OS thread id), and its waits.
    data = kineto(bundle.root)
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]  # type: ignore[attr-defined]
    base = int(data.get("baseTimeNanoseconds", 0))  # type: ignore[call-overload]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    (tid,) = {int(e["tid"]) for e in ops}
    record = json.loads((bundle.root / SCHED_FILE).read_text())
    (thread,) = [t for t in record["threads"] if t["tid"] == tid]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == 8
    in_steps = sum(
        overlap(
            thread["runnable"],
            base + round(e["ts"] * 1000),
            base + round((e["ts"] + e["dur"]) * 1000),
        )
        for e in steps
    )
    wall = {row.key: row.stat_ns for row in run.top(limit=None, stat="mean", time="wall").rows}
    oncpu_table = run.top(limit=None, stat="mean")
    assert "on-CPU" in oncpu_table.stat_label and oncpu_table.oncpu_note
    oncpu = {row.key: row.stat_ns for row in oncpu_table.rows}
    assert oncpu.keys() == wall.keys()
    assert all(oncpu[key] <= wall[key] for key in wall)
    lost = sum(wall.values()) - sum(oncpu.values())
    # One spinner per core: the ops' thread waited inside the steps, and the rows lost some of
    # it (a share-scaled row may round by a nanosecond per step).
    assert in_steps > 0
    assert 0 < lost <= in_steps + len(wall) * 8
    # The sums stay wall time.
    sums = {row.key: row.stat_ns for row in run.top(limit=None, stat="sum").rows}
    assert sums == {
        row.key: row.stat_ns for row in run.top(limit=None, stat="sum", time="wall").rows
    }
