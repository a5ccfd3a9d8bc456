"""How busy the machine was while a capture ran its steps: the `options.noise` record.

The capture process reads the 1-minute load average, the CPU count and (Linux) the steal ticks
of /proc/stat before and after the child that runs the timed steps; `top` and the report warn
from it (analyses/step_stats.py, docs/views.md "Per-step statistics").
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irprof.bundle import RunBundle
from irprof.capture.sched_trace import SCHED_FILE, recording_sched

PROC_STAT = Path("/proc/stat")
STEAL_FIELD = 8  # `cpu user nice system idle iowait irq softirq steal ...`: the 8th number


@dataclass(frozen=True)
class NoiseSnapshot:
    """One reading: load average and the aggregate CPU tick counters (None where unknown)."""

    load_1m: float | None
    steal_ticks: int | None
    total_ticks: int | None


def _cpu_ticks(proc_stat: Path) -> tuple[int | None, int | None]:
    """Steal and total ticks of the aggregate `cpu` line (None off Linux or unreadable)."""
    try:
        lines = proc_stat.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None, None
    for line in lines:
        fields = line.split()
        if fields and fields[0] == "cpu":
            try:
                # guest and guest_nice (fields 9, 10) are already counted in user and nice.
                ticks = [int(value) for value in fields[1:9]]
            except ValueError:
                return None, None
            steal = ticks[STEAL_FIELD - 1] if len(ticks) >= STEAL_FIELD else 0
            return steal, sum(ticks)
    return None, None


def noise_snapshot(proc_stat: Path = PROC_STAT) -> NoiseSnapshot:
    """The machine's load and CPU counters now."""
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:  # not available on this system
        load = None
    steal, total = _cpu_ticks(proc_stat)
    return NoiseSnapshot(load, steal, total)


def noise_record(before: NoiseSnapshot, after: NoiseSnapshot) -> dict[str, Any]:
    """The manifest's `options.noise` from readings around the steps: loads before and after,
    CPUs, and the share of CPU time stolen by the hypervisor in between (None when unknown)."""
    steal_share = None
    if None not in (before.steal_ticks, before.total_ticks, after.steal_ticks, after.total_ticks):
        elapsed = int(after.total_ticks or 0) - int(before.total_ticks or 0)
        stolen = int(after.steal_ticks or 0) - int(before.steal_ticks or 0)
        steal_share = stolen / elapsed if elapsed > 0 else 0.0
    return {
        "load_1m_before": before.load_1m,
        "load_1m_after": after.load_1m,
        "cpus": os.cpu_count(),
        "steal_share": steal_share,
        "read": "by the capture process before and after the child that runs the steps",
    }


@contextlib.contextmanager
def measured_noise(sched_out: Path | None = None) -> Iterator[dict[str, Any]]:
    """Read the machine before the block and after it; the yielded dict is the block's
    `options.noise` record once the block has run. With `sched_out`, the scheduler events of
    the block's child processes are recorded there too (`capture/sched_trace.py`), and the
    record's `sched` says whether they were."""
    record: dict[str, Any] = {}
    before = noise_snapshot()
    if sched_out is None:
        yield record
    else:
        with recording_sched(sched_out) as sched:
            yield record
        record["sched"] = sched
    record.update(noise_record(before, noise_snapshot()))


@contextlib.contextmanager
def recording_noise(folder: Path) -> Iterator[None]:
    """Around a child that writes `folder/manifest.json`: add `options.noise` to it after, and
    record the child's scheduler events in `folder/sched.json` when the machine allows."""
    with measured_noise(folder / SCHED_FILE) as record:
        yield
    bundle = RunBundle(folder)
    if not bundle.manifest_path.is_file():
        return  # the child failed before writing its manifest; its error is reported
    manifest = bundle.manifest()
    options = {**manifest.options, "noise": record}
    bundle.write_manifest(dataclasses.replace(manifest, options=options))
