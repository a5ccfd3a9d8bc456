"""The stepping half of `irprof capture tf`'s child: warm-up, timed baselines, the profiled
window. Imported only by `tf_runner` (the child), so TensorFlow is still never imported by
`irprof`.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/steps_runner.py`.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tensorflow as tf
from tensorflow.python.profiler import trace as tf_trace
from xprof.convert import _pywrap_profiler_plugin

from irprof.capture.step_overhead import Conditions, measure_overhead
from irprof.frameworks.tf.options import requested_tracer_options

STEP_MARKER = "irprof_step"
WINDOW_START_TIMEOUT_S = 30.0
WINDOW_BASE_MS = 500  # the reference window's fixed part (see `traced_window`)
WINDOW_ATTEMPTS = 3
WINDOW_GROWTH = 4
# The timed steps record what `tf.profiler.experimental.start` records by default: kernels the
# executor calls expensive, no shapes, no Python frames. Host level 3 (cheap kernels such as
# Reshape and _Arg, every kernel's input shapes) and the Python tracer cost step time, so they
# run in a short untimed reference window instead.
TIMED_LEVELS = requested_tracer_options(host_level=2, python_level=0)
REFERENCE_STEPS = 3  # the correlator takes the median one
SETTLE_S = 0.5  # unprofiled steps before the overhead is timed (on top of --warmup)


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


def settle(step: Callable[[], None]) -> None:
    """Run steps for at least SETTLE_S: a process's first hundreds of steps keep getting
    faster (thread pools, kernel caches), which would bias whichever condition runs first."""
    deadline = time.perf_counter() + SETTLE_S
    while time.perf_counter() < deadline:
        step()


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


def profiler_steps(
    fn: Any, inputs: tuple[Any, ...], count: int, logdir: Path, marker: bool = False
) -> list[int]:
    """Step times under `tf.profiler.experimental.start(logdir)` at its defaults."""
    tf.profiler.experimental.start(str(logdir))
    try:
        return timed_steps(fn, inputs, count, marker)
    finally:
        tf.profiler.experimental.stop()


def plain_profiler_steps(
    fn: Any, inputs: tuple[Any, ...], count: int, marker: bool = False
) -> list[int]:
    """Step times under the profiler at its defaults, with or without markers (files dropped)."""
    with tempfile.TemporaryDirectory(prefix="irprof-tf-plain-") as logdir:
        return profiler_steps(fn, inputs, count, Path(logdir), marker)


@dataclass(frozen=True)
class ProfiledSteps:
    """What the profiling windows gave besides their files."""

    step_s: float  # one warm step, seconds
    overhead: dict[str, Any]
    timed_levels: dict[str, int]
    reference_levels: dict[str, int] | None  # None: the timed window recorded everything
    reference_steps: int


def traced_window(
    fn: Any,
    inputs: tuple[Any, ...],
    steps: int,
    levels: dict[str, int],
    logdir: Path,
    port: int,
    step_s: float,
) -> list[int]:
    """`steps` marked steps inside one window of xprof's client tracing the profiler server
    with `levels`; returns their wall times (ns). The client call blocks for a fixed window, which
    is idle time once the steps are done: it starts short (WINDOW_BASE_MS plus 30 times the steps'
    warm time, for slow Python tracing) and, when it closed before the steps ended (a stalled
    machine), the window is taken again from scratch, WINDOW_GROWTH times longer."""
    duration_ms = int(WINDOW_BASE_MS + 30 * (steps + 1) * step_s * 1000)
    for attempt in range(1, WINDOW_ATTEMPTS + 1):
        durations = _one_window(fn, inputs, steps, levels, logdir, port, duration_ms)
        if durations is not None:
            return durations
        if attempt < WINDOW_ATTEMPTS:
            shutil.rmtree(logdir, ignore_errors=True)
            duration_ms *= WINDOW_GROWTH
    raise SystemExit(
        f"the profiler window ({duration_ms} ms, attempt {WINDOW_ATTEMPTS}) closed before "
        f"{steps} steps ended"
    )


def _one_window(
    fn: Any,
    inputs: tuple[Any, ...],
    steps: int,
    levels: dict[str, int],
    logdir: Path,
    port: int,
    duration_ms: int,
) -> list[int] | None:
    """One client window of `duration_ms`; the steps' wall times, or None when the window
    closed before they ended."""
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
    durations = timed_steps(fn, inputs, steps, marker=True)
    still_recording = tf_trace.enabled()
    thread.join()
    if not still_recording:
        # Closed early; the client may also have failed for it (a window whose steps had not
        # recorded an event yet is "no trace event was collected").
        return None
    if failure:
        raise SystemExit(f"the profiler client failed: {failure[0]}")
    return durations


def profile(
    fn: Any, inputs: tuple[Any, ...], spec: dict[str, Any], logdir: Path, reference_logdir: Path
) -> ProfiledSteps:
    """Warm up, time the baselines, run the timed window, then the untimed reference window
    when the requested levels record more than the timed one."""
    for _ in range(spec["warmup"]):
        run_step(fn, inputs)
    settle(lambda: run_step(fn, inputs))
    started = time.perf_counter()
    run_step(fn, inputs)
    step_s = time.perf_counter() - started
    steps = spec["steps"]
    # The timed window is the framework's profiler itself, at its defaults, plus the markers.
    overhead = measure_overhead(
        Conditions(
            bare=lambda: timed_steps(fn, inputs, steps),
            profiler=lambda: plain_profiler_steps(fn, inputs, steps),
            irprof=lambda: plain_profiler_steps(fn, inputs, steps, marker=True),
        ),
        lambda: profiler_steps(fn, inputs, steps, logdir, marker=True),
        steps,
    )
    wanted = requested_tracer_options(spec["host_level"], spec["python_level"])
    reference_levels: dict[str, int] | None = None
    reference_steps = 0
    if spec["host_level"] > TIMED_LEVELS["host_tracer_level"] or spec["python_level"] > 0:
        reference_levels, reference_steps = wanted, min(spec["steps"], REFERENCE_STEPS)
        port = free_port()
        tf.profiler.experimental.server.start(port)
        traced_window(fn, inputs, reference_steps, wanted, reference_logdir, port, step_s)
    levels_text = ", ".join(f"{k} {v}" for k, v in TIMED_LEVELS.items())
    overhead["profiler"] = "tf.profiler.experimental.start(logdir) at its defaults"
    overhead["timed_steps"] = (
        f"tf.profiler.experimental.start at its defaults ({levels_text}), "
        "an irprof_step marker per step"
    )
    return ProfiledSteps(step_s, overhead, TIMED_LEVELS, reference_levels, reference_steps)
