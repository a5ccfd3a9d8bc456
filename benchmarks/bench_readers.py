"""Reader and DAG benchmark: irprof vs a bare `orjson.loads` vs HolisticTraceAnalysis's parser.

    .venv/bin/python benchmarks/bench_readers.py [--events 2000000] [--repeat 3] [--skip-hta]
        [--trace PATH] [--hta-python PATH]

Generates once (cached in benchmarks/.cache/, not committed) a trace shaped like a real Kineto
trace (see `kineto_event_lines`: a leading newline and header fields, two thirds `M` metadata
events, CPU ops with long args, CUDA launches, kernels on two streams and `ac2g` flows), or reads
`--trace PATH` (any trace file). Targets: at least 10x HTA's speed, at most half its peak memory,
at most half the time of a bare `orjson.loads` of the same file. Each reader runs in its own
fresh subprocess so that its peak RSS (`ru_maxrss`) is its own. HTA (`holistictraceanalysis`)
runs in `--hta-python` or else in its own virtualenv, benchmarks/.cache/hta-venv, created on
first use, because its dependencies (pandas, plotly, ...) are not irprof's; its parser entry
point is `hta.common.trace_parser.parse_trace_dataframe` with the default `ParserConfig` (what
`TraceAnalysis` calls per rank). Then the causal and levels event DAG is built on the first
quarter, half and all of the trace's events (a real-shaped trace's `M` metadata lines are not
events) to show n log n growth.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
HTA_VENV = CACHE / "hta-venv"
# The modules HTA imports; its jupyterlab and pytest install requirements are never imported.
HTA_REQUIREMENTS = [
    "holistictraceanalysis==0.5.0",
    *("pandas", "plotly", "pydot", "networkx", "psutil", "pyyaml"),
]
DAG_FRACTIONS = (0.25, 0.5, 1.0)

# Imports stay outside every reader's clock, as HTA's pandas does: for irprof, every reader module
# (`read_trace` sniffs with each registered reader; the events/Parquet one imports pyarrow).
# Each snippet prints one JSON line: {"seconds", "cpu_seconds", "events", "rss_mb"}. CPU time
# (user + system of the reading process) is printed beside wall time because on a shared machine
# other processes' load stretches wall time far more than the work done.
CPU = "sum(resource.getrusage(resource.RUSAGE_SELF)[:2])"
RUSAGE = f"""
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
cpu_seconds = {CPU} - cpu_start
"""
SNIPPETS = {
    "orjson.loads": f"""
import json, resource, sys, time, orjson
path = sys.argv[1]
cpu_start = {CPU}
start = time.perf_counter()
with open(path, 'rb') as handle:
    document = orjson.loads(handle.read())
seconds = time.perf_counter() - start
{RUSAGE}
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu_seconds,
                  "events": len(document["traceEvents"]), "rss_mb": rss_mb}}))
""",
    "irprof read_trace": f"""
import importlib, json, resource, sys, time
from irprof.readers import get_all_readers, read_trace
for name in get_all_readers().names():
    get_all_readers().get(name)
path = sys.argv[1]
cpu_start = {CPU}
start = time.perf_counter()
trace = read_trace(path)
seconds = time.perf_counter() - start
{RUSAGE}
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu_seconds, "events": len(trace),
                  "rss_mb": rss_mb}}))
""",
    "HTA parse_trace_dataframe": f"""
import json, logging, resource, sys, time
logging.disable(logging.WARNING)
from hta.common.trace_parser import parse_trace_dataframe
from hta.configs.parser_config import ParserConfig
path = sys.argv[1]
cpu_start = {CPU}
start = time.perf_counter()
meta, frame, symbols = parse_trace_dataframe(path, ParserConfig.get_default_cfg())
seconds = time.perf_counter() - start
{RUSAGE}
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu_seconds, "events": len(frame),
                  "rss_mb": rss_mb}}))
""",
}

DAG_SNIPPET = """
import json, sys, time
import numpy as np
from irprof.readers import read_trace
from irprof.event_dag import build_event_dag
trace = read_trace(sys.argv[1])
for size in [int(len(trace) * float(value)) for value in sys.argv[2].split(",")]:
    part = trace.select(np.arange(size, dtype=np.int64))
    for mode in ("causal", "levels"):
        start = time.perf_counter()
        dag = build_event_dag(part, mode)
        seconds = time.perf_counter() - start
        print(json.dumps({"events": size, "mode": mode, "seconds": seconds,
                          "edges": dag.edge_count}))
"""


def kineto_event_lines(events: int, seed: int = 0) -> list[bytes]:
    """`events` trace events shaped like a real PyTorch profiler trace (flows count as events).

    As in the real traces that showed the metadata cost: two thirds are `M` metadata events
    (thread and process names, labels and sort indices, repeated per thread), the rest CPU ops
    with long args (shapes, call stacks), CUDA runtime launches, GPU kernels on two streams
    (one of them NCCL) and `ac2g` flow pairs.
    """
    rng = random.Random(seed)
    lines: list[bytes] = []
    ts = 100.0
    correlation = 0
    shapes = ["[[8, 512], [512, 512], [512]]", "[[8, 3, 224, 224], [64, 3, 7, 7]]", "[[8, 512]]"]
    stack = "model.py(42): forward;nn.Module: Linear_0;torch/nn/modules/module.py(1782): _call_impl"
    while len(lines) < events:
        correlation += 1
        for meta in range(12):  # two M events per other event
            tid = 1000 + (correlation * 12 + meta) % 4096
            if meta % 2:
                lines.append(
                    b'{"name": "thread_sort_index", "ph": "M", "ts": %.3f, "pid": 4242, '
                    b'"tid": %d, "args": {"sort_index": %d}}' % (ts, tid, tid)
                )
            else:
                lines.append(
                    b'{"name": "thread_name", "ph": "M", "ts": %.3f, "pid": 4242, "tid": %d, '
                    b'"args": {"name": "thread %d (python3.11)"}}' % (ts, tid, tid)
                )
        op_dur = round(rng.uniform(20, 200), 3)
        lines.append(
            b'{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 4242, "tid": 4242, '
            b'"ts": %.3f, "dur": %.3f, "args": {"External id": %d, "Sequence number": %d, '
            b'"Fwd thread id": 0, "Record function id": 0, "Input Dims": %s, '
            b'"Input type": ["float", "float", "float"], "Call stack": "%s", "Ev Idx": %d}}'
            % (ts, op_dur, correlation, correlation, rng.choice(shapes).encode(),
               stack.encode(), len(lines))
        )  # fmt: skip
        inner = ts + 2.0
        lines.append(
            b'{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 4242, "tid": 4242, '
            b'"ts": %.3f, "dur": %.3f, "args": {"External id": %d, "Input Dims": %s, '
            b'"Ev Idx": %d}}' % (inner, op_dur - 4.0, correlation, rng.choice(shapes).encode(),
                                 len(lines))
        )  # fmt: skip
        launch = inner + 3.0
        lines.append(
            b'{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, '
            b'"tid": 4242, "ts": %.3f, "dur": 5.125, "args": {"External id": %d, '
            b'"cbid": 211, "correlation": %d}}' % (launch, correlation, correlation)
        )
        kernel_ts = launch + rng.uniform(5, 30)
        nccl = correlation % 10 == 0
        lines.append(
            b'{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, '
            b'"tid": %d, "ts": %.3f, "dur": %.3f, "args": {"External id": %d, "queued": 0, '
            b'"device": 0, "context": 1, "stream": 7, "correlation": %d, "registers per thread": '
            b'122, "shared memory": 16384, "blocks per SM": 1.5, "warps per SM": 6, '
            b'"grid": [64, 2, 1], "block": [128, 1, 1], "est. achieved occupancy %%": 12}}'
            % (b"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
               if nccl else b"ampere_sgemm_128x64_tn", 84 if nccl else 7, kernel_ts,
               rng.uniform(3, 80), correlation, correlation)
        )  # fmt: skip
        lines.append(
            b'{"ph": "s", "id": %d, "pid": 4242, "tid": 4242, "ts": %.3f, "cat": "ac2g", '
            b'"name": "ac2g"}' % (correlation, launch)
        )
        lines.append(
            b'{"ph": "f", "id": %d, "pid": 0, "tid": %d, "ts": %.3f, "cat": "ac2g", '
            b'"name": "ac2g", "bp": "e"}' % (correlation, 84 if nccl else 7, kernel_ts)
        )
        ts += op_dur + rng.uniform(1, 10)
    return lines[:events]


def cached_trace(events: int) -> Path:
    """The generated trace, written once per size (Kineto's layout: it starts with a newline)."""
    path = CACHE / f"kineto_real_{events}.json"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    header = (
        b'\n{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA '
        b'A100-SXM4-80GB", "totalGlobalMem": 85198045184, "computeMajor": 8, "computeMinor": 0, '
        b'"maxThreadsPerBlock": 1024, "numSms": 108}\n  ],\n'
        b'  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},\n'
        b'  "record_shapes": 1,\n  "displayTimeUnit": "ms",\n'
        b'  "baseTimeNanoseconds": 1790000000000000000,\n  "traceEvents": [\n'
    )
    body = b",\n".join(b"  " + line for line in kineto_event_lines(events))
    partial = path.with_suffix(".tmp")
    partial.write_bytes(header + body + b'\n  ],\n  "traceName": "bench"\n}\n')
    partial.replace(path)
    return path


def hta_python() -> Path:
    """Python of a virtualenv holding HolisticTraceAnalysis, created on first use."""
    python = HTA_VENV / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(HTA_VENV)
        install = [str(python), "-m", "pip", "install", "--quiet", "--no-deps"]
        subprocess.run([*install, HTA_REQUIREMENTS[0]], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *HTA_REQUIREMENTS[1:]], check=True
        )
    return python


def run_reader(python: Path, label: str, trace: Path) -> dict[str, float]:
    """One reader in a fresh interpreter; its JSON line of figures."""
    done = subprocess.run(
        [str(python), "-c", SNIPPETS[label], str(trace)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    """Run the benchmark and print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best is reported")
    parser.add_argument("--skip-hta", action="store_true")
    parser.add_argument("--skip-dag", action="store_true")
    parser.add_argument("--trace", type=Path, help="benchmark this trace file instead")
    parser.add_argument(
        "--hta-python", type=Path, help="a Python with HTA installed (else a venv is made)"
    )
    options = parser.parse_args()

    trace = options.trace or cached_trace(options.events)
    size_mb = trace.stat().st_size / 2**20
    print(f"trace: {trace.name}, {size_mb:,.0f} MB")
    python = Path(sys.executable)
    readers = {"orjson.loads": python, "irprof read_trace": python}
    if not options.skip_hta:
        readers["HTA parse_trace_dataframe"] = options.hta_python or hta_python()
    # Rounds interleave the readers so that a burst of load on the shared machine does not fall
    # on one reader only; each reader's best round is reported (and every round's wall time).
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in readers}
    for _ in range(options.repeat):
        for label, interpreter in readers.items():
            runs[label].append(run_reader(interpreter, label, trace))
    results = {
        label: min(figures, key=lambda run: run["seconds"]) for label, figures in runs.items()
    }
    print(f"best of {options.repeat} round(s), each reader in a fresh process per round")
    print(
        f"{'reader':28} {'wall s':>8} {'CPU s':>8} {'events/s':>12} {'peak RSS MB':>12}  all rounds"
    )
    for label, figures in results.items():
        rate = figures["events"] / figures["seconds"]
        every = ", ".join(f"{run['seconds']:.2f}" for run in runs[label])
        peak = max(run["rss_mb"] for run in runs[label])
        print(f"{label:28} {figures['seconds']:8.2f} {figures['cpu_seconds']:8.2f} {rate:12,.0f} "
              f"{peak:12,.0f}  {every}")  # fmt: skip
    ours = results["irprof read_trace"]
    speedup = results["orjson.loads"]["seconds"] / ours["seconds"]
    print(f"irprof vs orjson.loads: {speedup:.2f}x as fast "
          f"(target >= 2x: {'met' if speedup >= 2 else 'NOT met'})")  # fmt: skip
    if "HTA parse_trace_dataframe" in results:
        hta = results["HTA parse_trace_dataframe"]
        faster = hta["seconds"] / ours["seconds"]
        memory = max(run["rss_mb"] for run in runs["irprof read_trace"]) / min(
            run["rss_mb"] for run in runs["HTA parse_trace_dataframe"]
        )
        print(f"irprof vs HTA: {faster:.1f}x as fast "
              f"({hta['cpu_seconds'] / ours['cpu_seconds']:.1f}x in CPU time; "
              f"target >= 10x: {'met' if faster >= 10 else 'NOT met'}), "
              f"{memory:.2f}x the peak memory "
              f"(target <= 0.5x: {'met' if memory <= 0.5 else 'NOT met'})")  # fmt: skip

    if options.skip_dag:
        return
    done = subprocess.run(
        [str(python), "-c", DAG_SNIPPET, str(trace), ",".join(map(str, DAG_FRACTIONS))],
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"{'DAG events':>10} {'mode':>7} {'seconds':>8} {'edges':>10} {'us per n log2 n':>16}")
    for line in done.stdout.strip().splitlines():
        row = json.loads(line)
        per = row["seconds"] / (row["events"] * math.log2(row["events"])) * 1e6
        print(f"{row['events']:>10,} {row['mode']:>7} {row['seconds']:8.2f} {row['edges']:>10,} "
              f"{per:16.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
