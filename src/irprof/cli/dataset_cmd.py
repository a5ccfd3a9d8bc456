"""`irprof dataset RUN... -o corpus/ [--level L]`: MLGO training logs of many annotated runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.mlgo_features import load_mlgo_features
from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic
from irprof.renderers.mlgo_log import RENDERER, DatasetEntry, dataset_index


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
    entries: list[DatasetEntry] = []
    for number, run in enumerate(runs):
        log = load_mlgo_features(RunBundle(run), level)
        if log.observation_count == 0:
            raise UsageError(f"{run}: no profiled op to log at level {level or 'any'}")
        # Two runs may share a folder name (a/run, b/run): the position keeps files apart.
        entries.append(DatasetEntry(str(run), f"{number:03d}-{run.name}{RENDERER.extension}", log))
    # Everything is built before the first file is written.
    files = {entry.file: RENDERER.render(entry.log) for entry in entries}
    files["dataset.json"] = dataset_index(entries)
    output.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_bytes_atomic(output / name, data)
    total = sum(entry.log.observation_count for entry in entries)
    Console(highlight=False, stderr=True).print(
        f"{len(entries)} logs, {total} observations -> {output}", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add the `dataset` command."""
    app.command("dataset", no_args_is_help=True)(dataset)
