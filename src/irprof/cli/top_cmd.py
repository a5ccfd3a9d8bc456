"""`irprof top RUN`: the hottest ops of an annotated run in the terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.hotspots import GROUP_BYS
from irprof.analyses.machine_peaks import resolve_peaks
from irprof.analyses.step_stats import parse_stat, parse_time_basis
from irprof.api import open_run
from irprof.cli.outputs import check_outputs
from irprof.cli.peak_options import PeakGbpsOption, PeakGflopsOption, PeaksOption
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic
from irprof.renderers.hotspot_table import hotspot_rich_table, step_notes, top_title
from irprof.renderers.roofline_svg import RENDERER as ROOFLINE_SVG
from irprof.renderers.tabular_text import parse_text_format, tabular_csv, tabular_json


def top(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Annotated run bundle.")],
    limit: Annotated[int, typer.Option("-n", "--limit", help="Rows to show.")] = 20,
    by: Annotated[str, typer.Option("--by", help="Group rows by op | type | scope.")] = "op",
    stat: Annotated[
        str,
        typer.Option(
            "--stat",
            help="Rank by median | sum | min | mean of the per-step times (x steps); "
            "median: one stalled step cannot move it.",
        ),
    ] = "median",
    time: Annotated[
        str,
        typer.Option(
            "--time",
            help="oncpu: per-step times less each event's waits for a CPU, when the capture "
            "recorded the scheduler (else wall) | wall: as the profiler measured them.",
        ),
    ] = "oncpu",
    level: Annotated[
        str | None, typer.Option("--level", help="Annotated IR level (default: first).")
    ] = None,
    expand_groups: Annotated[
        bool,
        typer.Option(
            "--expand-groups", help="By op: list each op of a fused/decomposed event (estimated)."
        ),
    ] = False,
    roofline: Annotated[
        bool,
        typer.Option(
            "--roofline",
            help="Add FLOP/B, achieved GFLOP/s and GB/s, fraction of the roof and the bound.",
        ),
    ] = False,
    peaks: PeaksOption = None,
    peak_gflops: PeakGflopsOption = None,
    peak_gbps: PeakGbpsOption = None,
    svg: Annotated[
        Path | None, typer.Option("--svg", help="With --roofline: also write the plot as SVG.")
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="table (fits the terminal) | csv | json (every column, exact ns, for scripts).",
        ),
    ] = "table",
) -> None:
    """Show the ops (or op kinds, or name scopes) that took the most time."""
    if by not in GROUP_BYS:
        raise UsageError(f"--by {by!r}: expected one of {'|'.join(GROUP_BYS)}")
    if limit < 1:
        raise UsageError(f"-n {limit}: must be at least 1")
    ranking = parse_stat(stat)
    basis = parse_time_basis(time)
    shown = parse_text_format(output_format)
    if svg is not None and not roofline:
        raise UsageError("--svg draws the roofline: add --roofline")
    check_outputs({"--svg": svg}, [run])
    bundle = open_run(run)
    machine = resolve_peaks(peaks, peak_gflops, peak_gbps) if roofline else None
    view = bundle.top_view(
        level,
        by=by,
        limit=limit,
        expand_groups=expand_groups,
        roofline=roofline,
        peaks=machine,
        stat=ranking,
        time=basis,
    )
    if shown != "table":
        text = tabular_csv(view.table) if shown == "csv" else tabular_json(view.table).decode()
        sys.stdout.write(text)
        return
    console = Console(highlight=False)
    console.print(
        hotspot_rich_table(
            view.table,
            view.profiled,
            script=view.script,
            title=top_title(view, bundle.manifest()),
            roofline=view.roofline,
            width=console.width,
        )
    )
    notes = step_notes(view.table)
    if notes:
        Console(highlight=False).print(notes, markup=False)
    if svg is not None and view.roofline is not None:
        write_bytes_atomic(svg, ROOFLINE_SVG.render(view.roofline))
        Console(highlight=False, stderr=True).print(f"roofline -> {svg}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the `top` command."""
    app.command("top", no_args_is_help=True)(top)
