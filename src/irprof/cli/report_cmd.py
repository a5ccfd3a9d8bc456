"""`irprof report RUN [-o RUN/report.html]`: the self-contained HTML report of a run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.api import open_run
from irprof.api import report as write_report
from irprof.run_annotate import bundle_framework


def report(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Annotated run bundle.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Output file (default RUN/report.html).")
    ] = None,
    max_nodes: Annotated[
        int, typer.Option("--max-nodes", help="Collapse graph scopes above this many ops.")
    ] = 300,
) -> None:
    """Write one static HTML file: summary, hotspots, rollups, op graph, DAG, coverage gaps."""
    bundle = open_run(run)
    bundle_framework(bundle)  # a bundle of an unknown stack is not a run irprof wrote
    if os.path.lexists(bundle.dag_path):  # the report embeds it: same rules as named files
        bundle.member("dag.json", what="event DAG")
    target = write_report(bundle, output, max_nodes=max_nodes)
    levels = ", ".join(bundle.annotated_levels())
    Console(highlight=False, stderr=True).print(
        f"report of {bundle.manifest().model} (levels {levels}) -> {target}", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add the `report` command."""
    app.command("report", no_args_is_help=True)(report)
