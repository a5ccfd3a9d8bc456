"""Capture every zoo model and print its attribution coverage as a Markdown table.

Usage: `.venv/bin/python examples/zoo/coverage_table.py [OUT_DIR]` (bundles go to OUT_DIR,
default a temporary directory). Columns per model and level: time coverage (attributed over
profiled op time), non-trivial ops matched, and the share of attributed time that is an
estimated split of an event several ops ran (fused kernel, decomposed call, XLA fusion).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf
from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch

ZOO = Path(__file__).resolve().parent
STEPS = 2
# model file stem -> framework (the prefix of the file name)
MODELS = tuple(
    sorted(p.stem for p in ZOO.glob("*.py") if p.stem.split("_")[0] in ("tf", "torch", "jax"))
)


@dataclass(frozen=True)
class LevelCoverage:
    """One row of the table."""

    model: str
    level: str
    time_coverage: float
    nontrivial_coverage: float
    nontrivial_seen: float  # timed, or seen running only in untimed steps (TF's cheap ops)
    estimated_share: float
    result: CorrelationResult


def framework_of(model: str) -> str:
    """`tf`, `torch` or `jax` from the model's file name."""
    return model.split("_")[0]


def is_training(model: str) -> bool:
    """A model whose file name ends in `_train` is captured as a training step."""
    return model.endswith("_train")


def capture_options(model: str) -> TfCaptureOptions | TorchCaptureOptions | JaxCaptureOptions:
    """The options the table captures `model` with."""
    framework = framework_of(model)
    mode = "train" if is_training(model) else "fit" if model.endswith("_fit") else "infer"
    if framework == "tf":
        return TfCaptureOptions(steps=STEPS, mode=mode)
    if framework == "torch":
        return TorchCaptureOptions(steps=STEPS, mode=mode)
    return JaxCaptureOptions(steps=STEPS, mode=mode)


def capture(model: str, out: Path) -> RunBundle:
    """Capture one zoo model into `out` (replacing it)."""
    script = ZOO / f"{model}.py"
    options = capture_options(model)
    if isinstance(options, TfCaptureOptions):
        return capture_tf(script, out, options)
    if isinstance(options, TorchCaptureOptions):
        return capture_torch(script, out, options)
    return capture_jax(script, out, options)


def measure(model: str, bundle: RunBundle) -> list[LevelCoverage]:
    """Correlate every level the bundle has."""
    framework = framework_of(model)
    correlator = importlib.import_module(f"irprof.frameworks.{framework}.correlate").CORRELATOR
    rows = []
    for level in correlator.levels:
        if level not in bundle.manifest().ir_levels:
            continue
        result = correlator.correlate(bundle, level, CorrelationOptions())
        coverage = result.coverage
        estimated = int(coverage.extra.get("estimated_ns", 0))
        rows.append(
            LevelCoverage(
                model,
                level,
                coverage.time_coverage,
                coverage.nontrivial_coverage,
                coverage.nontrivial_seen_coverage,
                estimated / coverage.attributed_ns if coverage.attributed_ns else 0.0,
                result,
            )
        )
    return rows


def markdown(rows: list[LevelCoverage]) -> str:
    """The README table."""
    lines = [
        "| model | level | time coverage | non-trivial ops timed | seen running | estimated |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| `{r.model}` | {r.level} | {r.time_coverage:.1%} | {r.nontrivial_coverage:.1%} "
        f"| {r.nontrivial_seen:.1%} | {r.estimated_share:.1%} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Capture, correlate and print."""
    out_dir = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="irprof-zoo-"))
    rows: list[LevelCoverage] = []
    for model in MODELS:
        rows += measure(model, capture(model, out_dir / model))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
