"""`irprof trace convert|summary TRACE|DIR`: the event model from the command line.

A directory of rank traces is worked on in parallel on dask.distributed (a local cluster by
default, `--scheduler` for a running one, `--workers 0` for this process only): `convert` writes
a Parquet dataset partitioned by rank, `summary` converts into one (kept with `--dataset`) and
reads the per-rank table from it. A rank file that fails is named with its error after the
others' results, and the exit code is 2.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from irprof import api
from irprof.analyses.rank_cluster import ClusterOptions, Runner, open_runner
from irprof.analyses.rank_dataset import (
    TRACE_OUTPUT_SUFFIXES,
    RankDataset,
    RankFailure,
    convert_ranks,
    dataset_rank_table,
    is_rank_dataset,
    open_rank_dataset,
)
from irprof.analyses.ranks import DEFAULT_STRAGGLER_THRESHOLD, check_threshold, rank_trace_files
from irprof.cli.outputs import check_outputs
from irprof.cli.typer_app import command_group
from irprof.errors import IrprofError, UsageError
from irprof.readers import get_all_readers
from irprof.renderers.trace_summary_tables import rank_table, summary_tables

TraceArgument = Annotated[
    Path, typer.Argument(metavar="TRACE", help="Trace file (.xplane.pb, .json[.gz]) or its dir.")
]
FormatOption = Annotated[
    str | None,
    typer.Option("--format", help="Reader to use instead of detecting it from the content."),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="Rank dirs: run on this Dask scheduler (workers must see the same files).",
    ),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers", help="Rank dirs: local Dask workers (default: one per core; 0: no Dask)."
    ),
]
DatasetOption = Annotated[
    Path | None,
    typer.Option(
        "--dataset", help="Rank dirs: keep the Parquet dataset here (default: a temporary one)."
    ),
]


def check_format(name: str | None) -> None:
    """Refuse an unknown `--format`."""
    if name is not None and name not in get_all_readers():
        known = ", ".join(get_all_readers().names())
        raise UsageError(f"--format {name!r}: expected one of {known}")


PROGRESS_COLUMNS = (
    TextColumn("{task.description}"),
    BarColumn(),
    MofNCompleteColumn(),
    TimeElapsedColumn(),
)


@contextlib.contextmanager
def rank_progress(total: int, what: str) -> Iterator[Callable[[object], None]]:
    """A progress bar on stderr advanced as the scheduler reports each rank done (transient)."""
    with Progress(*PROGRESS_COLUMNS, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(what, total=total)
        yield lambda _outcome: progress.advance(task)


@contextlib.contextmanager
def lazy_progress(what: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr shown from the first `(done, total)` report (transient): it is
    not started before the work, so a local Dask cluster can still fork its workers."""
    progress: Progress | None = None
    task = None

    def report(done: int, total: int) -> None:
        nonlocal progress, task
        if progress is None:
            progress = Progress(*PROGRESS_COLUMNS, console=Console(stderr=True), transient=True)
            progress.start()
            task = progress.add_task(what, total=total)
        assert task is not None
        progress.update(task, completed=done, total=total)

    try:
        yield report
    finally:
        if progress is not None:
            progress.stop()


def raise_failures(failures: tuple[RankFailure, ...], total: int) -> None:
    """After the others' results: name every failed rank file with its error (exit 2)."""
    if failures:
        lines = "\n".join(
            f"  {failure.error}"
            if failure.error.startswith(failure.source)
            else f"  {failure.source}: {failure.error}"
            for failure in failures
        )
        raise IrprofError(f"{len(failures)} of {total} rank file(s) failed:\n{lines}")


def print_missing(console: Console, missing: tuple[RankFailure, ...]) -> None:
    """Warn about rank files an earlier conversion of a dataset could not read."""
    for failure in missing:
        text = f"not in the dataset: {failure.source}: {failure.error}"
        console.print(Text.assemble(("warning: ", "yellow"), text), soft_wrap=True)


def print_dataset(console: Console, dataset: RankDataset, description: str) -> None:
    """One line per converted rank."""
    console.print(f"{dataset.root}: {len(dataset.parts)} rank(s) {description}")
    for part in dataset.parts:
        console.print(
            f"  rank {part.rank}: {part.events:,} events, {part.flows:,} flows, "
            f"{part.seconds:.1f} s <- {part.source}",
            markup=False,
            soft_wrap=True,
        )


def convert_directory(
    sources: list[Path], output: Path, runner: Runner, format_name: str | None
) -> RankDataset:
    """Rank files into the dataset `output` on `runner`, with a progress bar."""
    if output.suffix in TRACE_OUTPUT_SUFFIXES:
        raise UsageError(
            f"-o {output}: {len(sources)} rank traces convert to a dataset folder, not one "
            "file; name a folder"
        )
    with rank_progress(len(sources), "converting ranks") as on_done:
        return convert_ranks(sources, output, runner, format_name, on_done=on_done)


def convert(
    trace_path: TraceArgument,
    output: Annotated[
        Path,
        typer.Option(
            "-o", "--output", help="events.json, events.parquet, or a folder: a rank dataset."
        ),
    ],
    format_name: FormatOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    in_memory: Annotated[
        bool, typer.Option("--in-memory", help="Read Chrome JSON whole instead of streaming it.")
    ] = False,
) -> None:
    """Convert a trace (Chrome JSON streamed in bounded memory) or a dir of rank traces (in
    parallel, to a Parquet dataset partitioned by rank) for every command and `irprof sql`."""
    check_format(format_name)
    ClusterOptions(scheduler, workers).check()
    check_outputs(
        {"-o": output}, rank_trace_files(trace_path) if trace_path.is_dir() else [trace_path]
    )
    with lazy_progress("converting ranks") as on_progress:
        done = api.convert_trace(
            trace_path,
            output,
            format=format_name,
            in_memory=in_memory,
            scheduler=scheduler,
            workers=workers,
            on_progress=on_progress,
        )
    if isinstance(done, RankDataset):
        print_dataset(Console(highlight=False), done, done.converted_by)
        raise_failures(done.failures, len(done.parts) + len(done.failures))
        return
    how = "streamed" if done.streamed else "read whole"
    Console(highlight=False).print(
        f"{output}: {done.events:,} events, {done.tracks} tracks, {done.flows} flows ({how})",
        markup=False,
    )


def summary(
    trace_path: Annotated[
        Path,
        typer.Argument(
            metavar="TRACE",
            help="Trace file or its dir; a dir of rank traces (or a rank dataset): per-rank table.",
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
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    dataset_dir: DatasetOption = None,
) -> None:
    """Events, device/stream time, top kernels and names; a dir of rank traces: per-rank table."""
    if limit < 1:
        raise UsageError(f"-n {limit}: must be at least 1")
    check_format(format_name)
    check_threshold(straggler_threshold)
    cluster = ClusterOptions(scheduler, workers)
    cluster.check()
    console = Console(highlight=False)
    is_dataset = trace_path.is_dir() and is_rank_dataset(trace_path)
    rank_files = rank_trace_files(trace_path) if trace_path.is_dir() and not is_dataset else []
    check_outputs({"--dataset": dataset_dir}, rank_files)
    if is_dataset or rank_files:
        total = len(rank_files) if rank_files else len(open_rank_dataset(trace_path).parts)
        with contextlib.ExitStack() as stack:
            runner = stack.enter_context(open_runner(cluster, total))
            if is_dataset:
                dataset = open_rank_dataset(trace_path)
            else:
                root = dataset_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
                dataset = convert_directory(rank_files, root, runner, format_name)
            with rank_progress(len(dataset.parts), "summarizing ranks") as on_done:
                ranks, failures = dataset_rank_table(dataset, runner, straggler_threshold, on_done)
        console.print(rank_table(ranks))
        # A dataset's recorded failures were reported when it was converted: a warning now.
        print_missing(console, dataset.failures if is_dataset else ())
        fresh = failures if is_dataset else (*dataset.failures, *failures)
        raise_failures(fresh, len(ranks.ranks) + len(fresh))
        return
    result = api.summarize_trace(trace_path, top=limit, format=format_name)
    for table in summary_tables(result, console.width):
        console.print(table)
    for warning in result.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), warning))


def register(app: typer.Typer) -> None:
    """Add the `trace` command group."""
    trace_app = command_group(
        "Read profiler traces: convert to events.json/Parquet/rank datasets, summarize."
    )
    trace_app.command("convert", no_args_is_help=True)(convert)
    trace_app.command("summary", no_args_is_help=True)(summary)
    app.add_typer(trace_app, name="trace")
