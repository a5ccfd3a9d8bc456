"""`irprof capture iree`: compile an MLIR module with IREE for this CPU and profile its dispatches.

Design notes: docs/iree.md, "Module notes", `frameworks/iree/capture.py`.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from irprof.bundle import Manifest, RunBundle, file_fingerprint, fingerprint_files
from irprof.capture.noise import measured_noise
from irprof.capture.subprocess_run import check_capture_arguments, model_label, staged_bundle
from irprof.errors import CaptureError, MlirError, UsageError
from irprof.fileio import write_bytes_atomic
from irprof.frameworks.iree.inputs import (
    TensorSpec,
    function_signature,
    npz_inputs,
    random_inputs,
    source_level,
    write_inputs,
)
from irprof.frameworks.iree.shardings import drop_sharding_annotations
from irprof.frameworks.iree.tools import compile_module, profile_module, profile_projection
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.stamp_origin import stamp_origin

FLOW_LEVEL = "flow"
# Before outlining and deduplication: one dispatch region per launch site (`correlate/iree_sites`).
DISPATCH_REGIONS = "dispatch-creation"
PROFILE_NAME = "model.ireeprof"
# Projections kept in the bundle: file name -> iree-profile command and flags. The first holds
# one line per dispatch invocation; its profiled runs become the trace irprof reads.
ALL_DISPATCHES = "dispatch.all.jsonl"
PROFILED_DISPATCHES = "dispatch.jsonl"
PROJECTIONS = {
    ALL_DISPATCHES: ("dispatch", ("--dispatch_events",)),
    "executable.jsonl": ("executable", ()),
    "explain.jsonl": ("explain", ()),
}
MODEL_SUFFIXES = (".mlir",)


@dataclass(frozen=True)
class IreeCaptureOptions:
    """Function to run, its inputs (IREE specs, an .npz, or random), profiled and warm-up runs."""

    function: str = "main"
    steps: int = 5
    warmup: int = 2
    inputs: tuple[str, ...] = ()  # IREE input specs (`4x8xf32=1`, `@x.npy`), passed through
    inputs_npz: str | None = None
    seed: int = 0
    timeout_s: float = 600.0


def capture_iree(
    model: str | Path, out: str | Path, options: IreeCaptureOptions = IreeCaptureOptions()
) -> RunBundle:
    """Compile `model` with IREE (llvm-cpu), profile its dispatches, write the bundle `out`."""
    model_path = Path(model)
    out_path = Path(out)
    check_capture_arguments(
        model_path, out_path, steps=options.steps, warmup=options.warmup, what="MLIR file"
    )
    if model_path.suffix not in MODEL_SUFFIXES:
        raise UsageError(f"{model_path}: expected an MLIR text file (.mlir)")
    label = model_label(model_path, out_path)
    with staged_bundle(out_path) as staging:
        write_iree_bundle(model_path, staging, options, label=label, subject=str(model_path))
    return RunBundle(out_path)


def write_iree_bundle(
    source: Path,
    folder: Path,
    options: IreeCaptureOptions,
    *,
    label: str,
    subject: str,
    provenance: dict[str, str] | None = None,
) -> None:
    """Compile and profile the MLIR file `source`; write a whole IREE bundle into `folder`.

    `folder` is a staging directory (created when missing); the caller moves it into place.
    `subject` names the input in every error (the `.mlir`, or the script a framework lowered);
    `provenance` records, for a framework capture's `--backend iree`, where `source` came from.
    """
    if options.inputs and options.inputs_npz:
        raise UsageError("give inputs either as --input specs or as --inputs FILE.npz, not both")
    try:
        module = load_module(source, make_context())
    except MlirError as exc:
        if not provenance:
            raise
        # A framework's IR may sit in a temporary folder: name what the user knows instead.
        raise MlirError(f"{subject}: {str(exc).replace(str(source), source.name)}") from exc
    level = source_level(module)
    signature = function_signature(module, options.function, subject)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="irprof-iree-") as work:
        work_dir = Path(work)
        inputs = _input_specs(options, signature, subject, work_dir, provenance)
        (folder / "ir").mkdir()
        (folder / "trace").mkdir()
        shutil.copyfile(source, folder / "ir" / f"{level}.mlir")
        stamped = work_dir / "stamped.mlir"
        stamp_origin(module.operation, level)
        drop_sharding_annotations(module)  # after stamping: the ir/ level keeps them
        with stamped.open("w", encoding="utf-8") as handle:
            module.operation.print(file=handle, enable_debug_info=True)

        try:
            with measured_noise() as noise:
                _compile_and_profile(stamped, folder, work_dir, inputs, options, subject)
        except CaptureError as exc:
            # IREE names the staging and scratch folders, which are gone after a failure.
            message = str(exc).replace(f"{folder}{os.sep}", "").replace(f"{work_dir}{os.sep}", "")
            raise CaptureError(message) from exc
    warmup_until_ns, per_step, warning = _warmup_boundary(
        folder / "trace" / ALL_DISPATCHES, options.warmup, options.steps
    )
    _write_profiled_runs(
        folder / "trace" / ALL_DISPATCHES, folder / "trace" / PROFILED_DISPATCHES, warmup_until_ns
    )
    sources = sorted((folder / "executables").glob("*.mlir"))
    manifest = Manifest(
        framework="iree",
        model=label,
        entry=options.function,
        steps=options.steps,
        device="local-task:llvm-cpu (host)",
        versions=_versions(),
        ir_levels=(level, FLOW_LEVEL),
        trace_files=(
            f"trace/{PROFILED_DISPATCHES}",
            *(f"trace/{name}" for name in PROJECTIONS),
            f"trace/{PROFILE_NAME}",
        ),
        options={
            "warmup": options.warmup,
            "source_level": level,
            "origin_level": level,
            "inputs": "given specs"
            if options.inputs
            else ("npz" if options.inputs_npz else f"random (seed {options.seed})"),
            "signature": [spec.render() for spec in signature],
            "warmup_until_ns": warmup_until_ns,
            "dispatches_per_step": per_step,
            "warmup_note": warning,
            "executable_sources": [f"executables/{path.name}" for path in sources],
            "dispatch_regions": f"ir/{DISPATCH_REGIONS}.mlir",
            "noise": noise,
            **({"compiled_from": provenance} if provenance else {}),
        },
    )
    bundle = RunBundle(folder)
    manifest = fingerprint_files(bundle, manifest)
    regions = f"ir/{DISPATCH_REGIONS}.mlir"  # not a level of its own: fingerprinted by name
    manifest = dataclasses.replace(
        manifest,
        fingerprints={**manifest.fingerprints, regions: file_fingerprint(folder / regions)},
    )
    bundle.write_manifest(manifest)


def _compile_and_profile(
    stamped: Path,
    folder: Path,
    work_dir: Path,
    inputs: list[str],
    options: IreeCaptureOptions,
    subject: str,
) -> None:
    """Flow and dispatch-creation IR, the .vmfb with its executable sources, the HAL profile
    of warm-up + profiled runs and its `iree-profile` projections."""
    timeout = options.timeout_s
    for phase in (FLOW_LEVEL, DISPATCH_REGIONS):
        compile_module(
            stamped,
            folder / "ir" / f"{phase}.mlir",
            subject=subject,
            phase=phase,
            sources_dir=None,
            timeout_s=timeout,
        )
    vmfb = work_dir / "module.vmfb"
    compile_module(
        stamped,
        vmfb,
        subject=subject,
        phase=None,
        sources_dir=folder / "executables",
        timeout_s=timeout,
    )
    profile = folder / "trace" / PROFILE_NAME
    profile_module(
        vmfb,
        profile,
        function=options.function,
        inputs=inputs,
        iterations=options.warmup + options.steps,
        subject=subject,
        timeout_s=timeout,
    )
    for name, (command, flags) in PROJECTIONS.items():
        text = profile_projection(profile, command, subject=subject, timeout_s=timeout, extra=flags)
        write_bytes_atomic(folder / "trace" / name, text.encode("utf-8"))


def _input_specs(
    options: IreeCaptureOptions,
    signature: list[TensorSpec],
    subject: str,
    work_dir: Path,
    provenance: dict[str, str] | None,
) -> list[str]:
    if options.inputs:
        return list(options.inputs)
    if options.inputs_npz is not None:
        npz = Path(options.inputs_npz)
        if not npz.is_file():
            raise UsageError(f"{npz}: no such .npz file")
        return write_inputs(npz_inputs(npz), work_dir)
    try:
        arrays = random_inputs(signature, subject, options.seed)
    except CaptureError as exc:
        if not provenance:
            raise
        level = provenance.get("level", "stablehlo")
        raise CaptureError(
            f"{str(exc).split('; give inputs')[0]}; --backend iree draws inputs from the "
            "signature: capture without it, then run `irprof capture iree "
            f"RUN/ir/{level}.mlir -o RUN.iree --input SPEC ...` with the example's shapes"
        ) from exc
    return write_inputs(arrays, work_dir, signature)


def _warmup_boundary(dispatches: Path, warmup: int, steps: int) -> tuple[int, int, str]:
    """(start ns of the first profiled step's first dispatch, dispatches per step, note)."""
    from irprof.readers.iree_profile import read_iree_profile

    trace = read_iree_profile(dispatches)
    count = len(trace)
    if count == 0:
        raise CaptureError(f"{dispatches}: the profile holds no dispatch (did the function run?)")
    runs = warmup + steps
    if count % runs:
        # Uneven steps (data-dependent control flow): keep every dispatch, say so.
        return 0, 0, f"{count} dispatches over {runs} runs: warm-up not separated"
    per_step = count // runs
    starts = sorted(trace.ts_ns.tolist())
    return (int(starts[warmup * per_step]) if warmup else 0), per_step, ""


def _write_profiled_runs(all_lines: Path, out: Path, warmup_until_ns: int) -> None:
    """Copy the dispatch events that start at or after `warmup_until_ns`, line by line and byte
    for byte; the summary line (it counts the warm-up too) stays in the complete projection."""
    kept: list[bytes] = []
    for line in all_lines.read_bytes().splitlines(keepends=True):
        if not line.strip():
            continue
        record = orjson.loads(line)
        start = record.get("start_host_time_ns", record.get("start_time_ns"))
        if isinstance(start, int) and start >= warmup_until_ns:
            kept.append(line)
    write_bytes_atomic(out, b"".join(kept))


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("iree-base-compiler", "iree-base-runtime"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions
