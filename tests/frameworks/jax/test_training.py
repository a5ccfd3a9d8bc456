"""JAX training steps: phases, backward -> forward links through `transpose(jvp(...))` paths,
and kernels XLA built without metadata placed by structure.

The fixture `mlp_train_run` is a real `irprof capture jax examples/jax_mlp.py --mode train`
(tests/fixtures/jax/README.md); the structural cases are built in code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.frameworks.jax.attribution import plan_kernel
from irprof.frameworks.jax.correlate import CORRELATOR
from irprof.frameworks.jax.hlo import HloInstructionInfo, HloModuleInfo
from irprof.frameworks.jax.ir_index import JaxOpIndex
from irprof.frameworks.jax.orphans import OrphanResolver
from irprof.frameworks.jax.training import phase_of_name, training_phases, unwrap_transpose
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos

TRAIN_RUN = Path(__file__).parents[2] / "fixtures" / "jax" / "mlp_train_run"


@pytest.fixture(scope="module")
def result() -> CorrelationResult:
    """The training fixture correlated once."""
    return CORRELATOR.correlate(RunBundle(TRAIN_RUN), "stablehlo", CorrelationOptions())


def test_names_give_the_phase() -> None:
    assert unwrap_transpose("transpose(transpose(jvp(f)))") == "jvp(f)"
    assert unwrap_transpose("jvp(f)") == "jvp(f)"
    assert phase_of_name("jit(step)/transpose(jvp(loss))/dot_general") == "backward"
    assert phase_of_name("jit(step)/jvp(loss)/while/body/tanh") == "forward"
    assert phase_of_name("jit(step)/sgd/w1/sub") is None
    assert phase_of_name("jit(f)/dot_general") is None


def test_phases_add_up_to_the_profiled_time(result: CorrelationResult) -> None:
    """GIVEN a value_and_grad + SGD step THEN forward, backward and optimizer time are each
    measured and, with the unattributed rest, sum to the profiled time exactly."""
    training = result.opprofile.totals["training"]
    phases = training["phases_ns"]
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0
    assert training["phases_profiled_ns"] == {
        k: v for k, v in phases.items() if k != "unattributed"
    }
    assert sum(phases.values()) == result.coverage.profiled_ns
    assert result.coverage.extra["training"]["phases_ns"] == phases
    assert result.coverage.time_coverage >= 0.98


def test_every_backward_op_names_forward_ops_of_its_scope_and_source(
    result: CorrelationResult,
) -> None:
    """GIVEN the transposed ops THEN each is linked to forward ops at its own source position
    whose scope is its own with `transpose(...)` unwrapped; no backward op is left unlinked."""
    training = result.opprofile.totals["training"]
    assert training["backward_ops"] == training["backward_ops_linked"] > 20
    assert training["unlinked_backward"] == []
    assert training["backward_linked_ns"] == training["phases_ns"]["backward"]
    for link in training["backward_by_forward"]:
        # Ops of a private function without frames of their own are named by primitive only.
        named = [name for name in link["forward"] + link["backward_ops"] if " @ " in name]
        assert len({name.rpartition(" @ ")[2] for name in named}) <= 1, link
        for forward in link["forward"]:
            if "/" in forward:
                assert "jvp(" in forward and "transpose(" not in forward, link


def test_the_weight_gradient_convolution_is_measured_and_linked(result: CorrelationResult) -> None:
    """GIVEN XLA's weight-gradient convolution, built without op metadata, and the layout copies
    feeding it THEN their time reaches the backward convolution, linked to the forward one."""
    entries = [e for e in result.opprofile.entries if e.op_name == "stablehlo.convolution"]
    backward = [e for e in entries if "transpose(" in (e.key.name or "")]
    assert len(entries) == 2 and len(backward) == 1
    assert backward[0].data.total_ns > 0
    assert {"convolution", "transpose_copy_fusion"} <= set(backward[0].data.kernels)
    assert not [e for e in result.coverage.unmatched_events if "convolution" in e.name]
    links = result.opprofile.totals["training"]["backward_by_forward"]
    (conv_link,) = [
        link for link in links if any("transpose(jvp())/conv" in op for op in link["backward_ops"])
    ]
    assert [name.split(" @ ")[0] for name in conv_link["forward"]] == [
        "jit(train_step)/jvp()/conv_general_dilated"
    ]


def test_the_sgd_update_is_the_optimizer_phase() -> None:
    bundle = RunBundle(TRAIN_RUN)  # keeps the module (and the ops the index holds) alive
    index = JaxOpIndex(derive_op_infos(bundle.ir("stablehlo")))
    phases = training_phases(index)
    assert phases is not None
    by_name = {
        (index.infos[p].keys.name or ""): phase
        for p, phase in phases.phase_of.items()
        if index.infos[p].keys.name
    }
    sgd = {name: phase for name, phase in by_name.items() if "/sgd/" in name}
    assert sgd and set(sgd.values()) == {"optimizer"}


def test_an_inference_module_has_no_training_record() -> None:
    inference = CORRELATOR.correlate(
        RunBundle(TRAIN_RUN.parent / "mlp_run"), "stablehlo", CorrelationOptions()
    )
    assert "training" not in inference.opprofile.totals
    assert "training" not in inference.coverage.extra


DOTS = """
!a = tensor<4x8xf32>
!b = tensor<8x8xf32>
module @jit_g {
  func.func public @main(%a: !a, %b: !b) -> !a {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (!a, !b) -> !a loc(#d1)
    %1 = stablehlo.dot_general %0, %b, contracting_dims = [1] x [0] : (!a, !b) -> !a loc(#d2)
    %2 = stablehlo.dot_general %1, %b, contracting_dims = [1] x [0] : (!a, !b) -> !a loc(#d3)
    return %2 : !a
  }
}
#d1 = loc("jit(g)/dot_general"("g.py":10:8))
#d2 = loc("jit(g)/dot_general"("g.py":11:8))
#d3 = loc("jit(g)/dot_general"("g.py":12:8))
"""


def _instruction(
    name: str, opcode: str, line: int = 0, operands: tuple[str, ...] = (), elements: int = 32
) -> HloInstructionInfo:
    op_name = "jit(g)/dot_general" if line else ""
    chain = (f"g.py:{line}:8",) if line else ()
    return HloInstructionInfo(name, opcode, op_name, chain, 0.0, elements, "main", (), operands)


MODULES: list[object] = []  # the parsed modules outlive the tests: the indexes hold their ops


def dots_index() -> JaxOpIndex:
    """An index of DOTS whose module stays alive."""
    module = parse_module(DOTS, make_context())
    MODULES.append(module)
    return JaxOpIndex(derive_op_infos(module))


def _program(*instructions: HloInstructionInfo) -> HloModuleInfo:
    by_name = {i.name: i for i in instructions}
    return HloModuleInfo("jit_g", 1, by_name, {"main": tuple(by_name)})


def test_a_lost_compute_op_and_its_layout_copy_are_placed_when_unique() -> None:
    """GIVEN dots 1 and 2 in the program with metadata, and a bare `dot` fed by a bare `copy`
    THEN the bare dot goes to the one dot_general no instruction reaches (line 12), and the copy
    follows the dot it feeds."""
    index = dots_index()
    program = _program(
        _instruction("dot.1", "dot", 10),
        _instruction("dot.2", "dot", 11, ("dot.1",)),
        _instruction("copy.1", "copy", operands=("dot.2",)),
        _instruction("dot.3", "dot", operands=("copy.1",)),
    )
    orphans = OrphanResolver(program, index)
    for kernel in ("dot.3", "copy.1"):
        plan = plan_kernel(program, index, kernel, "flops", orphans)
        ((fraction, targets, _),) = plan.shares
        assert fraction == 1.0
        assert [index.infos[t.position].keys.source for t in targets] == ["g.py:12:8"]


def test_an_ambiguous_or_mismatched_lost_op_stays_unattributed() -> None:
    """GIVEN two dot_generals no instruction reaches THEN a bare dot is not guessed; GIVEN one
    with another element count THEN neither; a copy that only feeds the result stays listed."""
    index = dots_index()
    two_lost = _program(_instruction("dot.1", "dot", 10), _instruction("dot.x", "dot"))
    resolver = OrphanResolver(two_lost, index)
    assert not plan_kernel(two_lost, index, "dot.x", "flops", resolver).shares
    other_size = _program(
        _instruction("dot.1", "dot", 10),
        _instruction("dot.2", "dot", 11),
        _instruction("dot.x", "dot", elements=64),
    )
    resolver = OrphanResolver(other_size, index)
    assert not plan_kernel(other_size, index, "dot.x", "flops", resolver).shares
    to_result = _program(
        _instruction("dot.1", "dot", 10),
        _instruction("copy.1", "copy", operands=("dot.1",)),
        _instruction("tuple.1", "tuple", operands=("copy.1",)),
    )
    plan = plan_kernel(to_result, index, "copy.1", "flops", OrphanResolver(to_result, index))
    assert not plan.shares and "without op metadata" in plan.reason
