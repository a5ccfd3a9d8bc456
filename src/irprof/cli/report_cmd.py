"""`irprof report RUN [-o RUN/report.html]`: the self-contained HTML report of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.op_graph import OpGraphOptions
from irprof.analyses.report_data import build_report_data
from irprof.bundle import RunBundle
from irprof.fileio import write_bytes_atomic
from irprof.renderers.report_html import RENDERER


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
    bundle = RunBundle(run)
    data = build_report_data(bundle, graph_options=OpGraphOptions(max_nodes=max_nodes))
    target = output or bundle.report_path
    write_bytes_atomic(target, RENDERER.render(data))
    levels = ", ".join(level.annotated.level for level in data.levels)
    Console(highlight=False, stderr=True).print(
        f"report of {data.manifest.model} (levels {levels}) -> {target}", markup=False
    )


def register(app: typer.Typer) -> None:
    """Add the `report` command."""
    app.command("report", no_args_is_help=True)(report)
