"""`irprof opt IN.mlir --pass-pipeline='builtin.module(...)' -o OUT.mlir`, like mlir-opt."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.cli.outputs import check_outputs
from irprof.errors import UsageError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module, write_module
from irprof.mlir.safe_parse import DEFAULT_LIMITS, ParseLimits, call_with_stack
from irprof.passes.pipeline import RunOptions, run_pipeline
from irprof.passes.registry import get_all_passes
from irprof.renderers.pass_table import pass_table

# Bounds on hostile or runaway MLIR input (see mlir/safe_parse.py); shared with `irprof graph`.
MaxNesting = Annotated[
    int,
    typer.Option(
        "--max-mlir-nesting",
        help="Refuse MLIR nested deeper than this (brackets, braces, parens, angles).",
    ),
]
MaxDigits = Annotated[
    int, typer.Option("--max-mlir-digits", help="Refuse number literals longer than this.")
]
MaxMegabytes = Annotated[
    int, typer.Option("--max-mlir-mb", help="Refuse MLIR files larger than this (MiB).")
]


def parse_limits(max_nesting: int, max_digits: int, max_megabytes: int) -> ParseLimits:
    """The loader's limits from the command-line values."""
    if min(max_nesting, max_digits, max_megabytes) < 1:
        raise UsageError("--max-mlir-nesting/--max-mlir-digits/--max-mlir-mb must be positive")
    return ParseLimits(
        max_nesting=max_nesting, max_digits=max_digits, max_bytes=max_megabytes * 2**20
    )


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
    max_nesting: MaxNesting = DEFAULT_LIMITS.max_nesting,
    max_digits: MaxDigits = DEFAULT_LIMITS.max_digits,
    max_megabytes: MaxMegabytes = DEFAULT_LIMITS.max_bytes // 2**20,
) -> None:
    """Run a pipeline of irprof and native MLIR passes on a module."""
    if list_passes:
        Console(highlight=False).print(pass_table(get_all_passes()))
        return
    if input_path is None:
        raise UsageError("irprof opt: missing IN.mlir (or use --list-passes)")
    check_outputs({"-o": output, "--print-ir-after-all": print_ir_after_all}, [input_path])
    limits = parse_limits(max_nesting, max_digits, max_megabytes)
    run = RunOptions(
        verify_each=verify_each, print_ir_after_all=print_ir_after_all, debug_info=debuginfo
    )
    # Printing, passes and freeing the module recurse per nesting level like the parser: run it
    # all on the stack sized for the nesting the loader allows (raised limits stay crash-free).
    call_with_stack(
        lambda: _opt_file(Path(input_path), pass_pipeline, run, output, generic, limits),
        limits.stack_bytes,
    )


def _opt_file(
    input_path: Path,
    pass_pipeline: str,
    run: RunOptions,
    output: Path | None,
    generic: bool,
    limits: ParseLimits,
) -> None:
    module = load_module(input_path, make_context(), limits=limits)
    if pass_pipeline.strip():
        run_pipeline(module, pass_pipeline, run)
    if output is None:
        sys.stdout.write(print_module(module, debug_info=run.debug_info, generic=generic))
    else:
        write_module(output, module, debug_info=run.debug_info, generic=generic)


def register(app: typer.Typer) -> None:
    """Add the `opt` command."""
    app.command("opt", no_args_is_help=True)(opt)
