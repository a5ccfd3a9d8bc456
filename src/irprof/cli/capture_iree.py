"""`irprof capture iree MODEL.mlir -o RUN`: IREE llvm-cpu compile + per-dispatch HAL profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.bundle import RunBundle
from irprof.capture.iree import IreeCaptureOptions, capture_iree


def iree_command(
    model: Annotated[
        Path,
        typer.Argument(
            metavar="MODEL.mlir",
            help="MLIR module IREE can compile (StableHLO, torch, TOSA or linalg input).",
        ),
    ],
    out: Annotated[Path, typer.Option("-o", "--out", metavar="RUN", help="Run bundle to write.")],
    function: Annotated[str, typer.Option(help="Public function to run.")] = "main",
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", help="IREE input spec, once per argument (e.g. 4x8xf32=1)."),
    ] = None,
    inputs_npz: Annotated[
        Path | None, typer.Option("--inputs", help=".npz with one array per argument, in order.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random default inputs.")] = 0,
    steps: Annotated[int, typer.Option(help="Profiled runs.")] = 5,
    warmup: Annotated[int, typer.Option(help="Warm-up runs (same process, left out).")] = 2,
) -> None:
    """Compile an MLIR module with IREE for this CPU and profile every dispatch into a bundle."""
    options = IreeCaptureOptions(
        function=function,
        steps=steps,
        warmup=warmup,
        inputs=tuple(inputs or ()),
        inputs_npz=str(inputs_npz) if inputs_npz is not None else None,
        seed=seed,
    )
    typer.echo(describe_capture(capture_iree(model, out, options)))


def describe_capture(bundle: RunBundle, side_files: str = "") -> str:
    """One line per bundle written: RUN, and RUN/iree when the capture wrote one beside it."""
    manifest = bundle.manifest()
    if manifest.framework == "iree":
        sources = manifest.options.get("executable_sources", [])
        extra = f"{len(sources) if isinstance(sources, list) else 0} executable sources"
        unit = "runs"
    else:
        extra, unit = side_files, "steps"
    lines = [
        f"wrote {bundle.root}: levels {', '.join(manifest.ir_levels)}"
        + (f" (+ {extra})" if extra else "")
        + f", {manifest.steps} profiled {unit}, trace {', '.join(manifest.trace_files)}"
    ]
    nested = manifest.options.get("iree_bundle")
    if isinstance(nested, str):
        lines.append(describe_capture(RunBundle(bundle.root / nested)))
    return "\n".join(lines)


def register(capture_app: typer.Typer) -> None:
    """Add `capture iree`."""
    capture_app.command("iree")(iree_command)
