"""`irprof capture tf`: run a TensorFlow script under the profiler and write a run bundle.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/capture.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from irprof.bundle import Manifest, RunBundle, fingerprint_files
from irprof.capture.noise import measured_noise
from irprof.capture.sched_trace import SCHED_FILE
from irprof.capture.subprocess_run import (
    check_capture_arguments,
    model_label,
    run_runner,
    staged_bundle,
)
from irprof.capture.threads import default_threads
from irprof.errors import CaptureError, MlirError, UsageError
from irprof.fileio import write_text_atomic
from irprof.frameworks.tf.paths import make_paths_portable, own_frame_filter, portable_path_mapper
from irprof.frameworks.tf.xla_locations import borrow_tf_locations
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module

# Lowering order of the IR levels a TF bundle can hold.
TF_LEVELS = ("tf", "tf-standard", "post-grappler", "xla")
# Levels the capture may drop, saying why, when the MLIR bindings cannot read them: TensorFlow's
# XLA module can hold ops of dialects the bindings do not register (`mhlo.copy` in a Keras
# LSTM under `jit_compile`); the TF levels are the capture itself.
OPTIONAL_LEVELS = ("xla",)


def _failed_level(level: str, error: MlirError) -> dict[str, str]:
    """The manifest's record of a level not captured (as `capture torch` writes them)."""
    lines = [line.strip() for line in str(error).splitlines() if "error:" in line]
    detail = lines[0].split("error:", 1)[1].strip() if lines else str(error).splitlines()[0]
    return {"level": level, "stage": "XLA module import", "error": detail[:400]}


def level_failures(bundle: RunBundle) -> list[str]:
    """One line per IR level the capture could not produce."""
    return [
        f"level {failed.get('level')} not captured: {failed.get('stage')} failed: "
        f"{failed.get('error')}; the other levels are kept"
        for failed in bundle.manifest().options.get("failed_levels") or []
        if isinstance(failed, dict)
    ]


MODES = ("infer", "train", "fit", "predict")
RUNTIME_GRAPH_FILE = "tf_runtime_graph.json"
REFERENCE_DIR = "reference"  # the untimed reference window's files, under RUN/trace/
ONEDNN_ENV = {"on": "1", "off": "0"}


@dataclass(frozen=True)
class TfCaptureOptions:
    """What to run and how to profile it; field names mirror the CLI options."""

    entry: str = "irprof_model"
    # "infer" | "train": the entry's callable; "fit" | "predict": a Keras model's own `fit` /
    # `predict`, one call per step, with whatever XLA compilation Keras chooses
    mode: str = "infer"
    steps: int = 5
    warmup: int = 2
    # Levels of the untimed reference steps: 3 also records cheap kernels (_Arg, Reshape) and
    # input shapes. The timed steps record at most level 2 with no Python tracer, what the
    # framework's profiler records by default (`frameworks/tf/steps_runner.py`).
    host_level: int = 3  # 1-3
    python_level: int = 0  # 0 | 1
    post_grappler: bool = False
    onednn: str = "default"  # "on" | "off" | "default": sets TF_ENABLE_ONEDNN_OPTS in the child
    eager: bool = False  # run op by op (trace has no node names; correlation by type and order)
    # Give the kernels only the untimed reference steps recorded their time there (copied into
    # every timed step, listed as `reference_ns`); off, the reference steps give structure only.
    reference_time: bool = False
    # TensorFlow's intra-op threads while profiling; ops run one at a time (inter-op 1), so
    # each op's time is its own and, at 1, does not depend on how many cores are free.
    threads: int = field(default_factory=default_threads)  # 1 unless IRPROF_CAPTURE_THREADS
    timeout_s: float = 600.0

    def validate(self) -> None:
        """Raise UsageError on an option outside its range."""
        checks = (
            (self.mode in MODES, f"mode must be one of {', '.join(MODES)}, not {self.mode!r}"),
            (self.steps >= 1, f"steps must be at least 1, not {self.steps}"),
            (self.warmup >= 0, f"warmup must be 0 or more, not {self.warmup}"),
            (1 <= self.host_level <= 3, f"host level must be 1-3, not {self.host_level}"),
            (self.python_level in (0, 1), f"python level must be 0 or 1, not {self.python_level}"),
            (
                self.onednn in ("on", "off", "default"),
                f"onednn must be on, off or default, not {self.onednn!r}",
            ),
            (self.threads >= 1, f"--threads must be at least 1 (got {self.threads})"),
            (self.timeout_s > 0, "timeout must be positive"),
        )
        for ok, message in checks:
            if not ok:
                raise UsageError(message)


def capture_tf(
    script: str | Path,
    out: str | Path,
    options: TfCaptureOptions | None = None,
) -> RunBundle:
    """Profile `script`'s model and write the run bundle `out`; returns it. An earlier run
    bundle at `out` is replaced, any other non-empty directory refused (as every capture)."""
    opts = options or TfCaptureOptions()
    opts.validate()
    script_path = Path(script).resolve()
    out_path = Path(out).resolve()
    check_capture_arguments(script_path, out_path, steps=opts.steps, warmup=opts.warmup)
    with staged_bundle(out_path) as staging:
        work = staging / ".work"
        work.mkdir()
        with measured_noise(staging / SCHED_FILE) as noise:
            result = _run_child(script_path, work, opts)
        result["noise"] = noise
        _write_bundle(RunBundle(staging), script_path, out_path, work, result, opts)
        shutil.rmtree(work)
    return RunBundle(out_path)


def _run_child(script: Path, work: Path, opts: TfCaptureOptions) -> dict[str, Any]:
    """Run the TF runner in a child process; returns its result record."""
    dump_dir = work / "graph_dump"
    spec = {
        "script": str(script),
        "workdir": str(work),
        "graph_dump_dir": str(dump_dir),
        **asdict(opts),
    }
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ)
    # TensorFlow dumps every function graph it instantiates, up to the executed partitions.
    env["TF_DUMP_GRAPH_PREFIX"] = str(dump_dir)
    env["TF_DUMP_GRAPH_NAME_FILTER"] = "*"
    if opts.onednn in ONEDNN_ENV:
        env["TF_ENABLE_ONEDNN_OPTS"] = ONEDNN_ENV[opts.onednn]
    run_runner(
        [sys.executable, "-m", "irprof.frameworks.tf.runner", str(spec_path)],
        script=script,
        framework="TensorFlow",
        timeout_s=opts.timeout_s,
        cwd=script.parent,
        env=env,
    )
    result_path = work / "result.json"
    if not result_path.is_file():
        raise CaptureError(f"{script}: the TensorFlow run wrote no result")
    result: dict[str, Any] = json.loads(result_path.read_text())
    return result


def _write_bundle(
    bundle: RunBundle,
    script: Path,
    out_path: Path,
    work: Path,
    result: dict[str, Any],
    opts: TfCaptureOptions,
) -> None:
    """Portable IR, untouched trace files and the manifest, in `bundle.root`."""
    mapped = portable_path_mapper(str(script.parent), result["sys_path"])
    # irprof's child put its own frames (and `python -m`'s) under every traced op: not the model's.
    own_frames = own_frame_filter(
        [result["own_code_dir"], str(Path(__file__).resolve().parents[2])]
    )
    context = make_context()
    modules = {}
    failed_levels = []
    for level in (level for level in TF_LEVELS if level in result["ir_files"]):
        try:
            module = load_module(work / result["ir_files"][level], context)
        except MlirError as error:
            if level not in OPTIONAL_LEVELS:
                raise
            failed_levels.append(_failed_level(level, error))
            continue
        make_paths_portable(module, mapped, own_frames)
        modules[level] = module
    levels = tuple(modules)
    if "xla" in modules and "tf" in modules:
        borrow_tf_locations(modules["xla"], modules["tf"])
    for level, module in modules.items():
        write_text_atomic(bundle.ir_path(level), print_module(module, debug_info=True))
    shutil.copytree(work / result["logdir"], bundle.trace_dir)
    reference: dict[str, Any] = {}
    if result.get("reference_logdir"):
        target = bundle.trace_dir / REFERENCE_DIR
        shutil.copytree(work / result["reference_logdir"], target)
        (xspace,) = sorted(target.rglob("*.xplane.pb"))
        reference = {
            "reference_trace": str(xspace.relative_to(bundle.root)),
            "reference_steps": result["reference_steps"],
            "reference_tracer_options": result["reference_options"],
        }
    shutil.copyfile(work / "runtime_graph.json", bundle.root / RUNTIME_GRAPH_FILE)
    trace_files = tuple(
        sorted(str(p.relative_to(bundle.root)) for p in bundle.trace_dir.rglob("*") if p.is_file())
    )
    model = model_label(script, out_path)
    bundle.write_manifest(
        fingerprint_files(
            bundle,
            Manifest(
                framework="tf",
                model=model,
                entry=opts.entry,
                steps=opts.steps,
                device=result["device"],
                versions=result["versions"],
                ir_levels=levels,
                trace_files=trace_files,
                options={
                    **{k: v for k, v in asdict(opts).items() if k != "timeout_s"},
                    "function": result["function"],
                    "onednn_active": result["onednn"],
                    "recorded_tracer_options": result["recorded_options"],
                    **reference,
                    "step_marker": result["step_marker_name"],
                    "runtime_graph": RUNTIME_GRAPH_FILE,
                    "overhead": result["overhead"],
                    "noise": result["noise"],
                    "failed_levels": failed_levels,
                },
            ),
        )
    )
