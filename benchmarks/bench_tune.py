"""`irprof tune` against IREE's default compilation: end-to-end speed-up on the IREE example and the
IREE zoo models, measured side by side.

Run: `.venv/bin/python benchmarks/bench_tune.py [--models SUBSTR] [--rounds 5] [--runs 10]
[--json OUT.json] [--keep DIR]`. Per model: `capture iree` (5 profiled runs), `annotate` the
source level, `irprof tune` (its own alternating measurements decide), then the default module
and the tuned IR recompiled with the flags and spec it carries (`compile_tuned`) are timed in
alternating rounds of `--runs` `iree-benchmark-module` repetitions (each at least 0.1 s). The
speed-up is the median over rounds of default median / tuned median; the interval spans the
rounds' ratios. The machine is shared (2 cores): read the interval with the figure. A model
where no candidate won keeps IREE's default, so its figure is default against default, the
noise floor of the measurement.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irprof.api import annotate, tune
from irprof.frameworks.iree.capture import IreeCaptureOptions, capture_iree
from irprof.frameworks.iree.inputs import function_signature, random_inputs, write_inputs
from irprof.frameworks.iree.tune import TuneOptions, compile_tuned
from irprof.frameworks.iree.tune_measure import bench_module, compare, compile_variant
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _zoo(name: str) -> Callable[[], str]:
    def text() -> str:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "zoo" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.stablehlo_text())

    return text


MODELS: dict[str, Callable[[], str]] = {
    "iree_mlp (example)": lambda: (EXAMPLES / "iree_mlp.stablehlo.mlir").read_text(),
    "iree_mlp_wide (zoo)": _zoo("iree_mlp_wide"),
    "iree_convnet (zoo)": _zoo("iree_convnet"),
    "iree_attention (zoo)": _zoo("iree_attention"),
}


@dataclass(frozen=True)
class Row:
    """One model's figures."""

    model: str
    default_ms: float
    tuned_ms: float
    speedup: float
    low: float
    high: float
    choices: str
    tune_s: float


def _choices(record: dict[str, Any]) -> str:
    parts = [
        f"{d['dispatch'].split('_', 2)[-1]}: {d['chosen']['id']}"
        for d in record["dispatches"]
        if d.get("chosen")
    ]
    parts += [" ".join(record["flags"])] if record["flags"] else []
    return "; ".join(parts) or "default kept"


def bench_model(name: str, text: str, folder: Path, rounds: int, runs: int) -> Row:
    """Capture, annotate, tune, then time default vs tuned side by side."""
    source = folder / "model.mlir"
    source.write_text(text)
    run = folder / "run"
    capture_iree(source, run, IreeCaptureOptions(steps=5, warmup=2))
    annotate(run, "stablehlo")
    started = time.perf_counter()
    result = tune(run, folder / "tuned", options=TuneOptions(), say=print)
    tune_s = time.perf_counter() - started
    default = compile_variant(source, folder / "bench", "default")
    tuned = compile_tuned(result.files["ir"], folder / "bench")
    assert default.vmfb is not None and tuned.vmfb is not None, (default.error, tuned.error)
    module = load_module(source, make_context())
    signature = function_signature(module, "main", source)
    inputs = write_inputs(random_inputs(signature, source, 1), folder, signature)
    samples = []
    for _ in range(rounds):
        a = bench_module(default.vmfb, function="main", inputs=inputs, runs=runs)
        b = bench_module(tuned.vmfb, function="main", inputs=inputs, runs=runs)
        samples.append((a, b))
    comparison = compare(samples)
    return Row(
        name,
        comparison.baseline_ns / 1e6,
        comparison.candidate_ns / 1e6,
        comparison.speedup,
        comparison.low,
        comparison.high,
        _choices(result.record),
        tune_s,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="Only models whose name contains this.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the bundles here.")
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as scratch:
        base = args.keep or Path(scratch)
        for name, text in MODELS.items():
            if args.models not in name:
                continue
            folder = base / name.split()[0]
            folder.mkdir(parents=True, exist_ok=True)
            print(f"== {name}", file=sys.stderr)
            rows.append(bench_model(name, text(), folder, args.rounds, args.runs))
    print("| model | default ms | tuned ms | speed-up [interval] | choices | tune s |")
    print("|---|---:|---:|---|---|---:|")
    for row in rows:
        print(
            f"| {row.model} | {row.default_ms:.3f} | {row.tuned_ms:.3f} | "
            f"{row.speedup:.3f}x [{row.low:.2f}, {row.high:.2f}] | {row.choices} | "
            f"{row.tune_s:.0f} |"
        )
    if rows:
        geo = statistics.geometric_mean([row.speedup for row in rows])
        print(f"\ngeometric mean speed-up {geo:.3f}x over {len(rows)} models")
    if args.json is not None:
        args.json.write_text(json.dumps([row.__dict__ for row in rows], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
