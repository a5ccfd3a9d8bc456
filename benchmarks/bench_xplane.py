"""XPlane reader benchmark: irprof `read_trace` vs xprof's own C++ XSpace -> trace_viewer JSON.

    .venv/bin/python benchmarks/bench_xplane.py [--events 165000] [--repeat 3]
        [--capture-ms 150 1500] [--trace PATH]

Traces made once and cached in benchmarks/.cache/ (not committed), or `--trace PATH`:
  - a generated XSpace shaped like a TensorFlow profile with the Python tracer on: a Task
    Environment plane, a host plane with step markers (`step_num` stats), executor ops
    ("<node>:<type>" metadata), TraceMe scopes with producer/consumer stats and Python frames
    ("$..."); few of its events have stats of their own;
  - real TensorFlow 2 profiles: a tf.function training step of five dense layers, run in a
    loop with `tf.profiler.experimental.Trace(step_num=)` markers, captured for each of
    `--capture-ms` (150 ms: ~160k events, the size the issue measured; 1500 ms: ~1.6M) through
    the profiler server with host_tracer_level 2 and python_tracer_level 1 (the options TF's
    own `start` drops); their executor events carry stats (ids, flows).
Each side runs in a fresh subprocess; xprof's conversion is
`xspace_to_tools_data([path], "trace_viewer")`, the work its trace viewer does to show a
profile. Target: irprof at least as fast.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
sys.path.insert(0, str(HERE.parent / "src"))

CPU = "sum(resource.getrusage(resource.RUSAGE_SELF)[:2])"
SNIPPETS = {
    "irprof read_trace": f"""
import json, resource, sys, time
from irprof.readers import get_all_readers, read_trace
for name in get_all_readers().names():
    get_all_readers().get(name)
cpu_start = {CPU}
start = time.perf_counter()
trace = read_trace(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "cpu_seconds": {CPU} - cpu_start, "events": len(trace),
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
""",
    "xprof trace_viewer": f"""
import json, resource, sys, time
from xprof.convert import _pywrap_profiler_plugin as plugin
cpu_start = {CPU}
start = time.perf_counter()
data, ok = plugin.xspace_to_tools_data([sys.argv[1]], "trace_viewer")
seconds = time.perf_counter() - start
assert ok and data, "xprof conversion failed"
print(json.dumps({{"seconds": seconds, "cpu_seconds": {CPU} - cpu_start, "events": -1,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
""",
}


def synthetic_xspace(events: int, seed: int = 0) -> bytes:
    """A serialized XSpace of about `events` events on a TF-like host plane."""
    from irprof.readers.xplane_proto.xplane_pb2 import XSpace

    rng = random.Random(seed)
    space = XSpace(hostnames=["bench"])
    env = space.planes.add(id=0, name="Task Environment")
    env.stat_metadata[1].id, env.stat_metadata[1].name = 1, "profile_start_time"
    env.stats.add(metadata_id=1, uint64_value=1_790_000_000_000_000_000)
    host = space.planes.add(id=1, name="/host:CPU")
    stat_names = ["step_num", "_p", "_c", "_pt", "_ct", "shape", "long_name"]
    for index, name in enumerate(stat_names, start=1):
        host.stat_metadata[index].id, host.stat_metadata[index].name = index, name
    op_types = ["MatMul", "BiasAdd", "Relu", "Conv2D", "AddV2", "Softmax", "Mul", "Sum"]
    metadata_id = 0
    kinds: list[int] = []
    for op in range(400):
        metadata_id += 1
        meta = host.event_metadata[metadata_id]
        meta.id = metadata_id
        op_type = op_types[op % len(op_types)]
        meta.name, meta.display_name = f"model/layer_{op}/{op_type.lower()}:{op_type}", op_type
        kinds.append(metadata_id)
    python_ids = []
    for frame in range(300):
        metadata_id += 1
        meta = host.event_metadata[metadata_id]
        meta.id, meta.name = metadata_id, f"$model.py:{frame + 10} layer_{frame}"
        python_ids.append(metadata_id)
    scope_ids = []
    for scope in ("ExecutorState::Process", "ThreadpoolListener::Record", "StartRegion"):
        metadata_id += 1
        host.event_metadata[metadata_id].id = metadata_id
        host.event_metadata[metadata_id].name = scope
        scope_ids.append(metadata_id)
    metadata_id += 1
    step_id = metadata_id
    host.event_metadata[step_id].id, host.event_metadata[step_id].name = step_id, "train_step"
    steps = 200
    per_step = max(1, events // steps)
    executor = host.lines.add(id=1, name="tf_Compute/1", timestamp_ns=1000)
    python = host.lines.add(id=2, name="python", timestamp_ns=1000)
    steps_line = host.lines.add(id=3, name="Steps", timestamp_ns=1000)
    offset = 0
    for step in range(steps):
        step_event = steps_line.events.add(metadata_id=step_id, offset_ps=offset)
        step_event.stats.add(metadata_id=1, int64_value=step)
        start = offset
        for position in range(per_step - 1):
            duration = rng.randint(1_000_000, 20_000_000)
            if position % 3 == 0:
                python.events.add(
                    metadata_id=rng.choice(python_ids), offset_ps=offset, duration_ps=duration
                )
            elif position % 50 == 1:
                event = executor.events.add(
                    metadata_id=scope_ids[position % 3], offset_ps=offset, duration_ps=duration
                )
                event.stats.add(metadata_id=2, uint64_value=position)
                event.stats.add(metadata_id=4, int64_value=1)
            else:
                executor.events.add(
                    metadata_id=kinds[position % len(kinds)], offset_ps=offset, duration_ps=duration
                )
            offset += duration + 100_000
        step_event.duration_ps = offset - start
    return space.SerializeToString()


def cached_xspace(events: int) -> Path:
    """The generated XSpace, written once per size."""
    path = CACHE / f"tf_like_{events}.xplane.pb"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_bytes(synthetic_xspace(events))
        partial.replace(path)
    return path


TF_CAPTURE = r"""
import socket, sys, threading, time
from pathlib import Path
import tensorflow as tf
from xprof.convert import _pywrap_profiler_plugin as profiler_plugin

logdir, out, milliseconds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
layers = [tf.keras.layers.Dense(64, activation="relu") for _ in range(4)]
layers.append(tf.keras.layers.Dense(10))
optimizer = tf.keras.optimizers.SGD(0.01)
x = tf.random.normal([32, 64])
y = tf.random.uniform([32], maxval=10, dtype=tf.int32)

@tf.function
def step():
    with tf.GradientTape() as tape:
        h = x
        for layer in layers:
            h = layer(h)
        loss = tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(y, h, from_logits=True))
    variables = [v for layer in layers for v in layer.trainable_variables]
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss

step()
with socket.socket() as sock:
    sock.bind(("localhost", 0))
    port = sock.getsockname()[1]
tf.profiler.experimental.server.start(port)
done = threading.Event()

def loop():
    number = 0
    while not done.is_set():
        with tf.profiler.experimental.Trace("train", step_num=number, _r=1):
            step().numpy()
        number += 1

threading.Thread(target=loop, daemon=True).start()
time.sleep(0.5)
profiler_plugin.trace(f"localhost:{port}", str(logdir), "", True, milliseconds, 1,
                      {"host_tracer_level": 2, "python_tracer_level": 1, "device_tracer_level": 1})
done.set()
out.write_bytes(sorted(logdir.rglob("*.xplane.pb"))[-1].read_bytes())
"""


def cached_tf_capture(milliseconds: int) -> Path:
    """The real TensorFlow profile, captured once per duration."""
    path = CACHE / f"tf_capture_{milliseconds}ms.xplane.pb"
    if not path.exists():
        logdir = CACHE / f"tf_capture_{milliseconds}ms"
        partial = path.with_suffix(".tmp")
        done = subprocess.run(
            [sys.executable, "-c", TF_CAPTURE, str(logdir), str(partial), str(milliseconds)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"TensorFlow capture failed:\n{done.stderr[-3000:]}")
        partial.replace(path)
    return path


def run(label: str, trace: Path) -> dict[str, float]:
    """One side in a fresh interpreter; its JSON line of figures."""
    done = subprocess.run(
        [sys.executable, "-c", SNIPPETS[label], str(trace)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def compare(trace: Path, repeat: int) -> None:
    """Run both sides `repeat` times, interleaved, and print the best of each and the ratio."""
    print(f"trace: {trace.name}, {trace.stat().st_size / 2**20:.1f} MB")
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in SNIPPETS}
    for _ in range(repeat):
        for label in SNIPPETS:
            runs[label].append(run(label, trace))
    best = {label: min(found, key=lambda run: run["seconds"]) for label, found in runs.items()}
    print(f"{'side':22} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}  all rounds")
    for label, figures in best.items():
        every = ", ".join(f"{run['seconds']:.2f}" for run in runs[label])
        print(f"{label:22} {figures['seconds']:8.2f} {figures['cpu_seconds']:8.2f} "
              f"{figures['rss_mb']:12,.0f}  {every}")  # fmt: skip
    ratio = best["xprof trace_viewer"]["seconds"] / best["irprof read_trace"]["seconds"]
    events = int(best["irprof read_trace"]["events"])
    print(f"irprof: {events:,} events; {ratio:.2f}x xprof's speed "
          f"(target >= 1x: {'met' if ratio >= 1 else 'NOT met'})\n")  # fmt: skip


def main() -> None:
    """Compare both sides on each trace."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=165_000)
    parser.add_argument("--capture-ms", type=int, nargs="+", default=[150, 1500])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace", type=Path, help="benchmark this .xplane.pb instead")
    options = parser.parse_args()
    if options.trace:
        traces = [options.trace]
    else:
        traces = [cached_xspace(options.events)]
        traces += [cached_tf_capture(milliseconds) for milliseconds in options.capture_ms]
    for trace in traces:
        compare(trace, options.repeat)


if __name__ == "__main__":
    main()
