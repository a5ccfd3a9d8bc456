"""The stepping half of `irprof capture jax`'s child: the entry's result, the training step, the
timed runs. Imported only by `jax_runner` (the child), so jax is still never imported by `irprof`.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/steps_runner.py`.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from irprof.capture.entry import EntryError, accepts_mode
from irprof.capture.step_overhead import Conditions, measure_overhead

MODES = ("infer", "train")
DEFAULT_LEARNING_RATE = 0.01
STEP_MARKER = "irprof_step"
OPTIMIZER_SCOPE = "sgd"
SETTLE_S = 0.5  # unprofiled steps before the overhead is timed (on top of --warmup)
SHARDY_FLAG = "jax_use_shardy_partitioner"
SHARDY_OP = re.compile(r"^\s*(%[^=]*= )?sdy\.", re.MULTILINE)  # an op of the `sdy` dialect


@dataclass(frozen=True)
class StepSpec:
    """What to lower and run: the step function, its arguments and how a step follows another."""

    function: Callable[..., Any]
    args: tuple[Any, ...]
    mode: str
    polymorphic_shapes: tuple[Any, ...] | None = None
    learning_rate: float | None = None

    def next_args(self, args: tuple[Any, ...], outputs: Any) -> tuple[Any, ...]:
        """Arguments of the following step: training feeds the updated parameters back."""
        if self.mode == "train":
            return (outputs[0], *args[1:])
        return args


def call_entry(factory: Callable[..., Any], mode: str, where: str) -> Any:
    """Call the entry for `mode`; an entry without a `mode` argument can only infer."""
    if accepts_mode(factory):
        return factory(mode=mode)
    if mode != "infer":
        raise EntryError(f"{where} takes no `mode` argument; define {where}(mode='infer') to train")
    return factory()


def step_spec(produced: Any, mode: str, where: str) -> StepSpec:
    """Check what the entry returned for `mode` and build the step to profile."""
    main_key = "loss" if mode == "train" else "function"
    if isinstance(produced, tuple) and len(produced) == 2:
        produced = {main_key: produced[0], "args": produced[1]}
    allowed = {main_key, "args", "polymorphic_shapes" if mode == "infer" else "learning_rate"}
    if not isinstance(produced, dict) or not {main_key, "args"} <= set(produced):
        shape = "(loss_fn, (params, *batch))" if mode == "train" else "(function, example_args)"
        raise EntryError(
            f"{where} must return {shape} or a dict with {main_key!r} and 'args' for --mode {mode}"
        )
    unknown = set(produced) - allowed
    if unknown:
        raise EntryError(f"{where} returned unknown keys {sorted(unknown)} for --mode {mode}")
    function, args = produced[main_key], produced["args"]
    if not callable(function) or not isinstance(args, tuple | list):
        raise EntryError(
            f"{where}: {main_key!r} must be callable and 'args' a tuple; got "
            f"{type(function).__name__} and {type(args).__name__}"
        )
    args = tuple(args)
    if mode == "infer":
        shapes = produced.get("polymorphic_shapes")
        if shapes is not None and (
            not isinstance(shapes, tuple | list) or len(shapes) != len(args)
        ):
            raise EntryError(f"{where}: 'polymorphic_shapes' needs one entry per argument")
        return StepSpec(function, args, mode, tuple(shapes) if shapes is not None else None)
    if not args:
        raise EntryError(f"{where}: --mode train needs the parameters as the first argument")
    rate = float(produced.get("learning_rate", DEFAULT_LEARNING_RATE))
    return StepSpec(sgd_step(function, rate), args, mode, None, rate)


def sgd_step(loss_fn: Callable[..., Any], learning_rate: float) -> Callable[..., Any]:
    """`train_step(params, *batch) -> (new_params, loss)`: value_and_grad, then plain SGD.

    Only the floating-point leaves of `params` are differentiated and updated; integer, boolean
    and PRNG-key leaves (a Flax NNX state's RNG counters and keys, step counts) pass through
    unchanged, as an optimizer leaves them.
    """

    def update(path: Any, param: Any, grad: Any) -> Any:
        name = jax.tree_util.keystr(path, simple=True, separator="/") or "params"
        with jax.named_scope(f"{OPTIMIZER_SCOPE}/{name}"):
            return param - learning_rate * grad

    def train_step(params: Any, *batch: Any) -> tuple[Any, Any]:
        leaves, tree = jax.tree_util.tree_flatten_with_path(params)
        trained = [i for i, (_, leaf) in enumerate(leaves) if is_trainable(leaf)]

        def loss_of(values: list[Any]) -> Any:
            merged = [leaf for _, leaf in leaves]
            for i, value in zip(trained, values, strict=True):
                merged[i] = value
            return loss_fn(jax.tree_util.tree_unflatten(tree, merged), *batch)

        loss, grads = jax.value_and_grad(loss_of)([leaves[i][1] for i in trained])
        updated = [leaf for _, leaf in leaves]
        for i, grad in zip(trained, grads, strict=True):
            updated[i] = update(leaves[i][0], leaves[i][1], grad)
        return jax.tree_util.tree_unflatten(tree, updated), loss

    return train_step


def is_trainable(leaf: Any) -> bool:
    """A leaf SGD updates: an array or number of a floating or complex dtype."""
    dtype = getattr(leaf, "dtype", None)
    if dtype is None:
        return isinstance(leaf, float | complex)
    return bool(jax.numpy.issubdtype(dtype, jax.numpy.inexact))


def stablehlo_text(spec: StepSpec) -> tuple[str, Any]:
    """The IR level's text and the lowered (concrete-shape) computation that is compiled.

    A function that constrains shardings (Flax NNX's RNG streams do, on an empty mesh) lowers to
    Shardy's `sdy` ops, a dialect the MLIR bindings irprof parses with do not have. It is then
    lowered again with JAX's GSPMD partitioner, which writes the same constraints as
    `stablehlo.custom_call @Sharding` (on one device neither moves data), and that lowering is
    both the IR level and what is compiled and profiled.
    """
    jitted = jax.jit(spec.function)
    lowered = jitted.lower(*spec.args)
    text = str(lowered.as_text(debug_info=True))
    if SHARDY_OP.search(text) and getattr(jax.config, SHARDY_FLAG):
        jax.config.update(SHARDY_FLAG, False)  # type: ignore[no-untyped-call]
        jitted = jax.jit(spec.function)
        lowered = jitted.lower(*spec.args)
        text = str(lowered.as_text(debug_info=True))
    if spec.polymorphic_shapes is None:
        return text, lowered
    from jax import export

    symbolic = export.symbolic_args_specs(spec.args, spec.polymorphic_shapes)
    exported = export.export(jitted)(*symbolic)
    return str(exported.mlir_module()), lowered


def _timed_steps(
    compiled: Any, spec: StepSpec, count: int, marker: bool = False
) -> tuple[list[int], tuple[Any, ...]]:
    args = spec.args
    durations = []
    for step in range(count):
        started = time.perf_counter_ns()
        if marker:
            with jax.profiler.StepTraceAnnotation(STEP_MARKER, step_num=step):
                outputs = jax.block_until_ready(compiled(*args))  # type: ignore[no-untyped-call]
        else:
            outputs = jax.block_until_ready(compiled(*args))  # type: ignore[no-untyped-call]
        durations.append(time.perf_counter_ns() - started)
        args = spec.next_args(args, outputs)
    return durations, args


def run_steps(
    compiled: Any, spec: StepSpec, steps: int, warmup: int, logdir: Path
) -> dict[str, Any]:
    """Warm up, time the bare and plain-profiler steps, then irprof's session into `logdir`;
    returns the overhead record."""
    _timed_steps(compiled, spec, warmup)
    # Unprofiled steps for half a second more: step times keep falling over a process's first
    # hundreds of steps, which would favour whichever condition runs later.
    deadline = time.perf_counter() + SETTLE_S
    while time.perf_counter() < deadline:
        _timed_steps(compiled, spec, 1)

    def profiled(logdir: str, marker: bool) -> list[int]:
        with jax.profiler.trace(logdir, create_perfetto_trace=marker):
            return _timed_steps(compiled, spec, steps, marker=marker)[0]

    def dropped(marker: bool) -> list[int]:
        with tempfile.TemporaryDirectory(prefix="irprof-jax-plain-") as plain_dir:
            return profiled(plain_dir, marker)

    overhead = measure_overhead(
        Conditions(
            bare=lambda: _timed_steps(compiled, spec, steps)[0],
            profiler=lambda: dropped(marker=False),
            irprof=lambda: dropped(marker=True),
        ),
        lambda: profiled(str(logdir), marker=True),
        steps,
    )
    overhead["profiler"] = "jax.profiler.trace(logdir) at its defaults"
    overhead["timed_steps"] = (
        "jax.profiler.trace defaults, a StepTraceAnnotation per step "
        "(Perfetto trace written after the session)"
    )
    return overhead
