"""`irprof diff RUN_A RUN_B [--level L] [--json F] [-o F.mlir] [--fail-if-slower PCT]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console

from irprof.analyses.run_diff import DiffOptions
from irprof.api import Run
from irprof.cli.outputs import check_outputs
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic
from irprof.renderers.diff_mlir import DiffIR, DiffMlirRenderer
from irprof.renderers.diff_table import diff_renderables
from irprof.renderers.tabular_text import parse_text_format, tabular_csv, tabular_json


def diff(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="Annotated run (before).")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="Annotated run (after).")],
    level: Annotated[
        str | None,
        typer.Option("--level", help="IR level (default: the first annotated in both)."),
    ] = None,
    level_b: Annotated[
        str | None, typer.Option("--level-b", help="B's level when it differs from A's.")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the whole diff as JSON.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write B's annotated IR with irprof.diff attributes."),
    ] = None,
    fail_if_slower: Annotated[
        float | None,
        typer.Option(
            "--fail-if-slower",
            metavar="PCT",
            help="Exit 1 when B's time per step is significantly more than PCT% above A's.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("-n", "--limit", help="Rows per table.")] = 20,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Level of the bootstrap intervals.")
    ] = 0.95,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="table (fits the terminal) | csv | json: the per-op rows, every column, for "
            "scripts (--json writes the whole diff).",
        ),
    ] = "table",
) -> int:
    """Compare two runs of a model op by op, scope by scope and kind by kind, per step."""
    if limit < 1:
        raise UsageError("--limit must be >= 1")
    shown = parse_text_format(output_format)
    if fail_if_slower is not None and fail_if_slower < 0:
        raise UsageError("--fail-if-slower must be a percentage >= 0")
    check_outputs({"--json": json_out, "-o": output}, [run_a, run_b])
    bundle_b = Run(run_b)
    result = Run(run_a).diff(
        bundle_b, level, other_level=level_b, options=DiffOptions(confidence, resamples, seed)
    )
    # Everything is rendered before anything is written: no partial set of outputs.
    mlir_bytes = None
    if output is not None:
        path = bundle_b.annotated_path(result.level_b)
        mlir_bytes = DiffMlirRenderer().render(DiffIR(result, str(path)))
    json_bytes = orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2) if json_out else None
    if shown == "table":
        console = Console(highlight=False)
        console.print(diff_renderables(result, limit, console.width))
    else:
        sys.stdout.write(tabular_csv(result) if shown == "csv" else tabular_json(result).decode())
    err = Console(highlight=False, stderr=True)
    if json_out is not None and json_bytes is not None:
        write_bytes_atomic(json_out, json_bytes)
        err.print(f"diff JSON -> {json_out}", markup=False)
    if output is not None and mlir_bytes is not None:
        write_bytes_atomic(output, mlir_bytes)
        err.print(f"B's IR with irprof.diff -> {output}", markup=False)
    if fail_if_slower is not None and result.slower_by_more_than(fail_if_slower):
        pct = result.total.delta_pct or 0.0
        err.print(
            f"B is {pct:.1f}% slower per step than A (more than {fail_if_slower:g}%, and the "
            "interval of the delta excludes zero)",
            markup=False,
        )
        return 1
    return 0


def register(app: typer.Typer) -> None:
    """Add the `diff` command."""
    app.command("diff", no_args_is_help=True)(diff)
