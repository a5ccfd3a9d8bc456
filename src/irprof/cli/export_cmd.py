"""`irprof export RUN --to FORMAT -o FILE`: formats are the export renderers' registry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.api import Run
from irprof.cli.outputs import check_outputs
from irprof.renderers.base import get_export_renderers


def export(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Annotated run bundle.")],
    to: Annotated[
        str,
        typer.Option("--to", help=f"One of: {' | '.join(get_export_renderers().in_order())}."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Output file.")],
    level: Annotated[
        str | None,
        typer.Option("--level", help="IR level (model-explorer: default first; traces: all)."),
    ] = None,
) -> None:
    """Export a run: Perfetto (.pftrace), Chrome JSON, Model Explorer node data, MLGO log."""
    check_outputs({"-o": output}, [run])
    Run(run).export(to, output, level)
    Console(highlight=False, stderr=True).print(f"{to} export -> {output}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the `export` command."""
    app.command("export", no_args_is_help=True)(export)
