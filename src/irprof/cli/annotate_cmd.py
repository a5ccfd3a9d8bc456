"""`irprof annotate RUN`: correlate one IR level of a run bundle and write annotated IR."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.api import Run
from irprof.errors import UsageError
from irprof.renderers.coverage_table import capture_overhead_text, coverage_report


def annotate(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Run bundle from irprof capture.")],
    level: Annotated[
        str | None, typer.Option("--level", help="IR level (default: the framework's).")
    ] = None,
    attr: Annotated[
        str, typer.Option("--attr", help="Attribute layout: irprof|ts-dur.")
    ] = "irprof",
    layout: Annotated[
        str,
        typer.Option(
            "--layout",
            help="per-op (a dictionary on every op) or compact (one table on the module, a row "
            "index per op: smaller and faster for large modules; --attr irprof only).",
        ),
    ] = "per-op",
    allow_low_coverage: Annotated[
        bool,
        typer.Option("--allow-low-coverage", help="Annotate even when almost nothing matched."),
    ] = False,
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-mismatch",
            help="Annotate even when the IR or trace differs from what was captured.",
        ),
    ] = False,
) -> None:
    """Join the run's trace to one IR level and write annotated IR, opprofile and coverage."""
    bundle = Run(run)  # not `open_run`: annotate first completes a commit that was interrupted
    outcome = bundle.annotate(
        level,
        attr=_layout_attr(attr, layout),
        allow_low_coverage=allow_low_coverage,
        allow_mismatch=allow_mismatch,
    )
    console = Console(highlight=False)
    console.print(coverage_report(outcome.coverage))
    # The times above were measured in the capture's timed steps: say what the profiler cost.
    overhead = capture_overhead_text(bundle.manifest().options)
    if overhead:
        console.print(overhead)
    console.print(
        f"annotated {outcome.ops_annotated} ops -> {outcome.annotated_path}\n"
        f"opprofile -> {outcome.opprofile_path}"
    )
    # Whether the steps were steady enough to rank ops by, as `top` and the report will say.
    noise = bundle.top_view(outcome.level, limit=0).table.noise
    for warning in noise.warnings if noise is not None else ():
        Console(highlight=False, stderr=True).print(f"warning: {warning}", markup=False)


def _layout_attr(attr: str, layout: str) -> str:
    """The annotation layout `--attr` and `--layout` choose together."""
    if layout not in ("per-op", "compact"):
        raise UsageError(f"--layout {layout!r}: expected per-op|compact")
    if layout == "per-op":
        return attr
    if attr not in ("irprof", "compact"):
        raise UsageError(
            f"--layout compact stores the irprof.profile fields, not --attr {attr}; "
            "drop --attr or use --layout per-op"
        )
    return "compact"


def register(app: typer.Typer) -> None:
    """Add the `annotate` command."""
    app.command("annotate", no_args_is_help=True)(annotate)
