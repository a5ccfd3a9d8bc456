"""`irprof graph ANNOTATED.mlir|RUN -o graph.svg|.dot|.graphml|.html`: the heat-coloured op
graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.annotated_level import require_annotated
from irprof.analyses.op_graph import OpGraphOptions
from irprof.api import op_graph, open_run
from irprof.cli.opt_cmd import MaxDigits, MaxMegabytes, MaxNesting, parse_limits
from irprof.cli.outputs import check_outputs
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic
from irprof.mlir.safe_parse import DEFAULT_LIMITS
from irprof.renderers.base import op_graph_renderer_for


def graph(
    mlir: Annotated[
        Path,
        typer.Argument(
            metavar="ANNOTATED.mlir|RUN",
            help="Annotated MLIR file (any, e.g. after `irprof opt`), or a run bundle.",
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="graph.svg|.dot|.graphml|.html")],
    level: Annotated[
        str | None,
        typer.Option("--level", help="A run's annotated level (default: the first annotated)."),
    ] = None,
    function: Annotated[str | None, typer.Option("--function", help="Function to draw.")] = None,
    expand: Annotated[
        list[str] | None, typer.Option("--expand", help="Scope to draw op by op (repeatable).")
    ] = None,
    max_nodes: Annotated[
        int, typer.Option("--max-nodes", help="Collapse scopes above this size.")
    ] = 300,
    group: Annotated[
        str, typer.Option("--group", help="Scope grouping: auto | always | never.")
    ] = "auto",
    max_nesting: MaxNesting = DEFAULT_LIMITS.max_nesting,
    max_digits: MaxDigits = DEFAULT_LIMITS.max_digits,
    max_megabytes: MaxMegabytes = DEFAULT_LIMITS.max_bytes // 2**20,
) -> None:
    """Draw the data-flow graph of one function, coloured by each op's share of time."""
    if group not in ("auto", "always", "never"):
        raise UsageError(f"--group {group!r}: expected auto|always|never")
    if mlir.is_dir():
        run = open_run(mlir)
        mlir = run.annotated_path(require_annotated(run, level))
    elif level is not None:
        raise UsageError(f"--level {level!r}: for a run bundle; {mlir} is one module already")
    if not mlir.is_file():
        raise UsageError(f"{mlir}: no such file")
    check_outputs({"-o": output}, [mlir])
    renderer = op_graph_renderer_for(output)
    options = OpGraphOptions(
        function=function,
        expand=tuple(expand or ()),
        grouping=group,  # type: ignore[arg-type]  # checked above
        max_nodes=max_nodes,
    )
    limits = parse_limits(max_nesting, max_digits, max_megabytes)
    built = op_graph(mlir, options, limits)
    write_bytes_atomic(output, renderer.render(built))
    Console(highlight=False, stderr=True).print(
        f"@{built.function}: {built.op_count} ops -> {len(built.nodes)} nodes "
        f"({len(built.grouped_scopes)} collapsed scopes) -> {output}",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    """Add the `graph` command."""
    app.command("graph", no_args_is_help=True)(graph)
