"""Rank traces as one Parquet dataset partitioned by rank, built and summarized in parallel.

`convert_ranks` converts every rank file on a `Runner` (a Dask cluster or this process): each
task streams its file (`convert_trace_file`: Chrome JSON in bounded memory, other formats through
the in-memory reader) into a staging file and reports its rank, from `distributedInfo.rank` or
the file name as `ranks.rank_of` decides. The client then moves each file to
`ROOT/rank=<rank>/events.parquet` (hive partitioning, which DuckDB and Arrow read as a `rank`
column) and writes `ROOT/dataset.json`, the list of what the dataset holds: the ranks, their
source files, and the files that failed with their errors. A failing file never stops the others
and never leaves a partition; partitions of an earlier conversion into the same folder that this
one did not write are removed, so the folder always holds exactly one run's ranks.

`dataset_rank_table` reads the per-rank summaries (step time, device time split) from the
partitions, again in parallel, and judges stragglers with `ranks.rank_table`.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import stat
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec

from irprof.analyses.rank_cluster import Runner
from irprof.analyses.ranks import RankTable, RankTime, rank_from_metadata, rank_table, rank_time
from irprof.errors import IrprofError, UsageError
from irprof.fileio import write_bytes_atomic
from irprof.progress import stage
from irprof.readers import SNIFF_BYTES, detect_formats, read_trace, resolve_trace_file
from irprof.trace.io import load_parquet, save_events_json, save_parquet

DATASET_FILE = "dataset.json"
DATASET_FORMAT = "irprof.rank-dataset"
DATASET_VERSION = 1
PARTITION_FILE = "events.parquet"


@dataclass(frozen=True)
class ConvertedTrace:
    """What one conversion wrote."""

    source: str
    output: str
    events: int
    tracks: int
    flows: int
    warnings: tuple[str, ...]
    metadata: dict[str, Any]
    streamed: bool  # True: bounded memory (Chrome JSON to Parquet); False: the whole trace read


def _is_chrome(path: Path, format: str | None) -> bool:
    """Whether `path` is Chrome JSON, from its first decompressed bytes (or `format`)."""
    if format is not None:
        return format == "chrome"
    import gzip

    with path.open("rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        handle: Any = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
        try:
            head = handle.read(SNIFF_BYTES)
        except (OSError, EOFError):
            return False  # the reader reports what is wrong
    return bool(head.strip()) and detect_formats(path, head)[0].name == "chrome"


# `trace convert -o` by suffix: one file in irprof's formats; no suffix names a dataset folder.
TRACE_OUTPUT_SUFFIXES = (".json", ".parquet")


def convert_trace_file(
    source: Path, output: Path, format: str | None = None, *, in_memory: bool = False
) -> ConvertedTrace:
    """Convert a trace to irprof Parquet (or events.json by suffix): Chrome JSON is streamed in
    bounded memory unless `in_memory`; other formats are read whole, then saved."""
    from irprof.readers.chrome.stream import stream_chrome_to_parquet

    path = resolve_trace_file(source)
    if output.suffix == ".parquet" and not in_memory and _is_chrome(path, format):
        with stage(f"streaming {path.name} to {output.name}"):
            done = stream_chrome_to_parquet(path, output)
        return ConvertedTrace(
            str(source), str(output), done.events, done.tracks, done.flows,
            done.warnings, done.metadata, streamed=True,
        )  # fmt: skip
    trace = read_trace(path, format)
    with stage(f"writing {output.name}"):
        (save_parquet if output.suffix == ".parquet" else save_events_json)(trace, output)
    return ConvertedTrace(
        str(source), str(output), len(trace), len(trace.tracks), len(trace.flows),
        trace.warnings, trace.metadata, streamed=False,
    )  # fmt: skip


@dataclass(frozen=True)
class RankPart:
    """One rank of a dataset: where it came from and what its partition holds."""

    rank: int
    source: str
    partition: str  # relative to the dataset root
    events: int
    flows: int
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0  # conversion time on its worker
    cpu_seconds: float = 0.0  # CPU time of that conversion (its thread's user + system time)
    worker: str = ""  # host:pid of the process that converted it
    peak_rss_mb: float = 0.0  # that process's peak RSS when it finished


@dataclass(frozen=True)
class RankFailure:
    """A rank file that could not be converted or summarized, and why."""

    source: str
    error: str


@dataclass(frozen=True)
class RankDataset:
    """A Parquet dataset of rank traces (`ROOT/rank=<r>/events.parquet`) and its failures."""

    root: Path
    parts: tuple[RankPart, ...]
    failures: tuple[RankFailure, ...] = ()
    converted_by: str = ""  # where the ranks were converted ("on 2 local Dask workers", ...)

    def partition_paths(self) -> list[Path]:
        """The partition files, in rank order."""
        return [self.root / part.partition for part in self.parts]


@dataclass(frozen=True)
class _ConvertTask:
    source: str
    staging: str
    format: str | None
    default_rank: int | None


def _thread_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _convert_rank(task: _ConvertTask) -> RankPart | RankFailure:
    """Runs on a worker: one rank file into a staging file; errors come back as data."""
    start, cpu_start = time.perf_counter(), _thread_cpu_seconds()
    source = Path(task.source)
    try:
        done = convert_trace_file(source, Path(task.staging), task.format)
        rank = rank_from_metadata(done.metadata, source, task.default_rank)
    except IrprofError as exc:
        return RankFailure(task.source, str(exc))
    except (OSError, MemoryError) as exc:
        return RankFailure(task.source, f"{type(exc).__name__}: {exc}")
    return RankPart(
        rank=rank, source=task.source, partition=task.staging, events=done.events,
        flows=done.flows, warnings=done.warnings, seconds=time.perf_counter() - start,
        cpu_seconds=_thread_cpu_seconds() - cpu_start,
        worker=f"{socket.gethostname()}:{os.getpid()}", peak_rss_mb=_peak_rss_mb(),
    )  # fmt: skip


def _failure(source: str, outcome: object) -> RankFailure | None:
    """A task's exception (a bug, a dead worker) as a failure of its file."""
    if isinstance(outcome, BaseException):
        return RankFailure(source, f"{type(outcome).__name__}: {outcome}")
    return outcome if isinstance(outcome, RankFailure) else None


def _check_root(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a directory; name a dataset folder")
    if root.is_dir() and any(root.iterdir()) and not (root / DATASET_FILE).is_file():
        raise UsageError(
            f"{root}: not empty and not an irprof rank dataset (no {DATASET_FILE}); "
            "choose an empty or new folder"
        )
    if root.is_dir():
        _partition_folders(root)


def _partition_folders(root: Path) -> list[Path]:
    """The `rank=*` folders of the dataset `root`, each a real folder inside it whose partition
    file, if any, is a regular file: a link would make a conversion write or delete elsewhere."""
    folders = []
    for entry in os.scandir(root):
        if not entry.name.startswith("rank="):
            continue
        if not entry.is_dir(follow_symlinks=False):
            kind = "a symbolic link" if entry.is_symlink() else "not a folder"
            raise UsageError(
                f"{entry.path}: a dataset partition must be a real folder inside {root}, and "
                f"this is {kind}; remove it or convert into a new folder"
            )
        partition = Path(entry.path) / PARTITION_FILE
        if os.path.lexists(partition) and not stat.S_ISREG(os.lstat(partition).st_mode):
            raise UsageError(
                f"{partition}: a partition file must be a regular file, not a link or a "
                "special file; remove it or convert into a new folder"
            )
        folders.append(Path(entry.path))
    return folders


def convert_ranks(
    sources: Sequence[Path],
    root: Path,
    runner: Runner,
    format: str | None = None,
    *,
    on_done: Callable[[object], None] | None = None,
    default_rank: int | None = None,
) -> RankDataset:
    """Convert rank trace files in parallel into the dataset `root` (see the module doc)."""
    _check_root(root)
    staging = root / f".staging-{uuid.uuid4().hex[:12]}"
    staging.mkdir(parents=True)
    try:
        tasks = [
            _ConvertTask(str(source), str(staging / f"{index}.parquet"), format, default_rank)
            for index, source in enumerate(sources)
        ]
        outcomes = runner.map(_convert_rank, tasks, on_done)
        parts: dict[int, RankPart] = {}
        failures: list[RankFailure] = []
        for task, outcome in zip(tasks, outcomes, strict=True):
            failure = _failure(task.source, outcome)
            if failure is not None:
                failures.append(failure)
            elif isinstance(outcome, RankPart) and outcome.rank in parts:
                failures.append(RankFailure(task.source, f"rank {outcome.rank} is also the "
                                            f"rank of {parts[outcome.rank].source}"))  # fmt: skip
            elif isinstance(outcome, RankPart):
                partition = f"rank={outcome.rank}/{PARTITION_FILE}"
                (root / partition).parent.mkdir(exist_ok=True)
                os.replace(outcome.partition, root / partition)
                parts[outcome.rank] = replace(outcome, partition=partition)
        dataset = RankDataset(root, tuple(parts[rank] for rank in sorted(parts)), tuple(failures))
        _remove_stale_partitions(dataset)
        write_bytes_atomic(root / DATASET_FILE, _dataset_json(dataset))
        return dataset
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_stale_partitions(dataset: RankDataset) -> None:
    """Delete the partitions of an earlier conversion, never following a link (the folders
    were checked before converting; they are checked again at the moment of deleting)."""
    current = {dataset.root / part.partition for part in dataset.parts}
    for folder in _partition_folders(dataset.root):
        stale = folder / PARTITION_FILE
        if stale not in current and os.path.lexists(stale):
            stale.unlink()  # a regular file (checked): unlink removes it, not a link's target
            if not any(folder.iterdir()):
                folder.rmdir()


class _DatasetSchema(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    version: int
    ranks: list[RankPart]
    failures: list[RankFailure] = []


def _dataset_json(dataset: RankDataset) -> bytes:
    document = _DatasetSchema(DATASET_FORMAT, DATASET_VERSION, list(dataset.parts),
                              list(dataset.failures))  # fmt: skip
    return msgspec.json.format(msgspec.json.encode(document), indent=2)


def is_rank_dataset(path: Path) -> bool:
    """Whether `path` is a folder written by `convert_ranks`."""
    return (path / DATASET_FILE).is_file()


def open_rank_dataset(root: Path) -> RankDataset:
    """The dataset at `root`, its `dataset.json` validated and every partition present."""
    manifest = root / DATASET_FILE
    try:
        document = msgspec.json.decode(manifest.read_bytes(), type=_DatasetSchema)
    except FileNotFoundError as exc:
        raise UsageError(f"{root}: not an irprof rank dataset (no {DATASET_FILE})") from exc
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise UsageError(f"{manifest}: malformed rank dataset manifest: {exc}") from exc
    if document.format != DATASET_FORMAT or document.version != DATASET_VERSION:
        raise UsageError(
            f"{manifest}: expected {DATASET_FORMAT} version {DATASET_VERSION}, found "
            f"{document.format} version {document.version}"
        )
    dataset = RankDataset(root, tuple(document.ranks), tuple(document.failures))
    for part in dataset.parts:
        path = root / part.partition
        if Path(part.partition).is_absolute() or ".." in Path(part.partition).parts:
            raise UsageError(f"{manifest}: partition {part.partition!r} is outside the dataset")
        if not path.is_file():
            raise UsageError(f"{path}: partition listed in {manifest} is missing; convert again")
    return dataset


def _rank_summary(part: tuple[str, int, str]) -> RankTime | RankFailure:
    """Runs on a worker: one partition's summary, read without its arguments."""
    path, rank, source = part
    try:
        return rank_time(load_parquet(path, args=False), rank, source)
    except IrprofError as exc:
        return RankFailure(source, str(exc))


def dataset_rank_table(
    dataset: RankDataset,
    runner: Runner,
    threshold: float,
    on_done: Callable[[object], None] | None = None,
) -> tuple[RankTable, tuple[RankFailure, ...]]:
    """Per-rank summaries read from the partitions in parallel, stragglers judged over them,
    and the partitions that could not be read."""
    items = [(str(dataset.root / part.partition), part.rank, part.source) for part in dataset.parts]
    times: list[RankTime] = []
    failures: list[RankFailure] = []
    for item, outcome in zip(items, runner.map(_rank_summary, items, on_done), strict=True):
        failure = _failure(item[2], outcome)
        if failure is not None:
            failures.append(failure)
        elif isinstance(outcome, RankTime):
            times.append(outcome)
    if not times:
        every = [*dataset.failures, *failures]
        reasons = "".join(f"\n  {failure.source}: {failure.error}" for failure in every)
        raise IrprofError(f"{dataset.root}: no rank could be summarized{reasons}")
    return rank_table(times, threshold), tuple(failures)
