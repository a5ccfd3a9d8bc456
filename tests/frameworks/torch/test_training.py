"""PyTorch training steps: phases, backward events linked to forward calls, the optimizer bucket.

Unit tests build small Kineto-shaped traces in code; the others read the shipped capture of
examples/zoo/torch_cnn_train.py (tests/fixtures/torch/train, `--mode train`).
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.correlate.base import CorrelationOptions
from irprof.errors import CaptureError, UsageError
from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch
from irprof.frameworks.torch.correlate import CORRELATOR, load_torch_run
from irprof.frameworks.torch.events import (
    FxCall,
    FxProgram,
    OpEvent,
    match_events,
    top_level_op_events,
)
from irprof.frameworks.torch.locations import FxNodeName
from irprof.frameworks.torch.training import (
    ENGINE_PREFIX,
    GRAD_MODE_REASON,
    link_backward,
    nested_grad_ops_ns,
)
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

TRAIN = Path(__file__).parents[2] / "fixtures" / "torch" / "train"
OP = EventKind.FRAMEWORK_OP
# Call stacks as the reference step records them: the phase function of the capture, innermost
# frames first, then the module chain.
FORWARD = "nn.Module: Net_0;irprof/frameworks/torch/steps_runner.py(80): irprof_forward_phase;"
BACKWARD = "irprof/frameworks/torch/steps_runner.py(83): irprof_backward_phase;"
OPTIMIZER = "irprof/frameworks/torch/steps_runner.py(86): irprof_optimizer_phase;"


class StepBuilder:
    """One training step on one thread: top-level events with nested children and flows."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()
        self.track = self.builder.track(1, 1)
        self.clock = 1_000
        self.rows: dict[str, int] = {}

    def event(self, name: str, stack: str, *, seq: int | None = None, dur: int = 100) -> int:
        """A top-level event; returns its row."""
        args: dict[str, Any] = {"Call stack": stack}
        if seq is not None:
            args["Sequence number"] = seq
        row = self.builder.add(self.clock, dur, self.track, name, OP, args)
        self.rows[name] = row
        self.clock += dur + 10
        return row

    def child(self, parent: int, name: str, *, seq: int | None = None) -> int:
        """An event nested at the start of `parent`."""
        args = {"Sequence number": seq} if seq is not None else {}
        ts = self.builder._ts[parent] + 1
        return self.builder.add(ts, 5, self.track, name, OP, args)

    def build(self) -> Trace:
        """The trace with one ProfilerStep marker around everything."""
        self.builder.add(0, self.clock + 1_000, self.track, "ProfilerStep#1", EventKind.STEP)
        return self.builder.build(sort=False)


def _program(**fields: Any) -> FxProgram:
    calls = [
        FxCall(0, "linear", "aten::linear", ("Net_0",)),
        FxCall(1, "add_", "aten::add_", ("Net_0",)),
        FxCall(2, "batch_norm", "aten::batch_norm", ("Net_0",)),
        FxCall(3, "cross_entropy_loss", "aten::cross_entropy_loss", ("Net_0",)),
    ]
    return FxProgram(calls, "train", **fields)


def _links(trace: Trace, program: FxProgram) -> dict[str, tuple[tuple[str, ...], str]]:
    events = top_level_op_events(trace)
    forward = [e for e in events if e.phase == "forward"]
    matched = match_events(forward, program.calls)
    links = link_backward(trace, events, matched.nodes_of, program)
    return {
        event.name.removeprefix(ENGINE_PREFIX): (
            links.nodes_of.get(event.row, ()),
            links.how.get(event.row) or links.unlinked[event.row],
        )
        for event in events
        if event.phase == "backward"
    }


def test_backward_event_follows_kinetos_flow_to_the_forward_call_it_differentiates() -> None:
    """AddmmBackward0's node was created by aten::addmm inside aten::linear: a flow joins them."""
    step = StepBuilder()
    linear = step.event("aten::linear", FORWARD, seq=4)
    addmm = step.child(linear, "aten::addmm", seq=5)
    step.event("aten::cross_entropy_loss", FORWARD, seq=6)
    backward = step.event(ENGINE_PREFIX + "AddmmBackward0", BACKWARD, seq=5)
    node = step.child(backward, "AddmmBackward0", seq=5)
    step.builder.flow(addmm, node, 1)
    links = _links(step.build(), _program())
    assert links["AddmmBackward0"] == (("linear",), "forward/backward flow")


def test_without_flows_the_sequence_number_names_the_op_that_created_the_node() -> None:
    """aten::add_ (a buffer update) records the number too; the node's creator is the last."""
    step = StepBuilder()
    step.event("aten::add_", FORWARD, seq=9)
    step.event("aten::batch_norm", FORWARD, seq=9)
    step.event(ENGINE_PREFIX + "NativeBatchNormBackward0", BACKWARD, seq=9)
    links = _links(step.build(), _program())
    assert links["NativeBatchNormBackward0"] == (("batch_norm",), "autograd sequence number")


def test_backward_event_no_forward_event_created_is_left_unlinked_with_the_reason() -> None:
    step = StepBuilder()
    step.event("aten::linear", FORWARD, seq=4)
    step.event(ENGINE_PREFIX + "MulBackward0", BACKWARD, seq=77)
    (nodes, reason) = _links(step.build(), _program())["MulBackward0"]
    assert nodes == ()
    assert "links this autograd node to no forward event" in reason


def test_gradient_accumulation_goes_to_the_calls_reading_each_parameter_in_recorded_order() -> None:
    """AccumulateGrad events carry no sequence number: the k-th is the k-th recorded parameter."""
    step = StepBuilder()
    step.event("aten::linear", FORWARD, seq=4)
    step.event("aten::batch_norm", FORWARD, seq=5)
    first = step.event(ENGINE_PREFIX + "torch::autograd::AccumulateGrad", BACKWARD)
    second = step.event(ENGINE_PREFIX + "torch::autograd::AccumulateGrad", BACKWARD, dur=50)
    program = _program(
        parameters={"fc.weight": ["linear"], "bn.weight": ["batch_norm"]},
        grad_accumulation_order=("bn.weight", "fc.weight"),
    )
    trace = step.build()
    events = top_level_op_events(trace)
    matched = match_events([e for e in events if e.phase == "forward"], program.calls)
    links = link_backward(trace, events, matched.nodes_of, program)
    assert links.nodes_of[first] == ("batch_norm",)
    assert links.nodes_of[second] == ("linear",)
    assert links.how[second] == "gradient accumulation into fc.weight"
    # A step that accumulated a different number of gradients: no guess at which is which.
    short = dict(parameters=program.parameters, grad_accumulation_order=("fc.weight",))
    relinked = link_backward(trace, events, matched.nodes_of, _program(**short))
    assert relinked.nodes_of == {}
    assert "recorded 1 parameters" in relinked.unlinked[first]


def test_the_seed_gradient_goes_to_the_calls_that_produce_the_output() -> None:
    """`loss.backward()` creates the loss's gradient (ones_like) before the engine runs."""
    step = StepBuilder()
    step.event("aten::cross_entropy_loss", FORWARD, seq=6)
    step.event("aten::ones_like", BACKWARD)
    links = _links(step.build(), _program(outputs=("cross_entropy_loss",)))
    assert links["aten::ones_like"] == (
        ("cross_entropy_loss",),
        "gradient seed of the program's output",
    )


def test_phases_come_from_the_capture_functions_on_the_call_stack() -> None:
    step = StepBuilder()
    step.event("aten::linear", FORWARD, seq=4)
    step.event(ENGINE_PREFIX + "AddmmBackward0", BACKWARD, seq=4)
    step.event("aten::add_", OPTIMIZER)
    step.event("aten::relu", "nn.Module: Net_0;model.py(3): forward;")
    phases = {e.name: e.phase for e in top_level_op_events(step.build())}
    assert phases == {
        "aten::linear": "forward",
        ENGINE_PREFIX + "AddmmBackward0": "backward",
        "aten::add_": "optimizer",
        "aten::relu": "forward",  # no capture function on the stack: an inference step
    }


@pytest.fixture(scope="module")
def train_results() -> dict[str, Any]:
    bundle = RunBundle(TRAIN)
    return {
        lv: CORRELATOR.correlate(bundle, lv, CorrelationOptions()) for lv in ("torch", "linalg")
    }


def test_training_capture_attributes_every_backward_event_and_conserves_time(
    train_results: dict[str, Any],
) -> None:
    """Forward and backward land on ops; the optimizer is its own listed bucket; nothing else."""
    coverage = train_results["torch"].coverage
    training = coverage.extra["training"]
    profiled = training["phases_profiled_ns"]
    assert min(profiled.values()) > 0
    assert sum(profiled.values()) == coverage.profiled_ns
    assert training["phases_ns"]["forward"] == profiled["forward"]
    assert training["backward_linked_ns"] == profiled["backward"] > 0
    assert training["backward_unlinked_ns"] == 0
    assert sum(training["phases_ns"].values()) == coverage.profiled_ns
    listed = {event.name: event for event in coverage.unmatched_events}
    assert all(name.startswith("optimizer: ") for name in listed)
    assert sum(event.total_ns for event in listed.values()) == profiled["optimizer"]
    assert coverage.attributed_ns + profiled["optimizer"] == coverage.profiled_ns
    assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial


def test_backward_time_lands_on_the_forward_call_the_autograd_node_belongs_to(
    train_results: dict[str, Any],
) -> None:
    """Structure, not names: each backward kernel's ops are the FX call Kineto linked."""
    by_call: dict[str, set[str]] = defaultdict(set)
    for entry in train_results["torch"].opprofile.entries:
        parsed = FxNodeName.parse(entry.key.name or "")
        assert parsed is not None
        for kernel in entry.data.kernels:
            by_call[kernel.removeprefix(ENGINE_PREFIX)].add(parsed.module_path + "|" + parsed.node)
    assert by_call["ConvolutionBackward0"] == {"model.conv1|conv2d", "model.conv2|conv2d_1"}
    assert by_call["NativeBatchNormBackward0"] == {"model.bn1|batch_norm"}
    assert by_call["AddmmBackward0"] == {"model.head|linear"}
    assert by_call["NllLossBackward0"] == {"loss|cross_entropy_loss"}
    assert by_call["MulBackward0"] == {"model.drop|dropout"}  # dropout's mask multiply
    # Gradient accumulation: the calls that read the parameters (all of them have a gradient).
    assert by_call["torch::autograd::AccumulateGrad"] == {
        "model.conv1|conv2d", "model.bn1|batch_norm", "model.conv2|conv2d_1", "model.head|linear"
    }  # fmt: skip
    assert by_call["aten::ones_like"] == {"loss|cross_entropy_loss"}  # the seed


def test_linalg_level_carries_phases_down_and_names_what_lowering_folded(
    train_results: dict[str, Any],
) -> None:
    """BatchNorm's `num_batches_tracked += 1` reads only constants of the frozen program."""
    coverage = train_results["linalg"].coverage
    listed = sum(event.total_ns for event in coverage.unmatched_events)
    assert coverage.attributed_ns + listed == coverage.profiled_ns
    folded = [e for e in coverage.unmatched_events if "folded it into a constant" in e.reason]
    assert [e.name.split()[0] for e in folded] == ["torch.aten.add.Scalar"]
    torch_attributed = train_results["torch"].coverage.attributed_ns
    assert coverage.attributed_ns == torch_attributed - folded[0].total_ns
    # Lowering lost the folded op's time: what each phase kept is not known, its time is.
    upper = train_results["torch"].coverage.extra["training"]
    assert coverage.extra["training"] == {
        "phases_profiled_ns": upper["phases_profiled_ns"],
        "buckets": ["optimizer"],
    }


def test_train_run_annotates_with_a_phase_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import shutil

    run = tmp_path / "train"
    shutil.copytree(TRAIN, run)
    assert main(["annotate", str(run), "--level", "torch"]) == 0
    out = capsys.readouterr().out
    assert "training step by phase" in out
    assert "own bucket, no IR op" in out
    assert "capture overhead" in out


def test_train_mode_needs_a_loss_and_an_optimizer(tmp_path: Path) -> None:
    """An inference entry under --mode train: one error naming what the dict must hold."""
    script = tmp_path / "model.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch

            def irprof_model():
                return torch.nn.Linear(3, 2), (torch.randn(4, 3),)
            """
        )
    )
    with pytest.raises(CaptureError, match="--mode train needs a dict with 'loss'"):
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(mode="train"))
    assert not (tmp_path / "run").exists()


def test_train_mode_refuses_the_iree_backend_before_running(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text("x = 1\n")
    with pytest.raises(UsageError, match="--mode train profiles eager PyTorch only"):
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(mode="train", backend="iree"))
    with pytest.raises(UsageError, match="--mode"):
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(mode="fit"))


def test_every_training_event_has_a_phase_from_the_reference_step() -> None:
    run = load_torch_run(RunBundle(TRAIN))
    phases = {event.phase for event in run.events}
    assert phases == {"forward", "backward", "optimizer"}
    assert run.unaligned == {}
    backward = [e for e in run.events if e.phase == "backward"]
    assert all(e.name.startswith(ENGINE_PREFIX) or e.name == "aten::ones_like" for e in backward)


@pytest.mark.slow
def test_an_entry_taking_mode_is_called_with_train_and_a_lambda_loss_leaves_no_irprof_frame(
    tmp_path: Path,
) -> None:
    """GIVEN an entry `irprof_model(mode)` returning an inference tuple unless mode is "train",
    and there a dict whose loss is a lambda (torch.export records no frame of it, only the
    capture's own wrapper calling it) WHEN captured with --mode train THEN the entry was called
    with mode="train" (the capture trains) and no location names irprof's own files."""
    import irprof

    script = tmp_path / "model.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch

            def irprof_model(mode="infer"):
                model = torch.nn.Linear(3, 2)
                inputs = (torch.randn(4, 3),)
                if mode != "train":
                    return model, inputs
                return {
                    "model": model, "inputs": inputs, "targets": (torch.randn(4, 2),),
                    "loss": lambda out, y: ((out - y) ** 2).mean(),
                    "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
                }
            """
        )
    )
    bundle = capture_torch(script, tmp_path / "run", TorchCaptureOptions(mode="train", steps=2))
    assert bundle.manifest().options["mode"] == "train"
    package = str(Path(irprof.__file__).resolve().parent)
    for level in bundle.manifest().ir_levels:
        text = bundle.ir_path(level).read_text()
        assert package not in text and "steps_runner.py" not in text, level
        assert "aten.mse" in text or "aten.pow" in text or "aten.mul" in text  # the loss's ops


def _checkpointed_node(builder: TraceBuilder, track: int, start: int) -> tuple[int, int]:
    """An engine event as activation checkpointing leaves it: the node's own event around
    110 ns of checkpoint machinery, a recompute (two forward ops with sequence numbers, one
    op inside the first, and a view without one between them), 105 ns more, then the node's
    own `aten::mul` (5 ns). Returns (engine row, the node's own ns)."""
    engine = builder.add(start, 1000, track, ENGINE_PREFIX + "MulBackward0", OP, {})
    builder.add(start + 1, 998, track, "MulBackward0", OP, {"Sequence number": 7})
    first = start + 110
    builder.add(first, 300, track, "aten::layer_norm", OP, {"Sequence number": 3})
    builder.add(first + 10, 200, track, "aten::native_layer_norm", OP, {"Sequence number": 3})
    builder.add(first + 320, 20, track, "aten::view", OP, {})
    builder.add(first + 360, 400, track, "aten::addmm", OP, {"Sequence number": 4})
    builder.add(start + 990, 5, track, "aten::mul", OP, {})  # after the recompute: the node's
    builder.add(start + 991, 2, track, "aten::empty", OP, {})  # inside the mul: counted once
    return engine, 5


def test_a_backward_node_that_recomputes_forward_code_keeps_only_its_own_ops() -> None:
    # GIVEN a checkpointed node and a plain one (its mul without a sequence number)
    builder = TraceBuilder()
    track = builder.track(1, 1)
    engine, own = _checkpointed_node(builder, track, 10_000)
    plain = builder.add(20_000, 50, track, ENGINE_PREFIX + "MmBackward0", OP, {})
    builder.add(20_001, 48, track, "MmBackward0", OP, {"Sequence number": 9})
    builder.add(20_002, 40, track, "aten::mm", OP, {})
    builder.add(0, 30_000, track, "ProfilerStep#1", EventKind.STEP)
    trace = builder.build(sort=False)
    events = [
        OpEvent(row, trace.name_of(row), int(trace.ts_ns[row]), int(trace.dur_ns[row]), (),
                phase="backward")
        for row in (engine, plain)
    ]  # fmt: skip
    # THEN the checkpointed node keeps the ns of its own mul; the plain node is untouched
    assert nested_grad_ops_ns(trace, events) == {engine: 1000 - own}


def test_a_forward_event_is_never_carved() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1)
    engine, _ = _checkpointed_node(builder, track, 10_000)
    trace = builder.build(sort=False)
    event = OpEvent(engine, trace.name_of(engine), 10_000, 1000, (), phase="forward")
    assert nested_grad_ops_ns(trace, [event]) == {}


CHECKPOINTED = """
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 256), nn.GELU(),
                                   nn.Linear(256, 64), nn.Dropout(0.1))
        self.head = nn.Linear(64, 4)

    def forward(self, x):
        return self.head(x + checkpoint(self.block, x, use_reentrant=False))


def irprof_model():
    torch.manual_seed(0)
    net = Net()
    return {"model": net, "inputs": (torch.randn(32, 64),),
            "targets": (torch.randint(0, 4, (32,)),), "loss": nn.functional.cross_entropy,
            "optimizer": torch.optim.SGD(net.parameters(), lr=0.1)}
"""


@pytest.mark.timeout(900)
def test_checkpointing_recompute_is_its_own_gap_not_a_backward_nodes_time(tmp_path: Path) -> None:
    """Activation checkpointing reruns the block's forward inside the backward node that first
    needs a saved tensor: the node's event holds the whole recompute. That time is listed
    apart with its reason, so the node is not ranked for the block's forward work."""
    script = tmp_path / "ckpt.py"
    script.write_text(CHECKPOINTED)
    run = tmp_path / "run"
    options = TorchCaptureOptions(mode="train", steps=3, levels=("torch",))
    capture_torch(script, run, options)
    result = CORRELATOR.correlate(RunBundle(run), "torch", CorrelationOptions())
    coverage = result.coverage
    # The recomputed forward ops, found in the trace by the test: framework ops with a sequence
    # number nested in a backward engine event, other than its node's own event (outermost).
    trace = load_torch_run(RunBundle(run)).trace
    ops = [
        (row, int(trace.ts_ns[row]), int(trace.end_ns[row]), int(trace.track[row]),
         trace.name_of(row), "Sequence number" in trace.args(row))
        for row in trace.rows_of_kind(OP).tolist()
    ]  # fmt: skip
    engines = [op for op in ops if op[4].startswith(ENGINE_PREFIX)]
    recomputed = 0
    for engine, start, end, track, name, _ in engines:
        own = name.removeprefix(ENGINE_PREFIX)
        inside = sorted(
            (s, e)
            for row, s, e, t, n, sequence in ops
            if sequence and t == track and row != engine and start <= s and e <= end and n != own
        )
        reach = -1
        for s, e in inside:
            if s >= reach:
                recomputed, reach = recomputed + e - s, e
    assert recomputed > 0  # the capture did recompute inside backward
    gap = sum(e.total_ns for e in coverage.unmatched_events if e.reason == GRAD_MODE_REASON)
    engine_ns = sum(end - start for _, start, end, _, _, _ in engines)
    assert recomputed <= gap < engine_ns
    # conserved: attributed plus every listed event is the profiled time
    listed = sum(e.total_ns for e in coverage.unmatched_events)
    assert coverage.attributed_ns + listed == coverage.profiled_ns
