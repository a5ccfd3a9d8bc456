"""`irprof graph ANNOTATED.mlir -o graph.svg|.dot|.graphml|.html`: the heat-coloured op graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.op_graph import OpGraph, OpGraphOptions, build_op_graph
from irprof.analyses.profiled_ops import profiled_ops_of
from irprof.cli.opt_cmd import MaxDigits, MaxMegabytes, MaxNesting, parse_limits
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.safe_parse import DEFAULT_LIMITS, ParseLimits, call_with_stack
from irprof.renderers.base import op_graph_renderer_for


def graph(
    mlir: Annotated[Path, typer.Argument(metavar="ANNOTATED.mlir", help="Annotated MLIR file.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="graph.svg|.dot|.graphml|.html")],
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
    if not mlir.is_file():
        raise UsageError(f"{mlir}: no such file")
    renderer = op_graph_renderer_for(output)
    limits = parse_limits(max_nesting, max_digits, max_megabytes)
    options = OpGraphOptions(
        function=function,
        expand=tuple(expand or ()),
        grouping=group,  # type: ignore[arg-type]  # checked above
        max_nodes=max_nodes,
    )
    # Walking and freeing the module recurse per nesting level: stay on the parse-sized stack.
    op_graph = call_with_stack(lambda: _graph_of(mlir, options, limits), limits.stack_bytes)
    write_bytes_atomic(output, renderer.render(op_graph))
    Console(highlight=False, stderr=True).print(
        f"@{op_graph.function}: {op_graph.op_count} ops -> {len(op_graph.nodes)} nodes "
        f"({len(op_graph.grouped_scopes)} collapsed scopes) -> {output}",
        markup=False,
    )


def _graph_of(mlir: Path, options: OpGraphOptions, limits: ParseLimits) -> OpGraph:
    module = load_module(mlir, make_context(), limits=limits)
    return build_op_graph(module, profiled_ops_of(module, path=str(mlir)), options)


def register(app: typer.Typer) -> None:
    """Add the `graph` command."""
    app.command("graph", no_args_is_help=True)(graph)
