"""The stepping half of `irprof capture tf`'s child: warm-up, timed baselines, the profiled
window. Imported only by `tf_runner` (the child), so TensorFlow is still never imported by
`irprof`.

Timing (`options.overhead` in the manifest, the same record as `capture torch` and `capture jax`):
after the warm-up, the same number of steps runs with no profiler, under
`tf.profiler.experimental.start(logdir)` at its defaults (host tracer level 2, no Python
tracer), and in irprof's own window (the profiler server traced by xprof's client with the
requested levels; host level 3 records the cheap kernels and the input shapes correlation
reads); each condition starts with one untimed step, so a session's start-up is not a step. The
medians are recorded; the steps in irprof's window are the profiled ones (`irprof_step`).
"""

from __future__ import annotations

import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import tensorflow as tf
from tensorflow.python.profiler import trace as tf_trace
from xprof.convert import _pywrap_profiler_plugin

from irprof.capture.tf_options import requested_tracer_options

STEP_MARKER = "irprof_step"
WINDOW_START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        port: int = sock.getsockname()[1]
        return port


def run_step(fn: Any, inputs: tuple[Any, ...]) -> None:
    """One step, waiting for its outputs so the step marker spans the work."""
    outputs = fn(*inputs)
    for tensor in tf.nest.flatten(outputs):
        if hasattr(tensor, "numpy"):
            tensor.numpy()


def timed_steps(fn: Any, inputs: tuple[Any, ...], count: int, marker: bool = False) -> list[int]:
    """Wall time (ns) of `count` steps after one untimed step; with `marker`, each step inside
    an `irprof_step` trace marker."""
    run_step(fn, inputs)
    durations = []
    for step in range(count):
        started = time.perf_counter_ns()
        if marker:
            with tf_trace.Trace(STEP_MARKER, step_num=step, _r=1):
                run_step(fn, inputs)
        else:
            run_step(fn, inputs)
        durations.append(time.perf_counter_ns() - started)
    return durations


def plain_profiler_steps(fn: Any, inputs: tuple[Any, ...], count: int) -> list[int]:
    """Step times under `tf.profiler.experimental.start` at its defaults (its files dropped)."""
    with tempfile.TemporaryDirectory(prefix="irprof-tf-plain-") as logdir:
        tf.profiler.experimental.start(logdir)
        try:
            return timed_steps(fn, inputs, count)
        finally:
            tf.profiler.experimental.stop()


def profile(
    fn: Any, inputs: tuple[Any, ...], spec: dict[str, Any], logdir: Path
) -> tuple[float, dict[str, Any]]:
    """Warm up, time the baselines, then run the profiled steps inside one profiler window;
    returns the warm step time (s) and the overhead record."""
    for _ in range(spec["warmup"]):
        run_step(fn, inputs)
    started = time.perf_counter()
    run_step(fn, inputs)
    step_s = time.perf_counter() - started
    bare = timed_steps(fn, inputs, spec["steps"])
    plain = plain_profiler_steps(fn, inputs, spec["steps"])
    # The client call blocks for a fixed window: make it long enough for slow Python tracing.
    duration_ms = int(2000 + 30 * (spec["steps"] + 1) * step_s * 1000)
    port = free_port()
    tf.profiler.experimental.server.start(port)
    levels = requested_tracer_options(spec["host_level"], spec["python_level"])
    failure: list[BaseException] = []

    def client() -> None:
        try:
            _pywrap_profiler_plugin.trace(
                f"localhost:{port}", str(logdir), "", True, duration_ms, 1, levels
            )
        except BaseException as exc:  # re-raised in the main thread
            failure.append(exc)

    thread = threading.Thread(target=client, name="irprof-trace-client")
    thread.start()
    deadline = time.monotonic() + WINDOW_START_TIMEOUT_S
    while not tf_trace.enabled():
        if failure or time.monotonic() > deadline:
            thread.join()
            raise SystemExit(f"the profiler session did not start: {failure or 'timeout'}")
        time.sleep(0.002)
    timed = timed_steps(fn, inputs, spec["steps"], marker=True)
    still_recording = tf_trace.enabled()
    thread.join()
    if failure:
        raise SystemExit(f"the profiler client failed: {failure[0]}")
    if not still_recording:
        raise SystemExit(
            f"the profiler window ({duration_ms} ms) closed before {spec['steps']} steps ended"
        )
    levels_text = ", ".join(f"{k} {v}" for k, v in levels.items())
    return step_s, {
        "steps": spec["steps"],
        "no_profiler_ns": int(statistics.median(bare)),
        "profiler_ns": int(statistics.median(plain)),
        "irprof_ns": int(statistics.median(timed)),
        "profiler": "tf.profiler.experimental.start(logdir) at its defaults",
        "timed_steps": f"profiler server traced by xprof's client ({levels_text}), "
        "an irprof_step marker per step",
    }
