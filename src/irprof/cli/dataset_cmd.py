"""`irprof dataset RUN... -o corpus/ [--level L]`: MLGO training logs of many annotated runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.api import mlgo_dataset
from irprof.cli.outputs import check_outputs
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic
from irprof.renderers.mlgo_log import RENDERER, dataset_index


def dataset(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", help="Annotated run bundles.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Corpus folder to write.")],
    level: Annotated[
        str | None, typer.Option("--level", help="IR level (default: every annotated level).")
    ] = None,
) -> None:
    """Write one MLGO TrainingLogger log per run (an observation per profiled op, its mean time
    as the score) and dataset.json naming the logs, the tensor specs and the ids."""
    if output.exists() and not output.is_dir():
        raise UsageError(f"{output}: exists and is not a folder")
    check_outputs({"-o": output}, runs)
    entries = mlgo_dataset(runs, level)
    # Everything is built before the first file is written.
    files = {entry.file: RENDERER.render(entry.log) for entry in entries}
    files["dataset.json"] = dataset_index(entries)
    for name, data in files.items():
        write_bytes_atomic(output / name, data)
    total = sum(entry.log.observation_count for entry in entries)
    Console(highlight=False, stderr=True).print(
        f"{len(entries)} logs, {total} observations -> {output}", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add the `dataset` command."""
    app.command("dataset", no_args_is_help=True)(dataset)
