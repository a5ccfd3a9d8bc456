"""`irprof opt IN.mlir --pass-pipeline='builtin.module(...)' -o OUT.mlir`, like mlir-opt."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from irprof.errors import UsageError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module, write_module
from irprof.passes.base import describe_options
from irprof.passes.pipeline import RunOptions, run_pipeline
from irprof.passes.registry import get_all_passes


def list_passes_table() -> Table:
    """The registered irprof passes with their options."""
    table = Table(title="irprof passes (mix with any native pass of the bindings)")
    table.add_column("pass")
    table.add_column("options")
    table.add_column("what it does")
    registry = get_all_passes()
    for name in registry.names():
        cls = registry.get(name)
        table.add_row(name, describe_options(cls), cls.summary)
    return table


def opt(
    input_path: Annotated[
        Path | None,
        typer.Argument(metavar="IN.mlir", help="MLIR text (.mlir) or bytecode (.mlirbc)."),
    ] = None,
    pass_pipeline: Annotated[
        str,
        typer.Option(
            "--pass-pipeline",
            help="MLIR textual pipeline, e.g. 'builtin.module(irprof-stamp-origin{level=l}, "
            "canonicalize, func.func(cse), irprof-annotate{profile=p.json})'.",
        ),
    ] = "",
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Output file (default stdout).")
    ] = None,
    list_passes: Annotated[
        bool, typer.Option("--list-passes", help="List irprof passes and exit.")
    ] = False,
    debuginfo: Annotated[
        bool, typer.Option("--mlir-print-debuginfo", help="Print locations (loc(...)).")
    ] = False,
    generic: Annotated[
        bool, typer.Option("--mlir-print-op-generic", help="Print the generic op form.")
    ] = False,
    print_ir_after_all: Annotated[
        Path | None,
        typer.Option("--print-ir-after-all", metavar="DIR", help="Write the IR after every pass."),
    ] = None,
    verify_each: Annotated[
        bool, typer.Option("--verify-each", help="Run the verifier after every pass.")
    ] = False,
) -> None:
    """Run a pipeline of irprof and native MLIR passes on a module."""
    if list_passes:
        Console(highlight=False).print(list_passes_table())
        return
    if input_path is None:
        raise UsageError("irprof opt: missing IN.mlir (or use --list-passes)")
    module = load_module(Path(input_path), make_context())
    if pass_pipeline.strip():
        run_pipeline(
            module,
            pass_pipeline,
            RunOptions(
                verify_each=verify_each,
                print_ir_after_all=print_ir_after_all,
                debug_info=debuginfo,
            ),
        )
    if output is None:
        sys.stdout.write(print_module(module, debug_info=debuginfo, generic=generic))
    else:
        write_module(output, module, debug_info=debuginfo, generic=generic)


def register(app: typer.Typer) -> None:
    """Add the `opt` command."""
    app.command("opt", no_args_is_help=True)(opt)
