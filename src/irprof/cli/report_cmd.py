"""`irprof report RUN [-o RUN/report.html]`: the self-contained HTML report of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.machine_peaks import resolve_peaks
from irprof.analyses.step_stats import parse_stat, parse_time_basis
from irprof.api import open_run
from irprof.cli.outputs import check_outputs
from irprof.cli.peak_options import PeakGbpsOption, PeakGflopsOption, PeaksOption


def report(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Annotated run bundle.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Output file (default RUN/report.html).")
    ] = None,
    max_nodes: Annotated[
        int, typer.Option("--max-nodes", help="Collapse graph scopes above this many ops.")
    ] = 300,
    against: Annotated[
        Path | None,
        typer.Option("--against", metavar="RUN_A", help="Add a diff tab: RUN_A -> RUN."),
    ] = None,
    peaks: PeaksOption = None,
    peak_gflops: PeakGflopsOption = None,
    peak_gbps: PeakGbpsOption = None,
    no_peaks: Annotated[
        bool, typer.Option("--no-peaks", help="Roofline without roofs: measure nothing.")
    ] = False,
    stat: Annotated[
        str,
        typer.Option(
            "--stat", help="Rank hotspots by median | sum | min | mean of the per-step times."
        ),
    ] = "median",
    time: Annotated[
        str,
        typer.Option(
            "--time",
            help="oncpu: per-step times less waits for a CPU, when the capture recorded the "
            "scheduler (else wall) | wall: as the profiler measured them.",
        ),
    ] = "oncpu",
) -> None:
    """Write one static HTML file: summary, hotspots, scopes, rollups, roofline, op graph, DAG,
    coverage gaps (and a diff with --against)."""
    ranking = parse_stat(stat)
    basis = parse_time_basis(time)
    inputs = [run, run / "dag.json", *([against] if against is not None else [])]
    check_outputs({"-o": output if output is not None else run / "report.html"}, inputs)
    bundle = open_run(run)
    other = open_run(against) if against is not None else None
    machine = None if no_peaks else resolve_peaks(peaks, peak_gflops, peak_gbps)
    target = bundle.report(
        output,
        max_nodes=max_nodes,
        against=other,
        peaks=machine,
        stat=ranking,
        time=basis,
    )
    levels = ", ".join(bundle.annotated_levels())
    console = Console(highlight=False, stderr=True)
    console.print(
        f"report of {bundle.manifest().model} (levels {levels}) -> {target}", markup=False
    )
    if machine is not None:
        console.print(f"roofline: {machine.describe()}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the `report` command."""
    app.command("report", no_args_is_help=True)(report)
