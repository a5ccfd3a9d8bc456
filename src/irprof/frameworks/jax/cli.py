"""`irprof capture jax SCRIPT.py -o RUN`: JAX function -> run bundle (StableHLO, HLO, XPlane)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.capture.describe import describe_capture
from irprof.capture.threads import default_threads
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax


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
    backend: Annotated[
        str,
        typer.Option(
            help="xla: XLA:CPU under jax.profiler; iree: the same StableHLO compiled and "
            "profiled by IREE llvm-cpu (RUN is an IREE bundle); both: XLA in RUN, IREE in RUN/iree."
        ),
    ] = "xla",
    mode: Annotated[
        str,
        typer.Option(
            help="infer | train: one step of jax.value_and_grad(loss) + SGD, the entry "
            "called with mode='train' returning (loss_fn, (params, *batch))."
        ),
    ] = "infer",
    threads: Annotated[
        int | None,
        typer.Option(
            help="XLA:CPU threads while profiling (the XLA backend) [default: 1, or "
            "IRPROF_CAPTURE_THREADS]."
        ),
    ] = None,
) -> None:
    """Lower, compile and profile a jitted JAX function (XLA:CPU and/or IREE) into a run bundle."""
    options = JaxCaptureOptions(
        entry=entry,
        steps=steps,
        warmup=warmup,
        backend=backend,
        mode=mode,
        threads=default_threads() if threads is None else threads,
    )
    bundle = capture_jax(script, out, options)
    typer.echo(describe_capture(bundle, side_files="ir/hlo.txt"))


def register(capture_app: typer.Typer) -> None:
    """Add `capture jax`."""
    capture_app.command("jax")(jax_command)
