"""Preempted time in a real capture: PyTorch profiled while two spinners per core compete.

`tests/fixtures/torch/models/long_matmul.py` runs one long op (a linear layer, tens of ms per
step) and a short one; one `capture_torch` with every core kept busy, then `top` on wall and
on on-CPU time. What the test knows on its own, from the files: the Kineto JSON's
`ProfilerStep#` windows, its `aten::linear` and `aten::addmm` events and the OS thread id they
carry, and `sched.json`'s waits of that thread, intersected here event by event.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from irprof.api import Run
from irprof.capture.sched_trace import SCHED_FILE

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "torch" / "models" / "long_matmul.py"
SPIN = "while True: pass"
STEPS = 4


def overlap(waits: list[int], start: int, end: int) -> int:
    pairs = zip(waits[0::2], waits[1::2], strict=True)
    return sum(max(0, min(end, b) - max(start, a)) for a, b in pairs)


ATTEMPTS = 3  # captures until the long op is seen waiting for a CPU (the scheduler decides)


def capture_beside_spinners(out: Path) -> Path:
    """One capture with two spinners per core competing (one per core left a CI run's capture
    thread unpreempted once: CFS owes no wait to a thread that sleeps between steps)."""
    from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch

    options = TorchCaptureOptions(steps=STEPS, warmup=1, levels=("torch",))
    count = 2 * (os.cpu_count() or 1)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        return capture_torch(MODEL, out, options).root
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_on_cpu_time_takes_out_the_long_ops_waits(tmp_path: Path) -> None:
    for attempt in range(ATTEMPTS):
        root = capture_beside_spinners(tmp_path / f"run{attempt}")
        found = _waits(root)
        if found is None or found[1] > 0:
            break
    run = Run(root)
    run.annotate()
    status = run.manifest().options["noise"]["sched"]
    if not status["recorded"]:  # no tracefs or no root: said so, and rankings are wall time
        assert status["reason"] and not (root / SCHED_FILE).exists()
        assert run.top(limit=None, stat="mean").oncpu_note == ""
        return
    assert found is not None
    outer, inner = found
    # Two spinners per core beside a tens-of-ms op in every step: it waited for a CPU.
    assert inner > 0, f"no wait inside aten::addmm in {ATTEMPTS} captures"

    def rows(**kwargs: Any) -> dict[str, int]:
        return {row.key: row.stat_ns for row in run.top(limit=None, **kwargs).rows}

    wall, oncpu = rows(stat="mean", time="wall"), rows(stat="mean")
    assert oncpu.keys() == wall.keys()
    assert all(oncpu[key] <= wall[key] for key in wall)
    (key,) = [key for key in wall if "linear" in key]
    lost = wall[key] - oncpu[key]
    # The linear row is the linear event split among its ops (addmm holds nearly all): it lost
    # the waits inside addmm and at most those inside linear (plus a ns of rounding per op and
    # step).
    slack = 2 * STEPS
    assert inner - slack <= lost <= outer + slack, (inner, lost, outer)
    # The table says so; the sums stay wall time.
    assert "on-CPU" in run.top(limit=None).stat_label
    assert rows(stat="sum") == rows(stat="sum", time="wall")


def _waits(root: Path) -> tuple[int, int] | None:
    """The capture thread's waits for a CPU inside the timed `aten::linear` events and inside
    their `aten::addmm` (ns), read from the Kineto JSON and `sched.json` alone; None when the
    capture could not record the scheduler."""
    if not (root / SCHED_FILE).exists():
        return None
    (path,) = (root / "trace").glob("*.pt.trace.json.gz")
    data: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    base = int(data.get("baseTimeNanoseconds", 0))
    events = [e for e in data["traceEvents"] if e.get("ph") == "X"]

    def span(event: dict[str, Any]) -> tuple[int, int]:
        return base + round(event["ts"] * 1000), base + round((event["ts"] + event["dur"]) * 1000)

    steps = [span(e) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == STEPS

    def in_steps(name: str) -> list[dict[str, Any]]:
        return [e for e in events if e.get("name") == name
                and any(s <= span(e)[0] < t for s, t in steps)]  # fmt: skip

    linear, addmm = in_steps("aten::linear"), in_steps("aten::addmm")
    assert len(linear) == len(addmm) == STEPS
    (tid,) = {int(e["tid"]) for e in linear}  # Kineto carries the OS thread id
    record = json.loads((root / SCHED_FILE).read_text())
    (thread,) = [t for t in record["threads"] if t["tid"] == tid]
    waits = thread["runnable"]
    outer = sum(overlap(waits, *span(e)) for e in linear)
    inner = sum(overlap(waits, *span(e)) for e in addmm)
    return outer, inner
