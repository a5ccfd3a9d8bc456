"""`irprof capture jax SCRIPT.py -o RUN`: JAX function -> run bundle (StableHLO, HLO, XPlane)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.capture.jax import JaxCaptureOptions, capture_jax


def jax_command(
    script: Annotated[
        Path,
        typer.Argument(
            metavar="SCRIPT.py",
            help="Python file whose entry returns (function to jax.jit, example args).",
        ),
    ],
    out: Annotated[Path, typer.Option("-o", "--out", metavar="RUN", help="Run bundle to write.")],
    entry: Annotated[str, typer.Option(help="Entry function in the script.")] = "irprof_model",
    steps: Annotated[int, typer.Option(help="Profiled steps.")] = 5,
    warmup: Annotated[int, typer.Option(help="Unprofiled warm-up steps.")] = 2,
) -> None:
    """Lower, compile and profile a jitted JAX function on XLA:CPU into a run bundle."""
    bundle = capture_jax(script, out, JaxCaptureOptions(entry=entry, steps=steps, warmup=warmup))
    manifest = bundle.manifest()
    typer.echo(
        f"wrote {bundle.root}: levels {', '.join(manifest.ir_levels)} (+ ir/hlo.txt), "
        f"{manifest.steps} profiled steps, trace {', '.join(manifest.trace_files)}"
    )


def register(capture_app: typer.Typer) -> None:
    """Add `capture jax`."""
    capture_app.command("jax")(jax_command)
