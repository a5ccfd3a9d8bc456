"""Bounded-memory conversion benchmark: streamed `trace convert` vs the in-memory reader.

    .venv/bin/python benchmarks/bench_convert.py [--sizes-gb 0.5,1,2,5] [--in-memory-max-gb 1]
        [--repeat 1] [--keep]

Generates (cached in benchmarks/.cache/, not committed) Kineto-shaped traces of the given sizes
with the generator of `bench_readers.py` (a batch of its events repeated with shifted times, so
a 5 GB file takes a minute, not a 5 GB Python list; Kineto writes `baseTimeNanoseconds` after the
events, and so does this). Then, each in a fresh process so that its peak RSS (`ru_maxrss`) is
its own: the streamed conversion (`stream_chrome_to_parquet`, what `irprof trace convert
BIG.json -o OUT.parquet` runs) on every size, and the in-memory reader (`read_trace`) and the
in-memory conversion (`read_trace` + `save_parquet`) on the sizes up to `--in-memory-max-gb`
(they need ~3x the file in RAM). Targets from the issue: peak RSS under 1.5 GB whatever the size,
speed within 1.5x of the in-memory reader.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_readers import CACHE, kineto_event_lines  # noqa: E402

BATCH_EVENTS = 400_000
_TS = re.compile(rb'"ts": (\d+\.\d+)')

CPU = "sum(resource.getrusage(resource.RUSAGE_SELF)[:2])"
SNIPPETS = {
    "in-memory read_trace": f"""
import json, resource, sys, time
from irprof.readers import read_trace
cpu = {CPU}; start = time.perf_counter()
trace = read_trace(sys.argv[1])
events = len(trace)
""",
    "in-memory convert": f"""
import json, resource, sys, time
from irprof.readers import read_trace
from irprof.trace.io import save_parquet
cpu = {CPU}; start = time.perf_counter()
trace = read_trace(sys.argv[1])
save_parquet(trace, sys.argv[2])
events = len(trace)
""",
    "streamed convert": f"""
import json, resource, sys, time
from pathlib import Path
from irprof.readers.chrome.stream import stream_chrome_to_parquet
cpu = {CPU}; start = time.perf_counter()
events = stream_chrome_to_parquet(Path(sys.argv[1]), Path(sys.argv[2])).events
""",
}
FIGURES = f"""
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "cpu_seconds": {CPU} - cpu, "events": events,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def generated_trace(size_gb: float) -> Path:
    """A Kineto-shaped trace of about `size_gb`, written batch by batch (cached)."""
    path = CACHE / f"kineto_stream_{size_gb:g}gb.json"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    target = int(size_gb * 2**30)
    lines = kineto_event_lines(BATCH_EVENTS)
    batch = b",\n".join(b"  " + line for line in lines)
    span = max(float(found) for found in _TS.findall(batch)) + 1000.0
    partial = path.with_suffix(".tmp")
    with partial.open("wb") as handle:
        handle.write(
            b'\n{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": 0, '
            b'"world_size": 8},\n  "displayTimeUnit": "ms",\n  "traceEvents": [\n'
        )
        written, repetition = 0, 0
        while written < target:
            offset = repetition * span
            text = _TS.sub(lambda found, at=offset: b'"ts": %.3f' % (float(found[1]) + at), batch)
            handle.write((b",\n" if repetition else b"") + text)
            written += len(text)
            repetition += 1
        handle.write(
            b'\n  ],\n  "traceName": "bench",\n  "baseTimeNanoseconds": 1790000000000000000\n}\n'
        )
    partial.replace(path)
    return path


def run(label: str, trace: Path, output: Path) -> dict[str, float]:
    """One conversion in a fresh interpreter; its figures."""
    done = subprocess.run(
        [sys.executable, "-c", SNIPPETS[label] + FIGURES, str(trace), str(output)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
    output.unlink(missing_ok=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Run the benchmark and print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-gb", default="0.5,1,2,5", help="trace sizes, comma-separated")
    parser.add_argument("--in-memory-max-gb", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best is reported")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    options = parser.parse_args()
    sizes = [float(size) for size in options.sizes_gb.split(",")]
    free_gb = shutil.disk_usage(CACHE.parent).free / 2**30
    print(f"disk free: {free_gb:,.0f} GB; traces: {', '.join(f'{size:g} GB' for size in sizes)}")
    print(f"{'trace':>8} {'events':>12} {'how':22} {'wall s':>8} {'CPU s':>8} {'MB/s':>7} "
          f"{'peak RSS MB':>12}")  # fmt: skip
    for size in sizes:
        trace = generated_trace(size)
        size_mb = trace.stat().st_size / 2**20
        labels = ["streamed convert"]
        if size <= options.in_memory_max_gb:
            labels = ["in-memory read_trace", "in-memory convert", *labels]
        best: dict[str, dict[str, float]] = {}
        for label in labels:
            rounds = [run(label, trace, CACHE / "out.parquet") for _ in range(options.repeat)]
            best[label] = min(rounds, key=lambda figures: figures["seconds"])
            best[label]["rss_mb"] = max(figures["rss_mb"] for figures in rounds)
            figures = best[label]
            print(f"{size_mb / 1024:7.2f}G {int(figures['events']):>12,} {label:22} "
                  f"{figures['seconds']:8.1f} {figures['cpu_seconds']:8.1f} "
                  f"{size_mb / figures['seconds']:7.0f} {figures['rss_mb']:12,.0f}")  # fmt: skip
        streamed = best["streamed convert"]
        verdict = "met" if streamed["rss_mb"] < 1536 else "NOT met"
        print(f"{'':>8} streamed peak RSS {streamed['rss_mb']:,.0f} MB (target < 1,536: {verdict})")
        if "in-memory read_trace" in best:
            for label in ("in-memory read_trace", "in-memory convert"):
                ratio = streamed["seconds"] / best[label]["seconds"]
                memory = streamed["rss_mb"] / best[label]["rss_mb"]
                verdict = "met" if ratio <= 1.5 else "NOT met"
                print(f"{'':>8} streamed vs {label}: {ratio:.2f}x the time (target <= 1.5x: "
                      f"{verdict}), {memory:.2f}x the peak RSS")  # fmt: skip
        if not options.keep and size > 1:
            trace.unlink()


if __name__ == "__main__":
    main()
