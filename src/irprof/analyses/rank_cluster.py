"""Where per-rank work runs: a dask.distributed cluster (local or remote), or this process.

Design notes: docs/views.md, "Module notes", `analyses/rank_cluster.py`.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from irprof.errors import UsageError

Item = TypeVar("Item")
Result = TypeVar("Result")
CONNECT_TIMEOUT_S = 20
# Runtimes whose threads do not survive a fork: loaded, the local cluster spawns its workers.
FORK_UNSAFE = ("torch", "tensorflow", "jax", "jaxlib", "iree.runtime")


@dataclass(frozen=True)
class ClusterOptions:
    """How to run per-rank work: an existing scheduler, a local cluster's size, or serially."""

    scheduler: str | None = None  # tcp://HOST:PORT of a running `dask scheduler`
    workers: int | None = None  # local cluster workers (None: one per core); 0: this process

    def check(self) -> None:
        """Refuse contradictory or impossible options."""
        if self.workers is not None and self.workers < 0:
            raise UsageError(f"--workers {self.workers}: must be 0 (no Dask) or more")
        if self.scheduler is not None and self.workers is not None:
            raise UsageError("--scheduler and --workers: pass one (a running cluster has its own)")


class Runner(Protocol):
    """Applies a function to items somewhere; results in the items' order."""

    description: str

    def map(
        self,
        function: Callable[[Item], Result],
        items: Sequence[Item],
        on_done: Callable[[Result | BaseException], None] | None = None,
    ) -> list[Result | BaseException]:
        """`function(item)` for every item; an exception that escaped a task, in its place."""
        ...


class SerialRunner:
    """Everything in this process, one item after the other."""

    description = "in this process"

    def map(
        self,
        function: Callable[[Item], Result],
        items: Sequence[Item],
        on_done: Callable[[Result | BaseException], None] | None = None,
    ) -> list[Result | BaseException]:
        """`function(item)` for every item, in order."""
        results: list[Result | BaseException] = []
        for item in items:
            result: Result | BaseException
            try:
                result = function(item)
            except Exception as exc:  # a bug in one task must not lose the others' results
                result = exc
            results.append(result)
            if on_done is not None:
                on_done(result)
        return results


class DaskRunner:
    """Tasks on a dask.distributed cluster through its client."""

    def __init__(self, client: Any, description: str) -> None:
        self.client = client
        self.description = description

    def map(
        self,
        function: Callable[[Item], Result],
        items: Sequence[Item],
        on_done: Callable[[Result | BaseException], None] | None = None,
    ) -> list[Result | BaseException]:
        """Submit every item, collect as they complete (the scheduler reports each one)."""
        futures = self.client.map(function, list(items), pure=False)
        place = {future.key: index for index, future in enumerate(futures)}
        results: list[Result | BaseException | None] = [None] * len(futures)
        for future in _distributed().as_completed(futures):
            outcome: Result | BaseException
            try:
                outcome = future.result()
            except Exception as exc:  # the task raised, or its worker died
                outcome = exc
            results[place[future.key]] = outcome
            if on_done is not None:
                on_done(outcome)
        return cast(list[Result | BaseException], results)


def _distributed() -> Any:
    """The `distributed` package, imported on first use (an optional extra; its API untyped)."""
    return importlib.import_module("distributed")


def local_worker_count(options: ClusterOptions, tasks: int | None = None) -> int:
    """Workers of the default local cluster: one per core, no more than there are tasks."""
    count = options.workers or os.cpu_count() or 1
    return max(1, min(count, tasks)) if tasks else count


@contextlib.contextmanager
def open_runner(options: ClusterOptions, tasks: int | None = None) -> Iterator[Runner]:
    """A runner for `options` (see the module doc); the local cluster stops on exit."""
    options.check()
    if options.workers == 0:
        yield SerialRunner()
        return
    try:
        distributed = _distributed()
    except ImportError as exc:
        raise UsageError(
            "running on Dask needs dask.distributed: pip install 'irprof[dist]' "
            "(or pass --workers 0 to run in this process)"
        ) from exc
    if options.scheduler is not None:
        try:
            client = distributed.Client(options.scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            raise UsageError(
                f"--scheduler {options.scheduler}: cannot connect ({exc}); start one with "
                "`dask scheduler` and workers with `dask worker ADDRESS`"
            ) from exc
        with contextlib.closing(client):
            workers = len(client.scheduler_info().get("workers", {}))
            yield DaskRunner(client, f"on {options.scheduler} ({workers} worker(s))")
        return
    count = local_worker_count(options, tasks)
    config = importlib.import_module("dask").config
    # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which makes glibc hand every freed
    # block back at once: a streamed conversion, freeing and allocating MBs per chunk, then
    # spends 3-4x the system time on page faults (a 94 MB rank: 0.45 s vs 0.12 s, 190k vs 40k
    # faults). The streamed conversion returns its memory itself (`release_freed_memory`).
    environ = dict(config.get("distributed.nanny.pre-spawn-environ", {}))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    settings: dict[str, object] = {
        "distributed.nanny.pre-spawn-environ": environ,
        # Each worker's statistical profiler samples every thread's stack every 10 ms, taking
        # the GIL from the task; it feeds a dashboard this cluster does not have.
        "distributed.worker.profile.enabled": False,
    }
    if can_fork_workers():
        _warm_up()  # imported here once, the forked workers start with it
        settings["distributed.worker.multiprocessing-method"] = "fork"
    with config.set(settings):  # the start only: a worker restarted later is spawned
        cluster = distributed.LocalCluster(
            n_workers=count,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    with cluster, distributed.Client(cluster) as client:
        client.run(_warm_up)  # imports on every worker at once, not in the first task of each
        yield DaskRunner(client, f"on a local Dask cluster of {count} worker(s)")


def can_fork_workers() -> bool:
    """Whether the local cluster's workers may be forked from this process.

    A forked worker starts with this process's imports (dask.distributed, numpy, pyarrow,
    irprof's readers) instead of importing them again, each, as a spawned one does: on 2 cores,
    ~1.3 s of CPU and ~0.5 s of wall time less before the first task. The threads this process
    holds then are Dask's own, OpenBLAS's and jemalloc's, which are made for it. Not on other
    systems (macOS's libraries are not fork-safe), not once an ML framework runtime is loaded (a
    notebook calling `open_dataset`): their thread pools do not survive a fork, and not while
    another thread runs Python code (a progress bar's refresh, say): a lock it holds at the fork,
    on stderr for one, would stay held in the worker forever.
    """
    return (
        sys.platform == "linux"
        and not _other_threads()
        and not any(name in sys.modules for name in FORK_UNSAFE)
    )


def _other_threads() -> list[threading.Thread]:
    """Threads of this process but this one and Dask's offload pool (Dask forks beside it)."""
    offload = getattr(sys.modules.get("distributed.utils"), "_offload_executor", None)
    dask_own = set(getattr(offload, "_threads", ()))  # unknown: counted, so spawned (safe)
    current = threading.current_thread()
    return [one for one in threading.enumerate() if one is not current and one not in dask_own]


def _warm_up() -> None:
    """Import what rank tasks use (a second of numpy, pyarrow, msgspec and irprof modules)."""
    for name in ("irprof.analyses.rank_dataset", "irprof.readers.chrome.stream", "pyarrow.parquet"):
        importlib.import_module(name)
