"""Reader and DAG benchmark: irprof vs HolisticTraceAnalysis's parser vs a bare `orjson.loads`.

    .venv/bin/python benchmarks/bench_readers.py [--repeat 3] [--events 2000000] [--skip-hta]
        [--skip-dag] [--trace PATH ...] [--only-traces] [--hta-python PATH] [--baseline SRC]
        [--decoders]

By default every public trace (`tests/fixtures/traces/public/` and `../shared/traces/`, the same
file once), the generated real-shaped Kineto trace (see `kineto_event_lines`; `--events 0`
leaves it out) and each `--trace PATH` (`--only-traces`: those alone). Per file, in fresh
processes, alternating sides and order from round to round (a burst of load on the shared
machine then falls on every side), imports outside the clock, medians of `--repeat` rounds:

- irprof's `read_trace` (every reader module imported first: `read_trace` sniffs with each; and
  `numpy.ma`, which `np.unique` imports on its first call and HTA's pandas at import);
- HolisticTraceAnalysis 0.5.0's `hta.common.trace_parser.parse_trace_dataframe` with the default
  `ParserConfig` (what `TraceAnalysis` calls per rank), in this Python when `hta` imports here
  (install it with `pip install --no-deps holistictraceanalysis==0.5.0 plotly pydot`: its
  declared dependencies pull in jupyterlab, which the parser never imports), else in
  `--hta-python`, else in a virtualenv made in benchmarks/.cache/hta-venv on first use;
- a bare `orjson.loads(gzip.decompress(...))` of the file (`gzip` of the standard library);
- the physical floors, in the orjson process: the file read and inflated by the library irprof
  uses (ISA-L's `isal_zlib` when installed, else zlib), and one C-level scan of the JSON bytes
  (`bytes.count(b"}")`, memchr speed).

`--baseline SRC` adds irprof imported from another checkout's `src/` as one more side ("before"),
to measure a change under the same load. Every side's time includes reading the file.

`--decoders` measures instead the decode of the event array alone by msgspec (what the reader
does), pyarrow's and duckdb's JSON readers, on the public traces over 1 MiB on disk and each
`--trace` (see `DECODER_SNIPPETS`).

Targets (issue 30), on every public trace over 10 MB: at least 10x HTA's speed, at most half its
peak memory, at most half the time of the bare `orjson.loads`. Then the causal and levels event
DAG is built on the first quarter, half and all of the generated trace's events to show n log n
growth.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / ".cache"
HTA_VENV = CACHE / "hta-venv"
PUBLIC_TRACE_DIRS = (
    REPO / "tests" / "fixtures" / "traces" / "public",
    REPO.parent / "shared" / "traces",
)
# The modules HTA imports; its jupyterlab and pytest install requirements are never imported.
HTA_REQUIREMENTS = ["holistictraceanalysis==0.5.0", "pandas", "plotly", "pydot", "networkx",
                    "psutil", "pyyaml"]  # fmt: skip
DAG_FRACTIONS = (0.25, 0.5, 1.0)
TARGET_MB = 10  # the targets hold on public traces over this size

# Each snippet prints one JSON line: {"seconds", "cpu_seconds", "events", "rss_mb", ...}. CPU
# time (user + system of the process) is printed beside wall time: on a shared machine other
# processes' load stretches wall time far more than the work done. Waited-for children count
# (a side that forks a worker, as the parallel decode tried in issue 30 did, pays for it).
CPU = (
    "sum(resource.getrusage(resource.RUSAGE_SELF)[:2])"
    " + sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])"
)
# Peak RSS of this process's own memory: Linux's VmHWM, which starts afresh at exec. (`ru_maxrss`
# does not: a child started after the benchmark itself grew, e.g. by writing the generated trace,
# reports the parent's peak.) Plus the largest waited-for child's peak (`ru_maxrss` of
# RUSAGE_CHILDREN: a forked worker's VmHWM, which counts the pages it shares with this process
# too, so the sum is an upper bound of the two together); `worker_mb` is that child's alone.
RUSAGE = f"""
try:
    with open("/proc/self/status") as status:
        rss_mb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
rss_mb += worker_mb
cpu_seconds = {CPU} - cpu_start
"""
SNIPPETS = {
    "orjson": f"""
import gzip, json, resource, sys, time, zlib, orjson
try:
    from irprof.fileio import inflate_library
except ImportError:  # an irprof from before it
    inflate_library = zlib
path = sys.argv[1]
def inflate(raw):
    if raw[:2] != b"\\x1f\\x8b":
        return raw
    return inflate_library.decompressobj(wbits=31).decompress(raw)
start = time.perf_counter()
with open(path, 'rb') as handle:
    data = inflate(handle.read())
floor_inflate = time.perf_counter() - start
start = time.perf_counter()
data.count(b"}}")
floor_scan = time.perf_counter() - start
json_mb = len(data) / 2**20
del data
cpu_start = {CPU}
start = time.perf_counter()
with open(path, 'rb') as handle:
    raw = handle.read()
document = orjson.loads(gzip.decompress(raw) if raw[:2] == b"\\x1f\\x8b" else raw)
seconds = time.perf_counter() - start
{RUSAGE}
events = document["traceEvents"] if isinstance(document, dict) else document
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu_seconds, "events": len(events),
                  "rss_mb": rss_mb, "floor_inflate": floor_inflate, "floor_scan": floor_scan,
                  "json_mb": json_mb}}))
""",
    "irprof": f"""
import json, resource, sys, time
import numpy.ma  # np.unique imports it on its first call (~15 ms); pandas does at import, for HTA
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
                  "rss_mb": rss_mb, "worker_mb": worker_mb}}))
""",
    "HTA": f"""
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

# `--decoders`: the event array's decode alone, by each candidate decoder, the JSON inflated and
# the array located (irprof's `locate_events`) outside the clock. "msgspec" is what the reader
# does first: `EventText.timed_chunks`, i.e. chunks decoded into typed structs and `ts`/`dur`
# made exact ns; the per-event passes into columns, the ordering and the args gather are not
# in it. "pyarrow" is `pyarrow.json.read_json` (C++, one thread) with an explicit schema of the
# fields it can type: ph, cat, name, ts and dur as int64 (pid and tid mix ints and strings in
# Kineto files, which it refuses; args it can only type as structs, never keep as text, so they
# are skipped); its input must be newline-delimited objects, made by removing Kineto's
# `},\n  {` separators' commas (in the clock, and printed apart). "duckdb" is `read_json`
# (yyjson, one thread) with every field the reader takes, args as JSON (minified, not the file's
# text), from a file written outside the clock, fetched as an Arrow table.
DECODE_SETUP = """
import gzip, json, os, resource, sys, tempfile, time
from pathlib import Path
from irprof.fileio import inflate_library
from irprof.readers.chrome.decode import locate_events
path = Path(sys.argv[1])
raw = path.read_bytes()
data = inflate_library.decompressobj(wbits=31).decompress(raw) if raw[:2] == b"\\x1f\\x8b" else raw
del raw
located = locate_events(path, data)
extra = {}
"""
DECODE_REPORT = f"""
seconds = time.perf_counter() - start
{RUSAGE}
print(json.dumps({{"seconds": seconds, "cpu_seconds": cpu_seconds, "events": events,
                  "rss_mb": rss_mb, **extra}}))
"""
DECODER_SNIPPETS = {
    "msgspec": DECODE_SETUP
    + f"""
cpu_start = {CPU}
start = time.perf_counter()
events = 0
for chunk, ts_ns, dur_ns in located.timed_chunks():
    events += len(chunk)
    del chunk
"""
    + DECODE_REPORT,
    "pyarrow": DECODE_SETUP
    + f"""
import pyarrow, pyarrow.json
schema = pyarrow.schema([(name, pyarrow.string()) for name in ("ph", "cat", "name")]
                        + [("ts", pyarrow.int64()), ("dur", pyarrow.int64())])
options = pyarrow.json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                                    newlines_in_values=True)
cpu_start = {CPU}
start = time.perf_counter()
lines = bytes(located.events).strip()[1:-1].replace(b"}},\\n  {{", b"}}\\n  {{")
extra["convert_cpu_seconds"] = {CPU} - cpu_start
table = pyarrow.json.read_json(pyarrow.BufferReader(lines), parse_options=options,
                               read_options=pyarrow.json.ReadOptions(use_threads=False,
                                                                     block_size=1 << 22))
events = table.num_rows
"""
    + DECODE_REPORT,
    "duckdb": DECODE_SETUP
    + f"""
import duckdb
with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
    handle.write(located.events)
connection = duckdb.connect()
connection.execute("SET threads = 1")
columns = ("{{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', "
           "ts: 'BIGINT', dur: 'BIGINT', args: 'JSON', id: 'VARCHAR', bp: 'VARCHAR'}}")
query = (f"SELECT * FROM read_json('{{handle.name}}', format = 'array', columns = {{columns}}, "
         "maximum_object_size = 1000000000)")
cpu_start = {CPU}
start = time.perf_counter()
try:
    table = connection.sql(query).to_arrow_table()
finally:
    os.unlink(handle.name)
events = table.num_rows
"""
    + DECODE_REPORT,
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


def hta_python(given: Path | None) -> Path:
    """A Python where HolisticTraceAnalysis imports: `given`, this one, or a virtualenv made in
    benchmarks/.cache/hta-venv on first use (HTA without its declared dependencies, which pull
    in jupyterlab; with the modules its parser imports)."""
    if given is not None:
        return given
    here = subprocess.run([sys.executable, "-c", "import hta.common.trace_parser"],
                          capture_output=True)  # fmt: skip
    if here.returncode == 0:
        return Path(sys.executable)
    python = HTA_VENV / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(HTA_VENV)
        install = [str(python), "-m", "pip", "install", "--quiet"]
        subprocess.run([*install, "--no-deps", HTA_REQUIREMENTS[0]], check=True)
        subprocess.run([*install, *HTA_REQUIREMENTS[1:]], check=True)
    return python


def run_side(python: Path, side: str, trace: Path, baseline: Path | None) -> dict[str, float]:
    """One side in a fresh interpreter; its JSON line of figures. The "before" side is irprof's
    reader imported from `baseline` (another checkout's src/)."""
    env = dict(os.environ)
    if side == "before" and baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(baseline), env.get("PYTHONPATH")]))
    snippet = DECODER_SNIPPETS.get(side) or SNIPPETS["irprof" if side == "before" else side]
    done = subprocess.run(
        [str(python), "-c", snippet, str(trace)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} failed on {trace}:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def public_traces() -> list[Path]:
    """Every public trace file, each (name, size) once."""
    found: dict[tuple[str, int], Path] = {}
    for folder in PUBLIC_TRACE_DIRS:
        for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if path.name.endswith((".json", ".json.gz")):
                found.setdefault((path.name, path.stat().st_size), path)
    return sorted(found.values(), key=lambda path: path.stat().st_size)


def median(runs: list[dict[str, float]], key: str) -> float:
    """The median of one figure over the rounds."""
    return statistics.median(run[key] for run in runs)


def bench_file(
    trace: Path, sides: dict[str, Path], repeat: int, public: bool, baseline: Path | None
) -> dict[str, float]:
    """Median figures of every side on one file; prints its rows."""
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    order = list(sides)
    for round_index in range(repeat):
        for side in order if round_index % 2 == 0 else order[::-1]:
            runs[side].append(run_side(sides[side], side, trace, baseline))
    row = {f"{side}_{key}": median(runs[side], key) for side in sides for key in runs[side][0]}
    ours, bare = row["irprof_seconds"], row["orjson_seconds"]
    line = (
        f"{trace.name[:52]:52} {row['orjson_json_mb']:7.1f} {row['irprof_events']:>9,.0f} "
        f"{ours:7.3f} {row['irprof_cpu_seconds']:6.3f} {row['irprof_rss_mb']:6.0f} "
        f"{bare:7.3f} {ours / bare:6.2f} "
        f"{row['orjson_floor_inflate']:6.3f} {row['orjson_floor_scan']:6.3f}"
    )
    if "HTA" in sides:
        hta = row["HTA_seconds"]
        memory = row["irprof_rss_mb"] / row["HTA_rss_mb"]
        line += (f" {hta:7.3f} {row['HTA_cpu_seconds']:6.3f} {row['HTA_rss_mb']:6.0f} "
                 f"{hta / ours:6.1f}x {row['HTA_cpu_seconds'] / row['irprof_cpu_seconds']:6.1f}x "
                 f"{memory:5.2f}")  # fmt: skip
        if public and row["orjson_json_mb"] > TARGET_MB:
            met = [hta / ours >= 10, memory <= 0.5, ours / bare <= 0.5]
            line += "  targets " + "/".join("met" if good else "NOT" for good in met)
    if "before" in sides:
        before = row["before_seconds"]
        line += (f" | before {before:6.3f} s {row['before_cpu_seconds']:6.3f} cpu "
                 f"{row['before_rss_mb']:5.0f} MB: {before / ours:4.2f}x wall, "
                 f"{row['before_cpu_seconds'] / row['irprof_cpu_seconds']:4.2f}x cpu")  # fmt: skip
    print(line, flush=True)
    every = "; ".join(
        f"{side} " + ", ".join(f"{run['seconds']:.3f}" for run in runs[side]) for side in sides
    )
    print(f"    rounds (wall s): {every}", flush=True)
    return row


def bench_decoders(trace: Path, repeat: int) -> None:
    """`--decoders`: the event array's decode alone by each decoder that imports here (see
    `DECODER_SNIPPETS`), in fresh processes, sides alternating, medians; prints its rows."""
    python = Path(sys.executable)
    sides = [
        side
        for side in DECODER_SNIPPETS
        if side == "msgspec"
        or subprocess.run([str(python), "-c", f"import {side}"], capture_output=True).returncode
        == 0
    ]
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for round_index in range(repeat):
        for side in sides if round_index % 2 == 0 else sides[::-1]:
            runs[side].append(run_side(python, side, trace, None))
    reference = median(runs["msgspec"], "cpu_seconds")
    print(f"{trace.name}: decode of the event array alone (inflate and locate outside the clock)")
    print(f"{'decoder':10} {'wall s':>7} {'CPU s':>7} {'x msgspec CPU':>14} {'MB':>6} "
          f"{'events':>9}  rounds (CPU s)")  # fmt: skip
    for side in sides:
        cpu = median(runs[side], "cpu_seconds")
        note = (f"  (converting its input: {median(runs[side], 'convert_cpu_seconds'):.3f} s CPU)"
                if "convert_cpu_seconds" in runs[side][0] else "")  # fmt: skip
        rounds = ", ".join(f"{run['cpu_seconds']:.3f}" for run in runs[side])
        print(f"{side:10} {median(runs[side], 'seconds'):7.3f} {cpu:7.3f} {cpu / reference:13.2f}x "
              f"{median(runs[side], 'rss_mb'):6.0f} {median(runs[side], 'events'):>9,.0f}  "
              f"{rounds}{note}", flush=True)  # fmt: skip


def main() -> None:
    """Run the benchmark and print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000, help="generated trace; 0: none")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    parser.add_argument("--skip-hta", action="store_true")
    parser.add_argument("--skip-dag", action="store_true")
    parser.add_argument("--trace", type=Path, action="append", default=[], help="also this file")
    parser.add_argument("--only-traces", action="store_true", help="only the --trace files")
    parser.add_argument("--hta-python", type=Path, help="a Python with HTA installed")
    parser.add_argument(
        "--baseline", type=Path, help="also irprof imported from this src/ dir (a 'before' side)"
    )
    parser.add_argument(
        "--decoders",
        action="store_true",
        help="only the event array's decode, by msgspec (the reader's), pyarrow and duckdb, on "
        "the public traces over 1 MiB on disk and the --trace files",
    )
    options = parser.parse_args()
    if options.decoders:
        big = [path for path in public_traces() if path.stat().st_size > 2**20]
        for trace in options.trace if options.only_traces else [*big, *options.trace]:
            bench_decoders(trace, options.repeat)
        return

    public = [] if options.only_traces else public_traces()
    generated = [cached_trace(options.events)] if options.events and not options.only_traces else []
    python = Path(sys.executable)
    sides = {"irprof": python, "orjson": python}
    if not options.skip_hta:
        sides["HTA"] = hta_python(options.hta_python)
    if options.baseline:
        sides["before"] = python
    print(f"medians of {options.repeat} round(s), each side in a fresh process per round; "
          "s: wall seconds, cpu: CPU seconds, MB: peak RSS, floors: inflate = read + inflate "
          "with irprof's library, scan = one bytes.count over the JSON")  # fmt: skip
    print(f"{'trace':52} {'JSON MB':>7} {'events':>9} {'irprof':>7} {'cpu':>6} {'MB':>6} "
          f"{'orjson':>7} {'/orjs':>6} {'inflat':>6} {'scan':>6}"
          + (f" {'HTA':>7} {'cpu':>6} {'MB':>6} {'xHTA':>7} {'xcpu':>7} {'mem':>5}"
             if "HTA" in sides else ""))  # fmt: skip
    for trace in [*public, *generated, *options.trace]:
        bench_file(trace, sides, options.repeat, trace in public, options.baseline)

    if options.skip_dag or not generated:
        return
    done = subprocess.run(
        [str(python), "-c", DAG_SNIPPET, str(generated[0]), ",".join(map(str, DAG_FRACTIONS))],
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
