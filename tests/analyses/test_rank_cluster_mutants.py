"""`analyses/rank_cluster.py` without a cluster: the runners over a fake client (results in the
items' order, escaped exceptions in place, progress per outcome), the local worker count, when
workers may be forked (platform, other threads, Dask's own threads, loaded runtimes), and the
options' refusals in full."""

from __future__ import annotations

import os
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from irprof.analyses import rank_cluster
from irprof.analyses.rank_cluster import (
    ClusterOptions,
    DaskRunner,
    SerialRunner,
    can_fork_workers,
    local_worker_count,
)
from irprof.errors import UsageError


@dataclass
class Future:
    key: str
    value: object

    def result(self) -> object:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


class Client:
    """What `DaskRunner` calls of a dask.distributed client; keeps the keywords it was given."""

    def __init__(self) -> None:
        self.keywords: dict[str, object] = {}

    def map(
        self, function: Callable[[Any], Any], items: Sequence[Any], **keywords: object
    ) -> list[Future]:
        self.keywords = keywords
        futures = []
        for index, item in enumerate(items):
            try:
                value: object = function(item)
            except Exception as exc:
                value = exc
            futures.append(Future(f"task-{index}", value))
        return futures


def _half(item: int) -> float:
    if item == 3:
        raise ValueError("three")
    return item / 2


def test_dask_results_come_back_in_the_items_order_with_exceptions_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Completion order is the reverse of submission.
    def as_completed(futures: Iterable[Future]) -> Iterator[Future]:
        return reversed(list(futures))

    monkeypatch.setattr(
        rank_cluster, "_distributed", lambda: types.SimpleNamespace(as_completed=as_completed)
    )
    client = Client()
    runner = DaskRunner(client, "on a test cluster")
    assert runner.description == "on a test cluster"
    done: list[object] = []
    results = runner.map(_half, [1, 3, 4], done.append)
    assert client.keywords == {"pure": False}  # every rank runs, none is taken from a cache
    assert results[0] == 0.5 and results[2] == 2.0
    assert isinstance(results[1], ValueError) and str(results[1]) == "three"
    assert done[0] == 2.0 and isinstance(done[1], ValueError) and done[2] == 0.5
    assert runner.map(_half, [2]) == [1.0]  # no progress callback


def test_serial_results_and_progress_in_order() -> None:
    done: list[object] = []
    results = SerialRunner().map(_half, [1, 3], done.append)
    assert results[0] == 0.5 and isinstance(results[1], ValueError)
    assert done == results


def test_local_workers_one_per_core_no_more_than_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert local_worker_count(ClusterOptions()) == 8
    assert local_worker_count(ClusterOptions(), 0) == 8  # no count of tasks: not limited
    assert local_worker_count(ClusterOptions(), 3) == 3
    assert local_worker_count(ClusterOptions(), 1) == 1
    assert local_worker_count(ClusterOptions(workers=3)) == 3
    assert local_worker_count(ClusterOptions(workers=3), 2) == 2
    assert local_worker_count(ClusterOptions(workers=3), 5) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert local_worker_count(ClusterOptions()) == 1


def test_options_refusals_in_full() -> None:
    with pytest.raises(UsageError) as both:
        ClusterOptions(scheduler="tcp://h:8786", workers=2).check()
    assert str(both.value) == (
        "--scheduler and --workers: pass one (a running cluster has its own)"
    )
    with pytest.raises(UsageError) as negative:
        ClusterOptions(workers=-1).check()
    assert str(negative.value) == "--workers -1: must be 0 (no Dask) or more"


def test_workers_are_forked_only_on_linux_alone_and_without_a_runtime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rank_cluster, "FORK_UNSAFE", ("irprof_test_runtime",))
    monkeypatch.delitem(sys.modules, "irprof_test_runtime", raising=False)
    monkeypatch.setattr(rank_cluster, "_other_threads", lambda: [])
    monkeypatch.setattr(sys, "platform", "linux")
    assert can_fork_workers() is True
    monkeypatch.setattr(sys, "platform", "darwin")
    assert can_fork_workers() is False
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(rank_cluster, "_other_threads", lambda: [threading.current_thread()])
    assert can_fork_workers() is False
    monkeypatch.setattr(rank_cluster, "_other_threads", lambda: [])
    monkeypatch.setitem(sys.modules, "irprof_test_runtime", types.ModuleType("irprof_test_runtime"))
    assert can_fork_workers() is False


def test_dask_s_offload_threads_are_not_other_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        utils = types.ModuleType("distributed.utils")
        utils._offload_executor = types.SimpleNamespace(_threads={worker})  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "distributed.utils", utils)
        assert worker not in rank_cluster._other_threads()
        monkeypatch.delitem(sys.modules, "distributed.utils")
        assert worker in rank_cluster._other_threads()
        assert threading.current_thread() not in rank_cluster._other_threads()
    finally:
        stop.set()
        worker.join()
