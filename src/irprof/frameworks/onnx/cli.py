"""`irprof capture onnx MODEL.onnx -o RUN`: ONNX Runtime's profiler + the model as MLIR."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.capture.describe import describe_capture
from irprof.frameworks.onnx.capture import OnnxCaptureOptions, capture_onnx


def onnx_command(
    model: Annotated[
        Path,
        typer.Argument(
            metavar="MODEL.onnx",
            help="ONNX model, or a script whose entry returns an onnx.ModelProto.",
        ),
    ],
    out: Annotated[Path, typer.Option("-o", "--out", metavar="RUN", help="Run bundle to write.")],
    inputs_npz: Annotated[
        Path | None,
        typer.Option("--inputs", help=".npz with one array per graph input (by name or order)."),
    ] = None,
    dims: Annotated[
        list[str] | None,
        typer.Option("--dim", help="Value of a symbolic input dimension, NAME=VALUE (default 1)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random default inputs.")] = 0,
    steps: Annotated[int, typer.Option(help="Profiled runs.")] = 5,
    warmup: Annotated[int, typer.Option(help="Warm-up runs (same session, left out).")] = 2,
    threads: Annotated[int, typer.Option(help="ORT intra-op threads.")] = 1,
    optimization: Annotated[
        str, typer.Option(help="ORT graph optimization level: all, extended, basic, disabled.")
    ] = "all",
    entry: Annotated[
        str, typer.Option(help="For a .py model: the function returning the ModelProto.")
    ] = "irprof_model",
) -> None:
    """Profile an ONNX model under ONNX Runtime (CPU) and import it to MLIR into a bundle."""
    options = OnnxCaptureOptions(
        entry=entry,
        steps=steps,
        warmup=warmup,
        threads=threads,
        optimization=optimization,
        dims=tuple(dims or ()),
        inputs_npz=str(inputs_npz) if inputs_npz is not None else None,
        seed=seed,
    )
    typer.echo(describe_capture(capture_onnx(model, out, options)))


def register(capture_app: typer.Typer) -> None:
    """Add `capture onnx`."""
    capture_app.command("onnx")(onnx_command)
