"""`irprof trace convert|summary TRACE`: the event model from the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from irprof.analyses.trace_summary import NameTotals, TraceSummary, summarize_trace
from irprof.errors import UsageError
from irprof.readers import get_all_readers, read_trace
from irprof.renderers.units import format_ns, format_share
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


def _name_table(title: str, rows: tuple[NameTotals, ...], span_ns: int) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("name", overflow="fold", max_width=60)
    table.add_column("kind")
    table.add_column("count", justify="right")
    table.add_column("total", justify="right")
    table.add_column("self", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("self % span", justify="right")
    for row in rows:
        table.add_row(
            row.name,
            row.kind,
            f"{row.count:,}",
            format_ns(row.total_ns),
            format_ns(row.self_ns),
            format_ns(row.mean_ns),
            format_share(row.self_ns / span_ns if span_ns else None),
        )
    return table


def summary_tables(summary: TraceSummary) -> list[Table]:
    """Rich tables of a trace summary: overview, top by total, top by self time."""
    overview = Table(title=f"{summary.source} ({summary.format})", title_justify="left")
    overview.add_column("events", justify="right")
    overview.add_column("tracks", justify="right")
    overview.add_column("flows", justify="right")
    overview.add_column("span", justify="right")
    overview.add_column("by kind")
    overview.add_row(
        f"{summary.events:,}",
        str(summary.tracks),
        f"{summary.flows:,}",
        format_ns(summary.span_ns),
        ", ".join(f"{kind} {count:,}" for kind, count in summary.events_by_kind.items()),
    )
    return [
        overview,
        _name_table("Top names by total time", summary.top_by_total, summary.span_ns),
        _name_table("Top names by self time", summary.top_by_self, summary.span_ns),
    ]


def summary(
    trace_path: TraceArgument,
    limit: Annotated[int, typer.Option("-n", "--limit", help="Rows per table.")] = 15,
    format_name: FormatOption = None,
) -> None:
    """Events, tracks, span and the names that take the most total and self time."""
    if limit < 1:
        raise UsageError(f"-n {limit}: must be at least 1")
    _check_format(format_name)
    result = summarize_trace(read_trace(trace_path, format_name), top=limit)
    console = Console(highlight=False)
    for table in summary_tables(result):
        console.print(table)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}")


def register(app: typer.Typer) -> None:
    """Add the `trace` command group."""
    trace_app = typer.Typer(
        help="Read profiler traces: convert to events.json/Parquet, summarize.",
        no_args_is_help=True,
    )
    trace_app.command("convert", no_args_is_help=True)(convert)
    trace_app.command("summary", no_args_is_help=True)(summary)
    app.add_typer(trace_app, name="trace")
