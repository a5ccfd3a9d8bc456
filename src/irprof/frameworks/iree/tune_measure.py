"""Compile, check and time one `irprof tune` candidate with IREE's own tools.

End to end: `iree-benchmark-module` repetitions (real time per run). Per dispatch: the HAL
profile of a run (`--device_profiling_mode`), the same measurement `irprof capture iree` takes,
so a dispatch's time is IREE's own dispatch duration. Comparisons alternate the two modules
round by round, so load from other processes falls on both.
"""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from irprof.errors import CaptureError
from irprof.frameworks.iree.tools import (
    COMPILE_FLAGS,
    profile_module,
    profile_projection,
    run_bounded,
    run_tool,
    tool_path,
)

# Floating-point reassociation (other tile and vector sizes sum in another order): outputs are
# equal when |tuned - default| <= ATOL * max(1, max|default|) + RTOL * |default| elementwise.
RTOL = 1e-4
ATOL = 1e-5
PARALLEL_JOBS = 2
# A candidate's compile that takes longer is recorded as timed out (IREE's compiler has been
# seen to hang, threads waiting and no CPU used, on a configuration it otherwise accepts).
COMPILE_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Build:
    """One compiled variant: its flags, spec, and the .vmfb or why it failed."""

    label: str
    flags: tuple[str, ...]
    spec: str
    vmfb: Path | None
    configs: Path | None
    error: str = ""


def compile_variant(
    source: Path,
    folder: Path,
    label: str,
    *,
    flags: Sequence[str] = (),
    spec: str = "",
    timeout_s: float | None = None,
) -> Build:
    """`iree-compile source` with `flags` and the tuning `spec` (when given) into `folder/label`,
    dumping each executable's configuration; a failure is returned with IREE's diagnostic."""
    out = folder / label
    out.mkdir(parents=True, exist_ok=True)
    arguments = [str(source), *COMPILE_FLAGS, *flags, "-o", str(out / "module.vmfb")]
    arguments.append(f"--iree-hal-dump-executable-configurations-to={out / 'configs'}")
    if spec:
        (out / "spec.mlir").write_text(spec, encoding="utf-8")
        arguments.append(f"--iree-codegen-tuning-spec-path={out / 'spec.mlir'}")
    limit = COMPILE_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        completed = run_bounded([str(tool_path("iree-compile")), *arguments], timeout_s=limit)
    except subprocess.TimeoutExpired:
        return Build(label, tuple(flags), spec, None, None, error=f"timed out after {limit} s")
    if completed.returncode != 0:
        # IREE's first error names the op and the reason; the notes after it dump whole IR.
        lines = completed.stderr.replace(f"{out}/", "").splitlines()
        errors = [line.strip() for line in lines if "error:" in line]
        first = (errors or [line for line in lines if line.strip()] or ["no diagnostic"])[0]
        return Build(label, tuple(flags), spec, None, None, error=first[:500])
    return Build(label, tuple(flags), spec, out / "module.vmfb", out / "configs")


def compile_all(
    source: Path, folder: Path, variants: Sequence[tuple[str, Sequence[str], str]]
) -> list[Build]:
    """Compile `(label, flags, spec)` variants, `PARALLEL_JOBS` at a time."""
    with ThreadPoolExecutor(max_workers=PARALLEL_JOBS) as pool:
        futures = [
            pool.submit(compile_variant, source, folder, label, flags=flags, spec=spec)
            for label, flags, spec in variants
        ]
        return [future.result() for future in futures]


def run_outputs(
    vmfb: Path, folder: Path, *, function: str, inputs: Sequence[str], results: int
) -> list[np.ndarray]:
    """The outputs of one `iree-run-module` call on `inputs`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"output_{n}.npy" for n in range(results)]
    run_tool(
        "iree-run-module",
        [
            f"--module={vmfb}",
            "--device=local-task",
            f"--function={function}",
            *(f"--input={spec}" for spec in inputs),
            *(f"--output=@{path}" for path in paths),
        ],
        subject=vmfb.parent.name,
        what=f"running @{function}",
        timeout_s=600.0,
    )
    return [np.load(path, allow_pickle=False) for path in paths]


def output_mismatch(reference: Sequence[np.ndarray], tuned: Sequence[np.ndarray]) -> str:
    """Why `tuned` differs from `reference` beyond the stated tolerance, or ""."""
    if len(reference) != len(tuned):
        return f"{len(tuned)} outputs instead of {len(reference)}"
    for number, (want, got) in enumerate(zip(reference, tuned, strict=True)):
        if want.shape != got.shape or want.dtype != got.dtype:
            return (
                f"output {number}: {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}"
            )
        if not np.issubdtype(want.dtype, np.floating):
            if not np.array_equal(want, got):
                return f"output {number}: integer values differ"
            continue
        scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL * scale, equal_nan=True):
            worst = float(np.max(np.abs(got.astype(np.float64) - want)))
            return f"output {number}: max |difference| {worst:.3g} beyond rtol {RTOL} atol {ATOL}"
    return ""


def bench_module(vmfb: Path, *, function: str, inputs: Sequence[str], runs: int) -> list[float]:
    """Mean wall time (ns) of one call of `function` in each of `runs` repetitions of at least
    0.1 s, from iree-benchmark-module."""
    command = [
        str(tool_path("iree-benchmark-module")),
        f"--module={vmfb}",
        "--device=local-task",
        f"--function={function}",
        *(f"--input={spec}" for spec in inputs),
        f"--benchmark_repetitions={runs}",
        "--benchmark_min_time=0.1s",
        "--benchmark_format=json",
        "--benchmark_enable_random_interleaving=false",
    ]
    try:
        completed = run_bounded(command, timeout_s=600.0)
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(f"{vmfb}: iree-benchmark-module did not finish in 600 s") from exc
    if completed.returncode != 0:
        raise CaptureError(f"{vmfb}: iree-benchmark-module failed: {completed.stderr[-2000:]}")
    data = orjson.loads(completed.stdout)
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
    return [
        float(b["real_time"]) * scale[b.get("time_unit", "ns")]
        for b in data["benchmarks"]
        if b.get("run_type") == "iteration"
    ]


def dispatch_times(
    vmfb: Path, folder: Path, *, function: str, inputs: Sequence[str], runs: int
) -> dict[str, list[int]]:
    """Duration (ns) of every invocation of every dispatch over `runs` profiled calls."""
    folder.mkdir(parents=True, exist_ok=True)
    profile = folder / "profile.ireeprof"
    profile_module(
        vmfb,
        profile,
        function=function,
        inputs=inputs,
        iterations=runs,
        subject=vmfb.parent.name,
        timeout_s=600.0,
    )
    text = profile_projection(
        profile, "dispatch", subject=vmfb.parent.name, timeout_s=600.0, extra=("--dispatch_events",)
    )
    times: dict[str, list[int]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        record = orjson.loads(line)
        key = record.get("key")
        duration = record.get("duration_ns")
        if record.get("valid") is False or not isinstance(key, str):
            continue
        if isinstance(duration, int):
            times.setdefault(key, []).append(duration)
    profile.unlink()
    return times


@dataclass(frozen=True)
class Comparison:
    """Baseline vs candidate over alternating rounds: medians and the per-round ratio range."""

    baseline_ns: float
    candidate_ns: float
    speedup: float  # median over rounds of baseline median / candidate median
    low: float  # smallest per-round speedup
    high: float  # largest per-round speedup
    rounds: int
    samples: tuple[tuple[float, ...], tuple[float, ...]]

    def significant(self, margin: float) -> bool:
        """Faster in every round by more than `margin` (e.g. 0.03 for 3%)."""
        return self.rounds > 0 and self.low > 1.0 + margin

    def to_json(self) -> dict[str, object]:
        """The record form."""
        return {
            "baseline_ns": round(self.baseline_ns),
            "candidate_ns": round(self.candidate_ns),
            "speedup": round(self.speedup, 4),
            "interval": [round(self.low, 4), round(self.high, 4)],
            "rounds": self.rounds,
        }


def compare(rounds: Sequence[tuple[Sequence[float], Sequence[float]]]) -> Comparison:
    """Per round, the ratio of the medians; the speedup is the median ratio, the interval spans
    the rounds' ratios, the times are medians of the pooled samples."""
    base = [value for pair in rounds for value in pair[0]]
    cand = [value for pair in rounds for value in pair[1]]
    ratios = [
        statistics.median(pair[0]) / statistics.median(pair[1])
        for pair in rounds
        if pair[0] and pair[1]
    ]
    if not base or not cand or not ratios:
        return Comparison(0.0, 0.0, 1.0, 1.0, 1.0, 0, ((), ()))
    return Comparison(
        statistics.median(base),
        statistics.median(cand),
        statistics.median(ratios),
        min(ratios),
        max(ratios),
        len(ratios),
        (tuple(base), tuple(cand)),
    )
