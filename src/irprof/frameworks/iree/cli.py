"""`irprof capture iree MODEL.mlir -o RUN`: IREE llvm-cpu compile + per-dispatch HAL profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.capture.describe import describe_capture
from irprof.frameworks.iree.capture import IreeCaptureOptions, capture_iree


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


def register(capture_app: typer.Typer) -> None:
    """Add `capture iree`."""
    capture_app.command("iree")(iree_command)
