"""`irprof capture torch SCRIPT.py -o RUN`: PyTorch model -> run bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.capture.describe import describe_capture
from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch, level_failures


def torch_command(
    script: Annotated[
        Path,
        typer.Argument(
            metavar="SCRIPT.py",
            help="Python file whose entry returns (nn.Module, inputs) or a dict (see --mode).",
        ),
    ],
    out: Annotated[Path, typer.Option("-o", "--out", metavar="RUN", help="Run bundle to write.")],
    entry: Annotated[str, typer.Option(help="Entry function in the script.")] = "irprof_model",
    steps: Annotated[int, typer.Option(help="Profiled steps.")] = 5,
    warmup: Annotated[int, typer.Option(help="Unprofiled warm-up steps.")] = 2,
    levels: Annotated[str, typer.Option(help="IR levels: torch or torch,linalg.")] = (
        "torch,linalg"
    ),
    decompose: Annotated[
        str, typer.Option(help="default: torch's core ATen decompositions; none: keep ops whole.")
    ] = "default",
    threads: Annotated[int, typer.Option(help="torch intra-op threads while profiling.")] = 1,
    mode: Annotated[
        str,
        typer.Option(
            help="infer: forward passes; train: forward + loss, backward and optimizer step "
            "(the entry returns a dict with model, inputs, loss, optimizer, optional targets)."
        ),
    ] = "infer",
    backend: Annotated[
        str,
        typer.Option(
            help="torch: eager PyTorch under torch.profiler; iree: ir/torch.mlir compiled and "
            "profiled by IREE llvm-cpu (RUN is an IREE bundle); both: torch in RUN, IREE in "
            "RUN/iree."
        ),
    ] = "torch",
) -> None:
    """Export, import (FX importer), lower and profile a PyTorch model into a run bundle."""
    options = TorchCaptureOptions(
        entry=entry,
        steps=steps,
        warmup=warmup,
        levels=tuple(level.strip() for level in levels.split(",") if level.strip()),
        decompose=decompose,
        threads=threads,
        backend=backend,
        mode=mode,
    )
    bundle = capture_torch(script, out, options)
    typer.echo(describe_capture(bundle))
    if bundle.manifest().framework == "torch":
        for line in level_failures(bundle):
            typer.echo(line)


def register(capture_app: typer.Typer) -> None:
    """Add `capture torch`."""
    capture_app.command("torch")(torch_command)
