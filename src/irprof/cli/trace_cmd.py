"""`irprof trace convert|summary TRACE|DIR`: the event model from the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from irprof.analyses.ranks import DEFAULT_STRAGGLER_THRESHOLD, rank_trace_files, summarize_ranks
from irprof.analyses.trace_summary import summarize_trace
from irprof.errors import UsageError
from irprof.readers import get_all_readers, read_trace
from irprof.renderers.trace_summary_tables import rank_table, summary_tables
from irprof.trace.io import save_events_json, save_parquet
from irprof.trace.model import Trace

# Output suffix -> writer; the suffix of `-o` chooses the form.
CONVERTERS: dict[str, Callable[[Trace, Path], None]] = {
    ".json": save_events_json,
    ".parquet": save_parquet,
}

TraceArgument = Annotated[
    Path, typer.Argument(metavar="TRACE", help="Trace file (.xplane.pb, .json[.gz]) or its dir.")
]
FormatOption = Annotated[
    str | None,
    typer.Option("--format", help="Reader to use instead of detecting it from the content."),
]


def _check_format(name: str | None) -> None:
    if name is not None and name not in get_all_readers():
        known = ", ".join(get_all_readers().names())
        raise UsageError(f"--format {name!r}: expected one of {known}")


def convert(
    trace_path: TraceArgument,
    output: Annotated[Path, typer.Option("-o", "--output", help="events.json or events.parquet.")],
    format_name: FormatOption = None,
) -> None:
    """Convert a trace to irprof's unified events.json or Parquet (read back by every command)."""
    writer = CONVERTERS.get(output.suffix)
    if writer is None:
        raise UsageError(
            f"{output}: output must end in {' or '.join(CONVERTERS)} (the suffix picks the form)"
        )
    _check_format(format_name)
    trace = read_trace(trace_path, format_name)
    writer(trace, output)
    Console(highlight=False).print(
        f"{output}: {len(trace):,} events, {len(trace.tracks)} tracks, {len(trace.flows)} flows"
    )


def summary(
    trace_path: Annotated[
        Path,
        typer.Argument(
            metavar="TRACE",
            help="Trace file or its dir; a dir of several rank traces gives the per-rank table.",
        ),
    ],
    limit: Annotated[int, typer.Option("-n", "--limit", help="Rows per table.")] = 15,
    format_name: FormatOption = None,
    straggler_threshold: Annotated[
        float,
        typer.Option(
            "--straggler-threshold", help="Ranks: flag step times this fraction above the median."
        ),
    ] = DEFAULT_STRAGGLER_THRESHOLD,
) -> None:
    """Events, device/stream time, top kernels and names; a dir of rank traces: per-rank table."""
    if limit < 1:
        raise UsageError(f"-n {limit}: must be at least 1")
    _check_format(format_name)
    console = Console(highlight=False)
    rank_files = rank_trace_files(trace_path) if trace_path.is_dir() else []
    if rank_files:
        ranks = summarize_ranks(rank_files, straggler_threshold, format_name)
        console.print(rank_table(ranks))
        return
    result = summarize_trace(read_trace(trace_path, format_name), top=limit)
    for table in summary_tables(result):
        console.print(table)
    for warning in result.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), warning))


def register(app: typer.Typer) -> None:
    """Add the `trace` command group."""
    trace_app = typer.Typer(
        help="Read profiler traces: convert to events.json/Parquet, summarize.",
        no_args_is_help=True,
    )
    trace_app.command("convert", no_args_is_help=True)(convert)
    trace_app.command("summary", no_args_is_help=True)(summary)
    app.add_typer(trace_app, name="trace")
