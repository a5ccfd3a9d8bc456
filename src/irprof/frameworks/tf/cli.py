"""`irprof capture tf SCRIPT.py -o RUN`: TensorFlow model -> run bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from irprof.capture.threads import default_threads
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf, level_failures


def tf_command(
    script: Annotated[
        Path,
        typer.Argument(
            metavar="SCRIPT.py",
            help="Python file whose entry returns (tf.function or Keras model, inputs).",
        ),
    ],
    out: Annotated[Path, typer.Option("-o", "--out", metavar="RUN", help="Run bundle to write.")],
    entry: Annotated[
        str, typer.Option(help="Entry function in the script; called with mode=MODE.")
    ] = "irprof_model",
    steps: Annotated[int, typer.Option(help="Profiled steps.")] = 5,
    warmup: Annotated[int, typer.Option(help="Unprofiled warm-up steps.")] = 2,
    host_level: Annotated[
        int,
        typer.Option(
            help="Host tracer level 1-3 of the untimed reference steps (3: cheap kernels and "
            "shapes); timed steps record at most level 2, the profiler's default."
        ),
    ] = 3,
    python_level: Annotated[
        int, typer.Option(help="Python tracer level 0|1 of the untimed reference steps.")
    ] = 0,
    mode: Annotated[
        str,
        typer.Option(
            help="infer | train (one optimizer step) | fit | predict (a Keras model's own "
            "model.fit / model.predict per step, XLA as Keras chooses).",
        ),
    ] = "infer",
    post_grappler: Annotated[
        bool, typer.Option("--post-grappler", help="Also dump the graph after grappler.")
    ] = False,
    onednn: Annotated[
        str, typer.Option(help="on | off | default: TF_ENABLE_ONEDNN_OPTS for the run.")
    ] = "default",
    eager: Annotated[
        bool, typer.Option("--eager", help="Run op by op (no node names in the trace).")
    ] = False,
    reference_time: Annotated[
        bool,
        typer.Option(
            "--reference-time",
            help="Also give ops time from the untimed reference steps (kernels the timed steps "
            "did not record); listed as reference_ns in coverage.",
        ),
    ] = False,
    threads: Annotated[
        int | None,
        typer.Option(
            help="TensorFlow intra-op threads while profiling (inter-op: 1) [default: 1, or "
            "IRPROF_CAPTURE_THREADS]."
        ),
    ] = None,
) -> None:
    """Trace, dump TF-dialect MLIR and profile a TensorFlow model into a run bundle."""
    options = TfCaptureOptions(
        entry=entry,
        mode=mode,
        steps=steps,
        warmup=warmup,
        host_level=host_level,
        python_level=python_level,
        post_grappler=post_grappler,
        onednn=onednn,
        eager=eager,
        reference_time=reference_time,
        threads=default_threads() if threads is None else threads,
    )
    bundle = capture_tf(script, out, options)
    manifest = bundle.manifest()
    typer.echo(
        f"wrote {bundle.root}: levels {', '.join(manifest.ir_levels)}, "
        f"{manifest.steps} profiled steps, trace {', '.join(manifest.trace_files)}"
    )
    for line in level_failures(bundle):
        typer.echo(line)


def register(capture_app: typer.Typer) -> None:
    """Add `capture tf`."""
    capture_app.command("tf")(tf_command)
