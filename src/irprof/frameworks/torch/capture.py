"""`irprof capture torch`: export, import, lower and profile a PyTorch model in a child process.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/capture.py`.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.capture.noise import recording_noise
from irprof.capture.subprocess_run import (
    check_capture_arguments,
    model_label,
    run_runner,
)
from irprof.errors import CaptureError, IrprofError, UsageError
from irprof.frameworks.iree.backend import BackendPlan, capture_staged

RUNNER_MODULE = "irprof.frameworks.torch.runner"
LEVELS = ("torch", "linalg")
DECOMPOSITIONS = ("default", "none")
MODES = ("infer", "train")
IREE_PLAN = BackendPlan(
    framework="torch", native="torch", level="torch", what="torch-dialect MLIR of torch.export"
)


@dataclass(frozen=True)
class TorchCaptureOptions:
    """Entry function, profiled and warm-up steps, IR levels, decomposition, intra-op threads."""

    entry: str = "irprof_model"
    steps: int = 5
    warmup: int = 2
    levels: tuple[str, ...] = LEVELS
    decompose: str = "default"
    threads: int = 1
    timeout_s: float = 900.0
    backend: str = "torch"  # torch (eager), iree (IREE llvm-cpu on ir/torch.mlir) or both
    mode: str = "infer"  # infer: forward passes; train: forward, backward and optimizer step


def capture_torch(
    script: str | Path, out: str | Path, options: TorchCaptureOptions = TorchCaptureOptions()
) -> RunBundle:
    """Profile `script`'s model with torch.profiler, dump its MLIR and write the bundle `out`."""
    script_path = Path(script)
    out_path = Path(out)
    _check_arguments(script_path, out_path, options)
    label = model_label(script_path, out_path)

    def run_framework(folder: Path, steps: int, warmup: int) -> None:
        run_options = dataclasses.replace(options, steps=steps, warmup=warmup)
        command = runner_command(script_path, folder, run_options, label)
        with recording_noise(folder):
            run_runner(command, script=script_path, framework="torch", timeout_s=options.timeout_s)
        check_reference_trace(folder, out_path)

    return capture_staged(IREE_PLAN, options, run_framework, script=script_path, out=out_path)


def level_failures(bundle: RunBundle) -> list[str]:
    """One line per IR level the capture could not produce, and per decomposition fallback:
    the stage that failed, the op (FX node and source) and what the capture did instead."""
    options = bundle.manifest().options
    lines = []
    decomposition = options.get("decomposition")
    if isinstance(decomposition, dict) and isinstance(decomposition.get("failure"), dict):
        failure = decomposition["failure"]
        kept = decomposition.get("kept_whole") or []
        instead = (
            f"kept {', '.join(kept)} whole" if kept else f"used table {decomposition.get('table')}"
        )
        lines.append(
            f"torch's {failure.get('stage')} failed at {failure.get('op') or 'an op'} "
            f"(FX node {failure.get('node') or '?'}: {failure.get('error')}); {instead}"
        )
    for failed in options.get("failed_levels") or []:
        if isinstance(failed, dict):
            where = ", ".join(
                part
                for part in (
                    failed.get("node") and f"FX node {failed['node']}",
                    failed.get("source") and f"at {failed['source']}",
                )
                if part
            )
            if not (failed.get("op") or where):  # no op to name: the error says it all
                lines.append(
                    f"level {failed.get('level')} not captured: {str(failed.get('error'))[:200]}"
                )
                continue
            lines.append(
                f"level {failed.get('level')} not captured: {failed.get('stage')} failed on "
                f"{failed.get('op') or 'an op'}{f' ({where})' if where else ''}: "
                f"{str(failed.get('error'))[:200]}"
            )
    return lines


def check_reference_trace(folder: Path, out: Path) -> None:
    """Refuse a bundle whose call-stack reference trace irprof cannot read (the staging check
    reads the primary trace only): every later `annotate` would fail on it."""
    from irprof.readers import read_trace  # readers pull in numpy and the protobuf schema

    bundle = RunBundle(folder)
    name = bundle.manifest().options.get("reference_trace")
    if not isinstance(name, str):
        return
    try:
        read_trace(bundle.member(name, what="call-stack reference trace"))
    except IrprofError as exc:
        raise CaptureError(
            f"{out}: the call-stack reference step wrote a trace irprof cannot read ({exc}); "
            "nothing was written, capture again"
        ) from exc


def _check_arguments(script: Path, out: Path, options: TorchCaptureOptions) -> None:
    """Refuse bad arguments before starting a child process."""
    check_capture_arguments(script, out, steps=options.steps, warmup=options.warmup)
    if options.threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {options.threads})")
    unknown = [level for level in options.levels if level not in LEVELS]
    if unknown or "torch" not in options.levels:
        raise UsageError(f"--levels {','.join(options.levels)}: expected 'torch' or 'torch,linalg'")
    if options.decompose not in DECOMPOSITIONS:
        raise UsageError(f"--decompose {options.decompose!r}: expected default or none")
    IREE_PLAN.check(options.backend)
    if options.mode not in MODES:
        raise UsageError(f"--mode {options.mode!r}: expected infer or train")
    if options.mode == "train" and options.backend != IREE_PLAN.native:
        raise UsageError(
            f"--mode train profiles eager PyTorch only; --backend {options.backend} compiles "
            "the forward program (use --backend torch)"
        )


def runner_command(
    script: Path, staging: Path, options: TorchCaptureOptions, label: str
) -> list[str]:
    """The child's command line (the current interpreter, so the same environment)."""
    return [
        sys.executable,
        "-m",
        RUNNER_MODULE,
        str(script.resolve()),
        str(staging),
        "--entry",
        options.entry,
        "--steps",
        str(options.steps),
        "--warmup",
        str(options.warmup),
        "--levels",
        ",".join(options.levels),
        "--decompose",
        options.decompose,
        "--threads",
        str(options.threads),
        "--mode",
        options.mode,
        "--model-label",
        label,
    ]
