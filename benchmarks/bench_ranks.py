"""Many-rank benchmark: `trace summary DIR` serially vs on a local Dask cluster of 2 workers.

    .venv/bin/python benchmarks/bench_ranks.py [--ranks 8] [--rank-mb 100] [--workers 2]
        [--repeat 3]

Generates (cached in benchmarks/.cache/ranks-<n>x<mb>mb/, not committed) `--ranks` Kineto-shaped
rank traces of about `--rank-mb` each with the generator of `bench_readers.py` (a different seed
per rank, `distributedInfo.rank` set, rank 5 a straggler: its timeline stretched by 25%). Then,
each in a fresh process: what `irprof trace summary DIR` does (every rank streamed into a Parquet
dataset, then each rank's summary read from its partition, then stragglers) with `--workers 0`
(this process only) and on a local Dask cluster of `--workers` workers. It prints the wall time
with and without the cluster's start, each worker's peak RSS (asked of the workers before the
cluster stops) and the sum of the conversions' own wall and CPU times: when the tasks' wall time
grows and their CPU time does not, other processes held the cores. Last, as a yardstick with no
Dask involved, `--workers` ranks converted by plain processes one after the other and all at once.
Target from the issue: at least 1.7x the serial speed with 2 workers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_readers import CACHE, kineto_event_lines  # noqa: E402

EVENTS_PER_MB = 6_150  # the generator's density: ~2M events in 325 MB
_TIME = re.compile(rb'("(?:ts|dur)": )(\d+\.\d+)')

SNIPPET = """
import json, resource, sys, tempfile, time
from pathlib import Path
start = time.perf_counter()
from irprof.analyses.rank_cluster import ClusterOptions, open_runner
from irprof.analyses.rank_dataset import convert_ranks, dataset_rank_table
from irprof.analyses.ranks import rank_trace_files
files = rank_trace_files(Path(sys.argv[1]))
workers = int(sys.argv[2])
with tempfile.TemporaryDirectory(dir=sys.argv[3]) as folder, \\
        open_runner(ClusterOptions(workers=workers), len(files)) as runner:
    ready = time.perf_counter()
    dataset = convert_ranks(files, Path(folder) / "dataset", runner)
    converted = time.perf_counter()
    table, failures = dataset_rank_table(dataset, runner, 0.1)
    done = time.perf_counter()
    rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peaks = list(runner.client.run(rss).values()) if workers else []
tasks = [(part.seconds, part.cpu_seconds) for part in dataset.parts]
print(json.dumps({"total": done - start, "work": done - ready, "convert": converted - ready,
                  "task_wall": sum(wall for wall, _ in tasks),
                  "task_cpu": sum(cpu for _, cpu in tasks),
                  "summary": done - converted, "client_rss_mb": rss(), "worker_rss_mb": peaks,
                  "events": sum(part.events for part in dataset.parts),
                  "stragglers": list(table.stragglers), "failures": len(failures)}))
"""


def rank_files(ranks: int, rank_mb: int) -> Path:
    """The generated rank traces (cached)."""
    folder = CACHE / f"ranks-{ranks}x{rank_mb}mb"
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        path = folder / f"rank-{rank}.json"
        if path.exists():
            continue
        body = b",\n".join(kineto_event_lines(rank_mb * EVENTS_PER_MB, seed=rank))
        if rank == 5:  # the straggler: its whole timeline 25% slower
            body = _TIME.sub(lambda found: found[1] + b"%.3f" % (float(found[2]) * 1.25), body)
        header = (
            b'{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": %d, '
            b'"world_size": %d}, "traceEvents": [\n' % (rank, ranks)
        )
        partial = path.with_suffix(".tmp")
        partial.write_bytes(header + body + b'\n], "baseTimeNanoseconds": 1790000000000000000}')
        partial.replace(path)
    return folder


CONVERT_ONE = """
import sys
from pathlib import Path
from irprof.readers.chrome_stream import stream_chrome_to_parquet
stream_chrome_to_parquet(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def machine_parallelism(folder: Path, count: int) -> tuple[float, float]:
    """Wall time of `count` ranks converted by plain processes one after the other, and all at
    once: what the machine itself allows in parallel, with no Dask involved."""
    sources = sorted(folder.glob("rank-*.json"))[:count]
    outputs = [CACHE / f"parallelism-{index}.parquet" for index in range(count)]
    commands = [[sys.executable, "-c", CONVERT_ONE, str(source), str(output)]
                for source, output in zip(sources, outputs, strict=True)]  # fmt: skip
    start = time.perf_counter()
    for command in commands:
        subprocess.run(command, check=True)
    sequential = time.perf_counter() - start
    start = time.perf_counter()
    for process in [subprocess.Popen(command) for command in commands]:
        process.wait()
    together = time.perf_counter() - start
    for output in outputs:
        output.unlink(missing_ok=True)
    return sequential, together


def measure(folder: Path, workers: int) -> dict[str, object]:
    """One `trace summary`-equivalent run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", SNIPPET, str(folder), str(workers), str(CACHE)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"workers={workers} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Run the benchmark and print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--rank-mb", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; best and median reported")
    options = parser.parse_args()
    folder = rank_files(options.ranks, options.rank_mb)
    total_mb = sum(path.stat().st_size for path in folder.glob("*.json")) / 2**20
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{options.ranks} ranks, {total_mb:,.0f} MB in {folder}; load average before: {load} "
          f"on {os.cpu_count()} cores")  # fmt: skip
    # Rounds alternate serial and Dask, so that a drift in what the VM gives (its speed varies
    # by 1.5x from minute to minute) falls on both sides; each round's ratio is also kept.
    rounds: dict[int, list[dict[str, object]]] = {0: [], options.workers: []}
    for _ in range(options.repeat):
        for workers in rounds:
            rounds[workers].append(measure(folder, workers))
    results = {
        workers: min(runs, key=lambda figures: float(str(figures["total"])))
        for workers, runs in rounds.items()
    }
    print(f"{'run':22} {'total s':>8} {'work s':>7} {'convert':>8} {'summary':>8} "
          f"{'task wall':>9} {'task CPU':>8} {'client MB':>10}  worker peak RSS MB")  # fmt: skip
    for workers, figures in results.items():
        label = "serial (--workers 0)" if workers == 0 else f"Dask, {workers} workers"
        peaks = ", ".join(f"{float(peak):,.0f}" for peak in list(figures["worker_rss_mb"]))
        print(f"{label:22} {figures['total']:8.1f} {figures['work']:7.1f} "
              f"{figures['convert']:8.1f} {figures['summary']:8.1f} "
              f"{figures['task_wall']:9.1f} {figures['task_cpu']:8.1f} "
              f"{figures['client_rss_mb']:10,.0f}  {peaks or '-'}")  # fmt: skip
    serial, parallel = results[0], results[options.workers]
    events, stragglers = serial["events"], serial["stragglers"]
    print(f"{events:,} events; stragglers {stragglers} (serial) {parallel['stragglers']} (Dask)")
    for what in ("total", "work"):
        ratio = float(str(serial[what])) / float(str(parallel[what]))
        verdict = "met" if ratio >= 1.7 else "NOT met"
        paired = sorted(
            float(str(alone[what])) / float(str(together[what]))
            for alone, together in zip(rounds[0], rounds[options.workers], strict=True)
        )
        each = ", ".join(f"{value:.2f}x" for value in paired)
        print(f"speed-up, {what:5}: {ratio:.2f}x best vs best (target >= 1.7x: {verdict}); "
              f"round by round: {each}, median {statistics.median(paired):.2f}x")  # fmt: skip
    sequential, together = machine_parallelism(folder, options.workers)
    print(f"the machine itself: {options.workers} ranks converted by plain processes one after "
          f"the other {sequential:.1f} s, at once {together:.1f} s: "
          f"{sequential / together:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
