"""Child process of `irprof capture jax`; it and `jax_steps_runner` alone import jax.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/runner.py`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import jax
from jax._src import source_info_util  # private: the only way to mark a path non-user

from irprof.bundle import Manifest, RunBundle, fingerprint_files
from irprof.capture.entry import EntryError, add_entry_options, load_entry, package_versions
from irprof.capture.subprocess_run import ERROR_PREFIX  # the parent shows such lines as the error
from irprof.frameworks.jax.steps_runner import (
    MODES,
    StepSpec,
    call_entry,
    run_steps,
    stablehlo_text,
    step_spec,
)

USAGE_EXIT = 2
LEVEL = "stablehlo"
# Trace files the profiler writes under plugins/profile/<run>/ that the bundle keeps.
TRACE_SUFFIXES = (".xplane.pb", ".trace.json.gz", "perfetto_trace.json.gz")


class RunnerUsageError(Exception):
    """The script or its entry cannot be used; reported as one line to the parent."""


def model_from_entry(script: Path, entry: str, mode: str) -> StepSpec:
    """Import the script, call its entry for `mode` and check what it returned
    (`jax_steps_runner.step_spec`)."""
    where = f"{script}: {entry}()"
    try:
        factory = load_entry(
            script,
            entry,
            module_name=f"irprof_user_{script.stem}",
            hint=f"add `def {entry}(mode='infer'):` returning (function, example_args) or pass "
            "--entry NAME",
        )
        return step_spec(call_entry(factory, mode, where), mode, where)
    except EntryError as error:
        raise RunnerUsageError(str(error)) from error


def configure_source_paths(script_dir: Path) -> None:
    """Make locations name files relative to the script's folder and hide irprof's frames."""
    jax.config.update(  # type: ignore[no-untyped-call]
        "jax_hlo_source_file_canonicalization_regex", "^" + re.escape(f"{script_dir}{os.sep}")
    )
    irprof_root = Path(__file__).resolve().parents[2]
    source_info_util.register_exclusion(f"{irprof_root}{os.sep}")
    # Frozen stdlib modules (`<frozen runpy>` when run with -m) are not user code either.
    source_info_util.register_exclusion("<frozen ")


def collect_trace_files(logdir: Path, dest: Path) -> list[str]:
    """Copy the profiler's files from `logdir/plugins/profile/<run>/` to `dest`, untouched."""
    runs = sorted(p for p in (logdir / "plugins" / "profile").glob("*") if p.is_dir())
    if not runs:
        raise RuntimeError(f"jax.profiler.trace wrote no profile under {logdir}")
    dest.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    for path in sorted(runs[-1].iterdir()):
        if path.name.endswith(TRACE_SUFFIXES):
            shutil.copyfile(path, dest / path.name)
            names.append(path.name)
    # The XPlane carries the HloProtos and program ids the correlator needs: list it first.
    names.sort(key=lambda name: (not name.endswith(".xplane.pb"), name))
    if not any(name.endswith(".xplane.pb") for name in names):
        raise RuntimeError(f"jax.profiler.trace wrote no .xplane.pb under {runs[-1]}")
    return names


def capture(
    script: Path,
    entry: str,
    steps: int,
    warmup: int,
    out: Path,
    model_label: str,
    mode: str,
    threads: int,
) -> None:
    """Lower, compile, warm up, time, profile and write the bundle into `out`."""
    script = script.resolve()
    configure_source_paths(script.parent)
    spec = model_from_entry(script, entry, mode)
    stablehlo, lowered = stablehlo_text(spec)
    compiled = lowered.compile()
    hlo_text = str(compiled.as_text())
    (out / "ir").mkdir(parents=True, exist_ok=True)
    (out / "ir" / f"{LEVEL}.mlir").write_text(stablehlo, encoding="utf-8")
    (out / "ir" / "hlo.txt").write_text(hlo_text, encoding="utf-8")

    # Run the compiled executable itself, so the profiled program is exactly the dumped HLO.
    with tempfile.TemporaryDirectory(prefix="irprof-jax-") as logdir:
        overhead = run_steps(compiled, spec, steps, warmup, Path(logdir))
        trace_names = collect_trace_files(Path(logdir), out / "trace")

    device = jax.devices()[0]
    training = {"learning_rate": spec.learning_rate} if spec.mode == "train" else {}
    polymorphic = (
        {"polymorphic_shapes": [None if s is None else str(s) for s in spec.polymorphic_shapes]}
        if spec.polymorphic_shapes is not None
        else {}
    )
    manifest = Manifest(
        framework="jax",
        model=model_label,
        entry=entry,
        steps=steps,
        device=f"{device.platform}:{device.device_kind}",
        versions=package_versions(
            {"jax": jax.__version__, "jaxlib": importlib.import_module("jaxlib").__version__}
        ),
        ir_levels=(LEVEL,),
        trace_files=tuple(f"trace/{name}" for name in trace_names),
        options={
            "warmup": warmup,
            "mode": spec.mode,
            "threads": threads,
            **training,
            **polymorphic,
            "hlo_text": "ir/hlo.txt",
            "hlo_module": compiled_module_name(hlo_text),
            "source_paths": "relative to the script's folder",
            "overhead": overhead,
        },
    )
    bundle = RunBundle(out)
    bundle.write_manifest(fingerprint_files(bundle, manifest))


def compiled_module_name(hlo_text: str) -> str:
    """`jit_f` from the first line `HloModule jit_f, ...` of the optimized HLO."""
    match = re.match(r"HloModule\s+([^\s,]+)", hlo_text)
    return match.group(1) if match else ""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Command line of the child (built by `irprof.frameworks.jax.capture`)."""
    parser = argparse.ArgumentParser(prog="irprof.frameworks.jax.runner")
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    # Where to write this interpreter's import roots, against which the parent makes the
    # bundle's file names portable (`frameworks/jax/paths.py`).
    parser.add_argument("--sys-path-out", type=Path, default=None)
    add_entry_options(parser, MODES)
    # XLA:CPU's threads; the parent sizes the pools through the environment before jax starts
    # (`frameworks/jax/capture.py`, THREADS_ENV), this records the number in the manifest.
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one capture; exit code 0 ok, 2 usage error (one-line message on stderr)."""
    options = parse_args(sys.argv[1:] if argv is None else argv)
    if options.sys_path_out is not None:
        options.sys_path_out.write_text(json.dumps(sys.path), encoding="utf-8")
    try:
        capture(
            options.script,
            options.entry,
            options.steps,
            options.warmup,
            options.out,
            options.model_label or str(options.script),
            options.mode,
            options.threads,
        )
    except RunnerUsageError as exc:
        print(f"{ERROR_PREFIX}{exc}", file=sys.stderr)
        return USAGE_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
