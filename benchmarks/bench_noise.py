"""Do rankings hold on a busy machine? Each model is captured twice, once on an idle machine and
once while busy-loop processes keep every core busy, and the two `top` tables are compared.

Run: `.venv/bin/python benchmarks/bench_noise.py [--models SUBSTR,...] [--rounds 1] [--steps N]
[--threads N] [--stat median] [--time oncpu|wall] [--keep DIR | --rerank DIR]`. `--keep`
leaves each pair of bundles in `DIR/<framework>_<model>_<round>/{idle,busy}`; `--rerank` ranks
such kept bundles again without capturing (to compare statistics, time bases or a changed
ranking on the same captures). For each
model, per round, the idle capture and the loaded capture alternate
(idle first), each a real `irprof capture <framework>` in its own child process at the capture's
default step count (unless `--steps`) and thread count (1 for PyTorch, ONNX, TF and JAX; with
`--threads N`, N for the captures that have the option, to see what more threads cost), then
`annotate` at the first level and `top` with the default statistic
(median step x steps). Load: as many `python -c "while True: pass"` processes as cores, started
before the loaded capture and stopped right after it. Printed per model: the overlap of the two
top-10 lists, whether the top-5 are the same ops in the same order, and the largest difference
of any top-10 op's share (percentage points). Targets (issue "a stall is not a hotspot"): the
same top-5 in the same order and every share within 2 points. The exit status is 0 either way:
the figures are the result.

`--control` captures each model a second time on the idle machine (idle, busy, idle again) and
prints the same comparison between the two idle captures: the differences a ranking shows with
no load at all (run-to-run variation of the kernels themselves), the floor under which the busy
column cannot be judged.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bench_capture import models_of, with_mode

from irprof.analyses.step_stats import Stat, TimeBasis, parse_stat, parse_time_basis
from irprof.api import Run
from irprof.bundle import RunBundle
from irprof.frameworks import CaptureFunction, get_all_frameworks
from irprof.registry import load_reference

TOP = 10
TOP_ORDER = 5
GROUP_SUFFIX = re.compile(r" \+\d+ ops$")
SHARE_TARGET_PP = 2.0


@dataclass(frozen=True)
class Ranking:
    """One capture's ranking: op keys hottest first and each op's share (percent)."""

    keys: tuple[str, ...]
    share: dict[str, float]
    load: float  # 1-minute load average when the capture ended (its manifest's noise record)


@contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """`count` busy-loop processes for the duration of the block."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(1.0)  # let the scheduler see them before the capture starts
        yield
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


def capture(
    framework: str, script: Path, out: Path, steps: int | None, threads: int | None
) -> None:
    """Capture and annotate one model (at the capture's defaults unless given)."""
    record = get_all_frameworks().get(framework)
    options = with_mode(cast("type[Any]", load_reference(record.options))(), script)
    if steps is not None:
        options = dataclasses.replace(options, steps=steps)
    if threads is not None and "threads" in {f.name for f in dataclasses.fields(options)}:
        options = dataclasses.replace(options, threads=threads)
    cast("CaptureFunction", load_reference(record.capture))(script, out, options)
    Run(out).annotate()


def ranking(out: Path, stat: Stat = "median", time: TimeBasis = "oncpu") -> Ranking:
    """Rank an annotated bundle's ops (by `stat` of `time`, the defaults unless given)."""
    rows = Run(out).top(limit=None, stat=stat, time=time).rows
    total = sum(row.stat_ns for row in rows) or 1
    # Two rows may share a name (the same primitive in two places): the op's walk index, the
    # same in both captures of one model, tells them apart. A fused group's label counts its
    # other members (`+2 ops`), which an op with no time in one capture changes: left out.
    keys = tuple(f"{GROUP_SUFFIX.sub('', row.key)} #{row.op_index}" for row in rows)
    shares = {key: 100.0 * row.stat_ns / total for key, row in zip(keys, rows, strict=True)}
    noise = RunBundle(out).manifest().options.get("noise") or {}
    return Ranking(keys, shares, float(noise.get("load_1m_after", math.nan)))


def compare(idle: Ranking, loaded: Ranking) -> tuple[int, bool, float]:
    """Top-10 overlap, same top-5 in order, largest share difference over the idle top-10."""
    overlap = len(set(idle.keys[:TOP]) & set(loaded.keys[:TOP]))
    same_order = idle.keys[:TOP_ORDER] == loaded.keys[:TOP_ORDER]
    diff = max(
        (abs(idle.share[key] - loaded.share.get(key, 0.0)) for key in idle.keys[:TOP]),
        default=0.0,
    )
    return overlap, same_order, diff


def _control_columns(idle: Ranking, control: Ranking | None) -> str:
    """The idle-against-idle columns (blank when the second idle capture is missing)."""
    if control is None:
        return f" {'-':>17} {'-':>9}"
    _, same_order, diff = compare(idle, control)
    return f" {'same' if same_order else 'differs':>17} {f'{diff:.2f} pp':>9}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default="tf,jax,torch")
    parser.add_argument("--models", default="", help="comma-separated substrings of file names")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="default: the capture's (1)")
    parser.add_argument("--show", action="store_true", help="also print both top-5 with shares")
    parser.add_argument("--stat", type=parse_stat, default="median", help="median|sum|min|mean")
    parser.add_argument("--time", type=parse_time_basis, default="oncpu", help="oncpu|wall")
    parser.add_argument(
        "--control", action="store_true", help="also capture a second idle run and compare"
    )
    kept = parser.add_mutually_exclusive_group()
    kept.add_argument("--keep", type=Path, help="leave the bundles in this folder")
    kept.add_argument("--rerank", type=Path, help="rank the bundles --keep left here again")
    args = parser.parse_args()
    wanted = [part for part in args.models.split(",") if part]
    cores = os.cpu_count() or 1
    threads = "capture default" if args.threads is None else str(args.threads)
    print(
        f"{cores} cores; load: {cores} busy-loop processes; threads: {threads}; top-{TOP} compared"
    )
    print(
        f"{'model':38} {'load idle/busy':>15} {'top-10 overlap':>15} {'top-5 order':>12} "
        f"{'max share diff':>15}"
        + (f" {'idle/idle: order':>17} {'diff':>9}" if args.control else "")
    )
    met = total = controls = control_met = 0
    for framework in args.frameworks.split(","):
        for script in models_of(framework):
            if wanted and not any(part in script.name for part in wanted):
                continue
            for round_ in range(args.rounds):
                name = f"{framework}_{script.stem}_{round_}"
                if args.rerank is not None:
                    if not (args.rerank / name / "busy").is_dir():
                        continue
                    idle = ranking(args.rerank / name / "idle", args.stat, args.time)
                    loaded = ranking(args.rerank / name / "busy", args.stat, args.time)
                    again = args.rerank / name / "idle_again"
                    control = ranking(again, args.stat, args.time) if again.is_dir() else None
                else:
                    with tempfile.TemporaryDirectory() as tmp:
                        folder = args.keep / name if args.keep else Path(tmp)
                        capture(framework, script, folder / "idle", args.steps, args.threads)
                        idle = ranking(folder / "idle", args.stat, args.time)
                        with busy_cores(cores):
                            capture(framework, script, folder / "busy", args.steps, args.threads)
                        loaded = ranking(folder / "busy", args.stat, args.time)
                        control = None
                        if args.control:
                            again = folder / "idle_again"
                            capture(framework, script, again, args.steps, args.threads)
                            control = ranking(again, args.stat, args.time)
                overlap, same_order, diff = compare(idle, loaded)
                ok = same_order and diff <= SHARE_TARGET_PP
                met += ok
                total += 1
                if control is not None:
                    _, control_order, control_diff = compare(idle, control)
                    controls += 1
                    control_met += control_order and control_diff <= SHARE_TARGET_PP
                print(
                    f"{framework + '/' + script.stem:38} "
                    f"{f'{idle.load:.1f}/{loaded.load:.1f}':>15} {f'{overlap}/{TOP}':>15} "
                    f"{'same' if same_order else 'differs':>12} {f'{diff:.2f} pp':>15}"
                    + (_control_columns(idle, control) if args.control else "")
                    + ("" if ok else "   (target missed)"),
                    flush=True,
                )
                if args.show:
                    for label, side in (("idle", idle), ("busy", loaded)):
                        listed = ", ".join(
                            f"{key} {side.share[key]:.1f}%" for key in side.keys[:TOP_ORDER]
                        )
                        print(f"  {label}: {listed}", flush=True)
    print(f"targets met (same top-5 order, shares within {SHARE_TARGET_PP} pp): {met}/{total}")
    if controls:
        print(f"the same between the two idle captures (no load): {control_met}/{controls}")


if __name__ == "__main__":
    main()
