"""The stepping half of `irprof capture torch`'s child process: entry, steps, profiler sessions.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/steps_runner.py`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from irprof.capture.entry import EntryError
from irprof.capture.step_overhead import Conditions, measure_overhead
from irprof.frameworks.torch.locations import PHASE_FUNCTIONS

STEP_PREFIX = "ProfilerStep#"  # the name torch's own schedule gives its step annotations
MODES = ("infer", "train")


@dataclass
class ModelSpec:
    """What the entry returned, checked: the module to export and run, and how to step it."""

    model: torch.nn.Module  # in train mode, `TrainingLoss(model, loss)`
    inputs: tuple[Any, ...]  # in train mode, inputs + targets
    dynamic_shapes: Any = None
    optimizer: torch.optim.Optimizer | None = None
    # Keyword inputs (`"inputs"` given as a mapping: what a Hugging Face tokenizer returns)
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        """`train` when there is an optimizer to step."""
        return "train" if self.optimizer is not None else "infer"


class TrainingLoss(torch.nn.Module):
    """The model and its loss as one module: `loss(model(*inputs), *targets)`."""

    def __init__(self, model: torch.nn.Module, loss: Callable[..., Any], inputs: int) -> None:
        super().__init__()
        self.model = model
        self.loss = loss  # an nn.Module loss becomes a submodule, so its calls are named
        self.input_count = inputs

    def forward(self, *arguments: Any, **kwargs: Any) -> Any:
        """The scalar loss of one batch."""
        inputs, targets = arguments[: self.input_count], arguments[self.input_count :]
        return self.loss(self.model(*inputs, **kwargs), *targets)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _arguments(value: Any, where: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`"inputs"` as positional and keyword arguments: a tuple or list is positional, a
    mapping (a dict, a tokenizer's `BatchEncoding`) is by keyword, anything else one argument."""
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise EntryError(f"{where}: 'inputs' as a mapping needs argument names as its keys")
        return (), dict(value)
    return _as_tuple(value), {}


def model_spec(result: Any, mode: str, where: str) -> ModelSpec:
    """Check the entry's `result` for `mode` (`where` names the script and entry in errors)."""
    if isinstance(result, tuple) and len(result) == 2:
        result = {"model": result[0], "inputs": result[1]}
    if not isinstance(result, dict) or "model" not in result or "inputs" not in result:
        raise EntryError(
            f"{where} must return (nn.Module, inputs) or a dict with 'model' and 'inputs' "
            "(and 'loss', 'optimizer', optional 'targets' for --mode train)"
        )
    unknown = set(result) - {"model", "inputs", "dynamic_shapes", "loss", "targets", "optimizer"}
    if unknown:
        raise EntryError(f"{where} returned unknown keys {sorted(unknown)}")
    model = result["model"]
    if not isinstance(model, torch.nn.Module):
        raise EntryError(f"{where} returned {type(model).__name__} as model, not an nn.Module")
    if type(model).__name__ == "OptimizedModule" and hasattr(model, "_orig_mod"):
        # Its profile holds Inductor's generated kernels, not the aten calls the FX nodes are
        # joined by: annotate would find nothing, and blame the trace.
        raise EntryError(
            f"{where} returned a torch.compile'd module; irprof profiles eager PyTorch, whose "
            "aten calls it joins to the exported program: return the module itself "
            "(`compiled._orig_mod`)"
        )
    inputs, kwargs = _arguments(result["inputs"], where)
    if mode == "infer":
        return ModelSpec(model.eval(), inputs, result.get("dynamic_shapes"), kwargs=kwargs)
    loss, optimizer = result.get("loss"), result.get("optimizer")
    if not callable(loss) or not isinstance(optimizer, torch.optim.Optimizer):
        raise EntryError(
            f"{where}: --mode train needs a dict with 'loss' (called as loss(model(*inputs), "
            "*targets)) and 'optimizer' (a torch.optim.Optimizer over the model's parameters)"
        )
    if result.get("dynamic_shapes") is not None:
        raise EntryError(f"{where}: dynamic_shapes is only supported with --mode infer")
    targets = _as_tuple(result.get("targets", ()))
    wrapper = TrainingLoss(model.train(), loss, len(inputs)).train()
    return ModelSpec(wrapper, inputs + targets, None, optimizer, kwargs)


def step_function(spec: ModelSpec) -> Callable[[], None]:
    """One step: a forward pass (inference) or forward, backward and optimizer (train)."""
    model, inputs, kwargs, optimizer = spec.model, spec.inputs, spec.kwargs, spec.optimizer
    if optimizer is None:

        def infer() -> None:
            model(*inputs, **kwargs)

        return infer

    # One Python function per phase, named in `PHASE_FUNCTIONS`: the reference step's call
    # stacks then say which phase ran each op, at no cost to the timed steps (a
    # record_function per phase made a small model's training step ~9% slower).
    def irprof_forward_phase() -> Any:
        return model(*inputs, **kwargs)

    def irprof_backward_phase(loss: Any) -> None:
        loss.backward()

    def irprof_optimizer_phase() -> None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    assert set(PHASE_FUNCTIONS) == {
        f.__name__ for f in (irprof_forward_phase, irprof_backward_phase, irprof_optimizer_phase)
    }

    def train() -> None:
        irprof_backward_phase(irprof_forward_phase())
        irprof_optimizer_phase()

    return train


def _timed(step: Callable[[], None]) -> int:
    started = time.perf_counter_ns()
    step()
    return time.perf_counter_ns() - started


def unprofiled_steps(step: Callable[[], None], count: int) -> list[int]:
    """Wall time (ns) of `count` steps without a profiler."""
    return [_timed(step) for _ in range(count)]


def plain_profiler_steps(step: Callable[[], None], count: int) -> list[int]:
    """Wall time of `count` steps under `torch.profiler.profile()` at its defaults."""
    with profile():
        return [_timed(step) for _ in range(count)]


def _marked_step(step: Callable[[], None], index: int) -> int:
    """One timed step inside a `ProfilerStep#<index>` annotation.

    torch's own `record_function` (and the schedule's `prof.step()`, which uses it) costs more
    than this direct C++ entry point: its Python and dispatcher work between steps made a small
    CNN's ops ~4% slower, this ~2% (`_RecordFunctionFast` costs nothing, but its events are
    `cpu_op`s, which readers take for aten ops).
    """
    handle = torch._C._autograd._record_function_with_args_enter(f"{STEP_PREFIX}{index}")
    try:
        return _timed(step)
    finally:
        torch._C._autograd._record_function_with_args_exit(handle)


def timed_profile(step: Callable[[], None], count: int, trace_path: Path | None) -> list[int]:
    """irprof's timed steps: CPU activity only, a `ProfilerStep#N` annotation per step;
    writes the Chrome trace to `trace_path` (None: dropped)."""
    with profile(activities=[ProfilerActivity.CPU]) as session:
        durations = [_marked_step(step, index) for index in range(count)]
    if trace_path is not None:
        _export(session, trace_path)
    return durations


def reference_profile(
    step: Callable[[], None], trace_path: Path, parameters: list[tuple[str, torch.nn.Parameter]]
) -> list[str]:
    """One untimed step with shapes and verbose call stacks; returns the order in which the
    parameters' gradients were accumulated (train mode), which names each AccumulateGrad event."""
    order: list[str] = []
    handles = [
        parameter.register_post_accumulate_grad_hook(  # type: ignore[no-untyped-call]
            lambda _p, name=name: order.append(name)
        )
        for name, parameter in parameters
        if parameter.requires_grad
    ]
    config = torch._C._profiler._ExperimentalConfig(verbose=True)  # verbose: Python call stacks
    try:
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            with_stack=True,
            experimental_config=config,
        ) as session:
            # Not torch's `record_function`: its first call imports a module, and with_stack
            # now and then recorded a frame of that import with a garbage function name (raw
            # bytes in the JSON, which no reader accepts).
            _marked_step(step, 0)
    finally:
        for handle in handles:
            handle.remove()
    _export(session, trace_path)
    return order


def _export(session: profile, trace_path: Path) -> None:
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    session.export_chrome_trace(str(trace_path))  # `.gz` suffix: torch writes it gzipped


@dataclass(frozen=True)
class StepRecord:
    """What profiling the steps produced besides the trace files."""

    overhead: dict[str, Any]
    grad_accumulation_order: list[str]


def profile_model(
    spec: ModelSpec, steps: int, warmup: int, trace_path: Path, reference_path: Path
) -> StepRecord:
    """Warm up; time `steps` steps without a profiler, under the plain profiler and under
    irprof's timed session (kept as the trace); then the call-stack reference step."""
    step = step_function(spec)
    with torch.set_grad_enabled(spec.mode == "train"):
        for _ in range(warmup):
            step()
        # The export, import and lowering left a large heap: frozen, the collector no longer
        # walks it in the middle of a step; each condition starts from a collected heap (a
        # profiler session leaves its parsed events behind). Like for like: `steps` steps per
        # condition, each session's first step (the slowest: recording starts) included.
        gc.collect()
        gc.freeze()
        overhead = measure_overhead(
            Conditions(
                bare=lambda: unprofiled_steps(step, steps),
                profiler=lambda: plain_profiler_steps(step, steps),
                irprof=lambda: timed_profile(step, steps, None),
            ),
            lambda: timed_profile(step, steps, trace_path),
            steps,
        )
        parameters = list(spec.model.named_parameters()) if spec.mode == "train" else []
        order = reference_profile(step, reference_path, parameters)
    overhead["profiler"] = "torch.profiler.profile() at its defaults"
    overhead["timed_steps"] = "activities=[CPU], a ProfilerStep#N annotation per step"
    return StepRecord(overhead, order)
