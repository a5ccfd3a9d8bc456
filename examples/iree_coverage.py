"""Capture every JAX and PyTorch example (and zoo model) with `--backend both` and print how much
IREE dispatch time reaches the source ops, as the README's Markdown tables.

Usage: `.venv/bin/python examples/iree_coverage.py [OUT_DIR] [--only NAME ...]` (bundles go to
OUT_DIR/<model>, the IREE one at OUT_DIR/<model>/iree; default a temporary directory). Per model
and IREE level: dispatch time attributed, non-trivial ops annotated, and every unattributed
dispatch with its reason; per model, the framework's own time per step and IREE's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.errors import IrprofError
from irprof.frameworks import get_all_frameworks
from irprof.frameworks.iree.correlate import CORRELATOR as IREE_CORRELATOR
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch

EXAMPLES = Path(__file__).resolve().parent
SCRIPTS = tuple(
    sorted(
        path
        for folder in (EXAMPLES, EXAMPLES / "zoo")
        for path in folder.glob("*.py")
        if path.stem.split("_")[0] in ("jax", "torch")
    )
)


@dataclass(frozen=True)
class LevelRow:
    """One model at one IREE level."""

    model: str
    level: str
    result: CorrelationResult


@dataclass(frozen=True)
class TimeRow:
    """One model: time per step of its ops under the framework and under IREE."""

    model: str
    framework: str
    native_ns: float
    iree_ns: float


def capture(script: Path, out: Path, steps: int) -> RunBundle:
    """`--backend both` of the script's framework into `out`."""
    if script.stem.startswith("jax"):
        return capture_jax(script, out, JaxCaptureOptions(steps=steps, backend="both"))
    return capture_torch(script, out, TorchCaptureOptions(steps=steps, backend="both"))


def measure(model: str, bundle: RunBundle) -> tuple[list[LevelRow], TimeRow]:
    """Correlate the IREE bundle's levels and the framework's first level."""
    iree = RunBundle(bundle.root / "iree")
    rows = [
        LevelRow(model, level, IREE_CORRELATOR.correlate(iree, level, CorrelationOptions()))
        for level in iree.manifest().ir_levels
    ]
    framework = bundle.manifest().framework
    correlator = get_all_frameworks().get(framework).load_correlator()
    native = correlator.correlate(bundle, bundle.manifest().ir_levels[0], CorrelationOptions())
    times = TimeRow(
        model,
        framework,
        native.coverage.attributed_ns / bundle.manifest().steps,
        rows[0].result.coverage.attributed_ns / iree.manifest().steps,
    )
    return rows, times


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def markdown(rows: list[LevelRow], times: list[TimeRow]) -> str:
    """The README tables: coverage, unattributed dispatches, time per step."""
    lines = [
        "| model | level | dispatch time attributed | non-trivial ops annotated |",
        "|---|---|---:|---:|",
    ]
    for row in rows:
        coverage = row.result.coverage
        ops = f"{coverage.ops_nontrivial_annotated}/{coverage.ops_nontrivial}"
        lines.append(
            f"| `{row.model}` | {row.level} | {coverage.time_coverage:.2%} of "
            f"{_ms(coverage.profiled_ns)} | {ops} ({coverage.nontrivial_coverage:.0%}) |"
        )
    missing = [
        (row, event)
        for row in rows
        for event in row.result.coverage.unmatched_events
        if event.total_ns
    ]
    lines += [
        "",
        "| model | level | unattributed dispatch | time | reason |",
        "|---|---|---|---:|---|",
    ]
    lines += [
        f"| `{row.model}` | {row.level} | `{event.name}` | {_ms(event.total_ns)} | {event.reason} |"
        for row, event in missing
    ] or ["| (none) | | | | |"]
    lines += ["", "| model | framework / step | IREE llvm-cpu / step |", "|---|---:|---:|"]
    lines += [
        f"| `{row.model}` | {row.framework}: {_ms(row.native_ns)} | {_ms(row.iree_ns)} |"
        for row in times
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Capture, correlate and print."""
    parser = argparse.ArgumentParser(prog="iree_coverage.py")
    parser.add_argument("out_dir", nargs="?", type=Path)
    parser.add_argument("--only", nargs="*", default=[], help="model names (file stems)")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    out_dir = args.out_dir or Path(tempfile.mkdtemp(prefix="irprof-iree-coverage-"))
    rows: list[LevelRow] = []
    times: list[TimeRow] = []
    refused: list[str] = []
    for script in SCRIPTS:
        if args.only and script.stem not in args.only:
            continue
        print(f"capturing {script.relative_to(EXAMPLES.parent)}", file=sys.stderr)
        try:
            bundle = capture(script, out_dir / script.stem, args.steps)
        except IrprofError as error:  # a model this path cannot take: say which and why
            refused.append(f"- `{script.stem}`: {str(error).splitlines()[0][:300]}")
            continue
        level_rows, time_row = measure(script.stem, bundle)
        rows += level_rows
        times.append(time_row)
    print(markdown(rows, times))
    if refused:
        print("\nNot captured:\n" + "\n".join(refused))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
