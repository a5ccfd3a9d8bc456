"""`irprof sql SOURCE "SELECT ..."`: DuckDB over traces, rank datasets and run bundles.

SOURCE is a trace file, an irprof Parquet trace, a rank dataset (`trace convert DIR -o D/`), a
directory of rank traces (converted in parallel first) or a run bundle. The views are described
in `analyses/sql_views.py` and in the README's "SQL, big traces and many ranks" section.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from irprof.analyses.rank_cluster import ClusterOptions
from irprof.analyses.rank_dataset import is_rank_dataset
from irprof.analyses.ranks import rank_trace_files
from irprof.analyses.sql_views import open_sql
from irprof.cli.outputs import check_outputs
from irprof.cli.trace_cmd import (
    PROGRESS_COLUMNS,
    DatasetOption,
    FormatOption,
    SchedulerOption,
    WorkersOption,
    check_format,
    print_missing,
    raise_failures,
)
from irprof.errors import UsageError
from irprof.renderers.sql_table import sql_rich_table

HELP = """Run an SQL query (DuckDB) over a trace, a Parquet trace, a rank dataset, a dir of rank
traces or a run bundle. Views: events(rank, row, ts_ns, dur_ns, end_ns, track, process, thread,
pid, tid, name, kind, args), tracks(rank, track, process, thread, pid, tid), flows(rank, flow_id,
src, dst: event rows); run bundles also: ops(level, op, location, name, source, count, total_ns,
mean_ns, share, estimated, group fields) and opprofile (every opprofile.json field). Queries
run sandboxed: no file reads or writes beyond the views, no ATTACH, no INSTALL (see
--allow-external)."""


def sql(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="SOURCE", help="Trace, .parquet, rank dataset, dir of rank traces or bundle."
        ),
    ],
    query: Annotated[str, typer.Argument(metavar="QUERY", help="SQL; '-' reads it from stdin.")],
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the whole result to .parquet or .csv."),
    ] = None,
    limit: Annotated[
        int, typer.Option("-n", "--limit", help="Rows shown in the table (not for --csv, -o).")
    ] = 50,
    format_name: FormatOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    dataset: DatasetOption = None,
    allow_external: Annotated[
        bool,
        typer.Option(
            "--allow-external",
            help="Full DuckDB: let the query read and write any file, ATTACH and INSTALL "
            "(off by default, so a shared query cannot touch your files).",
        ),
    ] = False,
) -> None:
    """Query traces with SQL; see the README for ten useful queries."""
    if limit < 1:
        raise UsageError(f"-n {limit}: must be at least 1")
    if as_csv and output is not None:
        raise UsageError("--csv and -o: pass one (-o out.csv writes CSV to a file)")
    check_format(format_name)
    check_outputs({"-o": output}, [source])
    if source.is_dir() and not is_rank_dataset(source):
        check_outputs({"--dataset": dataset}, rank_trace_files(source))
    cluster = ClusterOptions(scheduler, workers)
    cluster.check()
    text = sys.stdin.read() if query == "-" else query
    console = Console(highlight=False)
    with contextlib.ExitStack() as stack:
        progress = Progress(*PROGRESS_COLUMNS, console=Console(stderr=True), transient=True)
        stack.callback(progress.stop)
        task = progress.add_task("converting ranks", total=None)

        def on_progress(done: int, total: int) -> None:
            # Started at the first rank done, after the local cluster's workers were forked
            # from this process: no refresh thread may hold a lock at the fork.
            progress.start()
            progress.update(task, completed=done, total=total)

        session = stack.enter_context(
            open_sql(source, cluster=cluster, dataset=dataset, format=format_name,
                     on_progress=on_progress, allow_external=allow_external)
        )  # fmt: skip
        progress.stop()
        if output is not None:
            session.export(text, output)
            console.print(f"{output}: written ({session.description})", markup=False)
        elif as_csv:
            sys.stdout.write(session.query(text).csv_text())
        else:
            result = session.query(text, limit)
            console.print(sql_rich_table(result, title=session.description))
        print_missing(Console(stderr=True, highlight=False), session.missing)
    raise_failures(session.failures, session.ranks + len(session.failures))


def register(app: typer.Typer) -> None:
    """Add the `sql` command."""
    app.command("sql", no_args_is_help=True, help=HELP)(sql)
