"""What capturing costs the model: median step time without a profiler, under the framework's
profiler at its defaults, and in the steps `irprof capture` times, for every example and zoo model.

Run: `.venv/bin/python benchmarks/bench_capture.py [--frameworks tf,jax,torch] [--models SUBSTR]
[--steps 20] [--rounds 3]`. Each round runs the real `irprof capture <framework>` (one child
process per capture, one intra-op thread for torch) with `--steps` profiled steps:

- torch and jax: the capture itself times the same number of steps with no profiler and under
  the framework's profiler at its defaults before its own session, in the same process, and
  records the three medians in the manifest (`options.overhead`); the figures are read there.
- tf (while its capture records no `options.overhead`): irprof's figure is the median
  duration of the step markers in the bundle's trace; the two baselines are timed in a separate
  child process that loads the model with the capture's own code and runs the same steps
  bare and under `tf.profiler.experimental.start(logdir)` at its defaults.

A model whose file name ends in `_train` is captured with `mode="train"`. The figures of a model
are the medians over the rounds; the spread of the irprof/profiler ratio over the rounds is
printed with them, since this machine is shared. One function per framework (`FRAMEWORKS`)
builds the capture options and, where needed, the baselines.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irprof.bundle import RunBundle
from irprof.errors import IrprofError
from irprof.trace.model import EventKind

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FIELDS = ("no_profiler_ns", "profiler_ns", "irprof_ns")


@dataclass(frozen=True)
class Figures:
    """Median step times of one capture round (ns)."""

    no_profiler_ns: int
    profiler_ns: int
    irprof_ns: int
    source: str  # where the figures came from: "manifest" or "trace + baseline child"


def models_of(framework: str) -> list[Path]:
    """Every example and zoo model script of `framework`."""
    found = sorted(EXAMPLES.glob(f"{framework}_*.py")) + sorted(
        (EXAMPLES / "zoo").glob(f"{framework}_*.py")
    )
    return [path for path in found if path.name != "coverage_table.py"]


def mode_of(script: Path) -> str:
    """`train` for `*_train.py`, else `infer` (the zoo's convention)."""
    return "train" if script.stem.endswith("_train") else "infer"


def with_mode(options: Any, script: Path) -> Any:
    """`options` with `mode` set when the capture has such an option."""
    names = {f.name for f in dataclasses.fields(options)}
    return dataclasses.replace(options, mode=mode_of(script)) if "mode" in names else options


def recorded_figures(bundle: RunBundle) -> Figures | None:
    """The capture's own record (`options.overhead`), if it wrote one."""
    record = bundle.manifest().options.get("overhead")
    if not isinstance(record, dict) or not all(isinstance(record.get(f), int) for f in FIELDS):
        return None
    bare, plain, timed = (int(record[f]) for f in FIELDS)
    return Figures(bare, plain, timed, source="manifest")


def marker_median_ns(bundle: RunBundle) -> int:
    """Median duration of the step markers in the bundle's trace."""
    trace = bundle.trace()
    rows = trace.rows_of_kind(EventKind.STEP)
    if len(rows) == 0:
        raise SystemExit(f"{bundle.root}: no step markers in the trace")
    return int(statistics.median(trace.dur_ns[rows].tolist()))


def capture_torch_round(script: Path, out: Path, steps: int) -> Figures:
    """One `irprof capture torch` (torch level only: lowering is not what is measured)."""
    from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch

    options = with_mode(TorchCaptureOptions(steps=steps, levels=("torch",)), script)
    figures = recorded_figures(capture_torch(script, out, options))
    if figures is None:
        raise SystemExit(f"{out}: the torch capture recorded no options.overhead")
    return figures


def capture_jax_round(script: Path, out: Path, steps: int) -> Figures:
    """One `irprof capture jax`; baselines from the manifest, else measured here."""
    from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax

    bundle = capture_jax(script, out, with_mode(JaxCaptureOptions(steps=steps), script))
    return recorded_figures(bundle) or fallback_figures("jax", script, bundle, steps)


def capture_tf_round(script: Path, out: Path, steps: int) -> Figures:
    """One `irprof capture tf`; baselines from the manifest, else measured here."""
    from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf

    options = with_mode(TfCaptureOptions(steps=steps), script)
    bundle = capture_tf(script, out, options)
    return recorded_figures(bundle) or fallback_figures("tf", script, bundle, steps)


FRAMEWORKS: dict[str, Callable[[Path, Path, int], Figures]] = {
    "tf": capture_tf_round,
    "jax": capture_jax_round,
    "torch": capture_torch_round,
}


def fallback_figures(framework: str, script: Path, bundle: RunBundle, steps: int) -> Figures:
    """irprof's figure from the trace's step markers, the baselines from a child process."""
    if framework not in BASELINES:
        raise SystemExit(f"{bundle.root}: the {framework} capture recorded no options.overhead")
    command = [
        sys.executable,
        __file__,
        "--baseline",
        framework,
        str(script),
        "--steps",
        str(steps),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{script}: baseline child failed:\n{done.stderr[-2000:]}")
    bare, plain = json.loads(done.stdout.strip().splitlines()[-1])
    return Figures(bare, plain, marker_median_ns(bundle), source="trace + baseline child")


def _median_step_ns(run: Callable[[], None], steps: int) -> int:
    run()  # like the captures: the first step of a condition is not timed
    durations = []
    for _ in range(steps):
        started = time.perf_counter_ns()
        run()
        durations.append(time.perf_counter_ns() - started)
    return int(statistics.median(durations))


def tf_baselines(script: Path, steps: int) -> tuple[int, int]:
    """TF: the model as `irprof capture tf` loads it, bare and under the default profiler."""
    import importlib

    import tensorflow as tf

    from irprof.capture.entry import load_entry
    from irprof.frameworks.tf import runner as tf_runner

    # `run_step` (one step, outputs fetched) lives in the runner or its stepping half.
    holder = tf_runner if hasattr(tf_runner, "run_step") else None
    holder = holder or importlib.import_module("irprof.frameworks.tf.steps_runner")
    run_step: Callable[[Any, tuple[Any, ...]], None] = holder.run_step
    fn, inputs = tf_runner.resolve_model(
        load_entry(script, "irprof_model", module_name=script.stem), mode_of(script)
    )
    for _ in range(2):
        run_step(fn, inputs)
    bare = _median_step_ns(lambda: run_step(fn, inputs), steps)
    with tempfile.TemporaryDirectory(prefix="bench-tf-") as logdir:
        tf.profiler.experimental.start(logdir)
        try:
            plain = _median_step_ns(lambda: run_step(fn, inputs), steps)
        finally:
            tf.profiler.experimental.stop()
    return bare, plain


# Baselines measured here for captures that record no `options.overhead` of their own.
BASELINES: dict[str, Callable[[Path, int], tuple[int, int]]] = {"tf": tf_baselines}


def measure(framework: str, script: Path, steps: int, rounds: int, work: Path) -> list[Figures]:
    """`rounds` captures of one model."""
    return [
        FRAMEWORKS[framework](script, work / f"{framework}-{script.stem}-{index}", steps)
        for index in range(rounds)
    ]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def summary_row(framework: str, script: Path, rounds: list[Figures]) -> dict[str, Any]:
    """Medians over the rounds, the ratios, and the spread of irprof/profiler."""
    medians = {f: statistics.median(getattr(r, f) for r in rounds) for f in FIELDS}
    ratios = [r.irprof_ns / r.profiler_ns for r in rounds]
    return {
        "framework": framework,
        "model": script.relative_to(EXAMPLES).as_posix(),
        "mode": mode_of(script),
        **medians,
        "vs_profiler": medians["irprof_ns"] / medians["profiler_ns"],
        "vs_none": medians["irprof_ns"] / medians["no_profiler_ns"],
        "profiler_vs_none": medians["profiler_ns"] / medians["no_profiler_ns"],
        "ratio_range": (min(ratios), max(ratios)),
        "source": rounds[0].source,
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table."""
    lines = [
        "| framework | model | no profiler ms | profiler ms | irprof ms | irprof / profiler "
        "(rounds) | irprof / none | profiler / none |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        low, high = row["ratio_range"]
        mode = " (train)" if row["mode"] == "train" else ""
        lines.append(
            f"| {row['framework']} | `{row['model']}`{mode} | {_ms(row['no_profiler_ns'])} | "
            f"{_ms(row['profiler_ns'])} | {_ms(row['irprof_ns'])} | {row['vs_profiler']:.2f}x "
            f"({low:.2f}-{high:.2f}) | {row['vs_none']:.2f}x | {row['profiler_vs_none']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Capture every selected model `--rounds` times and print the figures."""
    parser = argparse.ArgumentParser(prog="bench_capture.py")
    parser.add_argument("--frameworks", default="tf,jax,torch")
    parser.add_argument("--models", default="", help="only scripts whose name contains this")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", nargs=2, metavar=("FRAMEWORK", "SCRIPT"), help="(internal)")
    args = parser.parse_args(argv)
    if args.baseline:
        framework, script = args.baseline
        print(json.dumps(BASELINES[framework](Path(script), args.steps)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-capture-") as work:
        for framework in args.frameworks.split(","):
            for script in models_of(framework):
                if args.models not in script.stem:
                    continue
                started = time.perf_counter()
                try:
                    rounds = measure(framework, script, args.steps, args.rounds, Path(work))
                except (IrprofError, SystemExit) as error:  # one broken model: say so, go on
                    print(f"{framework:5} {script.name:40} FAILED: {error}", flush=True)
                    continue
                row = summary_row(framework, script, rounds)
                rows.append(row)
                low, high = row["ratio_range"]
                print(
                    f"{framework:5} {row['model']:40} none {_ms(row['no_profiler_ns'])} ms  "
                    f"profiler {_ms(row['profiler_ns'])} ms  irprof {_ms(row['irprof_ns'])} ms  "
                    f"irprof/profiler {row['vs_profiler']:.2f}x ({low:.2f}-{high:.2f})  "
                    f"irprof/none {row['vs_none']:.2f}x  [{row['source']}, "
                    f"{time.perf_counter() - started:.0f} s]",
                    flush=True,
                )
    print()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
