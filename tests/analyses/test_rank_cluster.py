"""Many ranks on dask.distributed: a local cluster, a separately started scheduler and worker
(real processes), and one bad rank file that must not lose the others."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from irprof.cli.main import main

pytest.importorskip("distributed")

PUBLIC = Path(__file__).parents[1] / "fixtures" / "traces" / "public"
PAIR = [PUBLIC / f"trace_filter__sampled_rank-{rank}.json.gz" for rank in (0, 1)]
DASK = Path(sys.executable).parent / "dask"
RANK_QUERY = (
    "SELECT rank, kind, count(*) AS events, sum(dur_ns) AS total_ns "
    "FROM events GROUP BY ALL ORDER BY ALL"
)
# A fresh process that opens the default local cluster and asks its workers what they hold.
FORK_PROBE = """
import json, sys, threading, types
from irprof.analyses.rank_cluster import ClusterOptions, open_runner

def state():
    return "irprof_fork_probe" in sys.modules, "irprof.readers.chrome.stream" in sys.modules

def profiling(dask_worker):
    return "profile" in dask_worker.periodic_callbacks

if __name__ == "__main__":
    sys.modules["irprof_fork_probe"] = types.ModuleType("irprof_fork_probe")
    if sys.argv[1]:
        sys.modules[sys.argv[1]] = types.ModuleType(sys.argv[1])
    stop = threading.Event()
    if sys.argv[2] == "thread":
        threading.Thread(target=stop.wait).start()
    with open_runner(ClusterOptions(workers=2), tasks=2) as runner:
        seen = {"description": runner.description, "state": list(runner.client.run(state).values()),
                "profiling": list(runner.client.run(profiling).values())}
    stop.set()
    print(json.dumps(seen))
"""


@pytest.fixture(name="ranks")
def fixture_ranks(tmp_path: Path) -> Path:
    """A directory holding the two ranks of a real NCCL pair."""
    folder = tmp_path / "ranks"
    folder.mkdir()
    for path in PAIR:
        shutil.copy(path, folder / path.name)
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_bad_rank_file_is_named_and_the_others_complete(
    ranks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two good ranks and a third whose JSON has a string where a time belongs
    bad = ranks / "trace_rank-5.json.gz"
    bad.write_bytes(gzip.compress(json.dumps({"traceEvents": [{"ph": "X", "ts": "x"}]}).encode()))
    dataset = tmp_path / "dataset"
    # WHEN converted on a local cluster of two workers
    code, out, err = run(capsys, "trace", "convert", str(ranks), "-o", str(dataset),
                         "--workers", "2")  # fmt: skip
    # THEN the good ranks are written, the bad file is named with its error, and exit is 2
    assert code == 2
    assert "1 of 3 rank file(s) failed" in err and "trace_rank-5.json.gz" in err
    assert "traceEvents[0] field 'ts'" in err
    assert "rank 0:" in out and "rank 1:" in out and "2 worker(s)" in out
    written = sorted(path.relative_to(dataset).as_posix() for path in dataset.rglob("*.parquet"))
    assert written == ["rank=0/events.parquet", "rank=1/events.parquet"]
    assert sorted(path.name for path in dataset.iterdir()) == ["dataset.json", "rank=0", "rank=1"]
    recorded = json.loads((dataset / "dataset.json").read_text())
    assert [failure["source"] for failure in recorded["failures"]] == [str(bad)]
    # AND the summary of the directory prints both ranks before failing on the third
    code, out, err = run(capsys, "trace", "summary", str(ranks), "--workers", "2")
    assert code == 2 and "trace_rank-5.json.gz" in err
    assert "trace_filter__sampled_rank-0.json.gz" in out and "rank 1:" in out
    # AND the dataset itself is queried with a warning about the missing rank, exit 0
    query = "SELECT DISTINCT rank FROM events ORDER BY rank"  # no ORDER BY, no order
    code, out, err = run(capsys, "sql", str(dataset), query, "--csv")
    assert code == 0 and out.split() == ["rank", "0", "1"]
    assert "not in the dataset" in err and "trace_rank-5.json.gz" in err


@contextlib.contextmanager
def dask_cluster(folder: Path) -> Iterator[tuple[str, int]]:
    """A `dask scheduler` and a `dask worker` started as processes; their address and the
    worker's pid (no nanny: the worker runs the tasks in the process started here)."""
    scheduler_file = folder / "scheduler.json"
    started: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    try:
        scheduler = [str(DASK), "scheduler", "--scheduler-file", str(scheduler_file), "--port",
                     "0", "--no-dashboard", "--host", "127.0.0.1"]  # fmt: skip
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        started.append(subprocess.Popen(scheduler, **quiet))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        command = [str(DASK), "worker", address, "--nthreads", "1", "--no-nanny",
                   "--no-dashboard", "--local-directory", str(folder / "worker")]  # fmt: skip
        worker = subprocess.Popen(command, **quiet)
        started.append(worker)
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
        yield address, worker.pid
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_a_separate_scheduler_and_worker_give_the_local_cluster_s_results(
    ranks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same rank directory, first on the default local cluster
    local_summary = run(capsys, "trace", "summary", str(ranks))
    local_sql = run(capsys, "sql", str(ranks), RANK_QUERY, "--csv")
    assert local_summary[0] == 0 and local_sql[0] == 0
    assert "Ranks (median step" in local_summary[1] and len(local_sql[1].splitlines()) > 10
    # WHEN a scheduler and a worker are started as separate processes and used instead
    with dask_cluster(tmp_path) as (address, worker_pid):
        remote_summary = run(capsys, "trace", "summary", str(ranks), "--scheduler", address)
        remote_sql = run(capsys, "sql", str(ranks), RANK_QUERY, "--csv", "--scheduler", address)
        dataset = tmp_path / "dataset"
        converted = run(capsys, "trace", "convert", str(ranks), "-o", str(dataset),
                        "--scheduler", address)  # fmt: skip
    # THEN the outputs are the same, and the conversions ran in the started worker process
    assert remote_summary == local_summary
    assert remote_sql == local_sql
    assert converted[0] == 0 and f"on {address} (1 worker(s))" in converted[1]
    parts = json.loads((dataset / "dataset.json").read_text())["ranks"]
    assert {part["worker"].rsplit(":", 1)[1] for part in parts} == {str(worker_pid)}


def test_serial_and_dask_summaries_agree_and_options_are_checked(
    ranks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serial = run(capsys, "trace", "summary", str(ranks), "--workers", "0")
    parallel = run(capsys, "trace", "summary", str(ranks), "--workers", "2")
    assert serial[0] == 0 and serial == parallel
    code, _, err = run(capsys, "trace", "summary", str(ranks), "--workers", "-1")
    assert code == 2 and "--workers -1" in err
    code, _, err = run(capsys, "trace", "summary", str(ranks), "--scheduler",
                       "tcp://127.0.0.1:9", "--workers", "2")  # fmt: skip
    assert code == 2 and "pass one" in err


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
@pytest.mark.parametrize(("framework", "thread"), [("", ""), ("torch", ""), ("", "thread")])
def test_local_workers_are_forked_unless_a_framework_runtime_or_a_thread_runs(
    framework: str, thread: str, tmp_path: Path
) -> None:
    """Forked, a worker holds a module that exists only in its parent's memory (a spawned one
    starts without it) and the readers before any task. With an ML framework loaded (its thread
    pools do not survive a fork) or another thread running, the workers are spawned and import
    the readers themselves. Either way no worker runs the statistical profiler (it feeds a
    dashboard not started). In a fresh process, as the CLI runs: this one's modules and threads
    depend on the tests run before."""
    script = tmp_path / "fork_probe.py"
    script.write_text(FORK_PROBE)
    done = subprocess.run(
        [sys.executable, str(script), framework, thread],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "2 worker(s)" in seen["description"]
    assert seen["state"] == [[not framework and not thread, True]] * 2
    assert seen["profiling"] == [False, False]
