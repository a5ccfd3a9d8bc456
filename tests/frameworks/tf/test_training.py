"""TF training steps: forward, backward and optimizer phases, and each gradient op linked to the
forward op it differentiates (gradient name scopes narrowed by def-use).

`cnn-train` is a real capture (tests/fixtures/tf/README.md); the ambiguous cases are built in
code as TF-dialect MLIR.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.frameworks.tf.training import is_gradient_name, training_phases
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module

TRAIN = Path(__file__).parents[2] / "fixtures" / "tf" / "cnn-train"


def test_gradient_scopes_are_recognised() -> None:
    assert is_gradient_name("gradient_tape/model/dense/MatMul/MatMul_1")
    assert is_gradient_name("gradients_2/model/dense/MatMul_grad/MatMul")
    assert not is_gradient_name("model/gradient_tape/x")
    assert not is_gradient_name("gradient_tape")
    assert not is_gradient_name("sgd/Mul")


@pytest.mark.parametrize("level", ["tf", "tf-standard", "post-grappler"])
def test_phases_add_up_and_every_gradient_op_is_linked(level: str) -> None:
    """GIVEN one SGD step of the CNN at every level THEN forward, backward and optimizer time are
    each measured, sum with the unattributed rest to the profiled time, and every non-trivial
    gradient op names its forward op(s)."""
    result = CORRELATOR.correlate(RunBundle(TRAIN), level, CorrelationOptions())
    training = result.opprofile.totals["training"]
    phases = training["phases_ns"]
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0
    assert training["phases_profiled_ns"] == {
        k: v for k, v in phases.items() if k != "unattributed"
    }
    assert sum(phases.values()) == result.coverage.profiled_ns
    assert result.coverage.extra["training"]["phases_ns"] == phases
    assert training["backward_ops"] == training["backward_ops_linked"] >= 14
    assert training["backward_linked_ns"] == phases["backward"]


@pytest.mark.parametrize(
    ("gradient", "forward"),
    [
        ("gradient_tape/tf_cnn_1/conv_1/convolution/Conv2DBackpropFilter", "tf.Conv2D"),
        ("gradient_tape/tf_cnn_1/conv_1/ReluGrad", "tf.Relu"),
        ("gradient_tape/tf_cnn_1/conv_1/BiasAdd/BiasAddGrad", "tf.BiasAdd"),
        ("gradient_tape/tf_cnn_1/pool_1/MaxPool2d/MaxPoolGrad", "tf.MaxPool"),
        ("gradient_tape/tf_cnn_1/dense1_1/MatMul/MatMul_1", "tf.MatMul"),
        ("gradient_tape/tf_cnn_1/dense1_1/ReluGrad", "tf.Relu"),
    ],
)
def test_gradient_ops_link_to_the_op_they_differentiate(gradient: str, forward: str) -> None:
    """GIVEN `ReluGrad` in scope `conv_1`, which also holds the conv and its bias add THEN the
    def-use edge (it reads the Relu's output) picks the Relu; the others by their own scope."""
    bundle = RunBundle(TRAIN)
    view = TfOpIndex.of(bundle.ir("tf-standard"))
    phases = training_phases(view)
    assert phases is not None
    (position,) = view.resolve(gradient)
    (linked,) = phases.forward_of[position]
    scope = gradient.removeprefix("gradient_tape/").rsplit("/", 1)[0]
    assert view.infos[linked].op_name == forward
    assert (view.infos[linked].keys.name or "").startswith(scope.rsplit("/", 1)[0])


def test_optimizer_and_counter_are_told_apart_from_the_model() -> None:
    bundle = RunBundle(TRAIN)
    view = TfOpIndex.of(bundle.ir("tf-standard"))
    phases = training_phases(view)
    assert phases is not None
    by_name = {view.infos[p].keys.name: phase for p, phase in phases.phase_of.items()}
    assert by_name["sgd_1/Mul"] == by_name["sgd_1/AssignSubVariableOp"] == "optimizer"
    assert by_name["sgd_1/Cast/ReadVariableOp"] == "optimizer"  # the learning rate
    assert by_name["tf_cnn_1/conv_1/convolution"] == "forward"
    assert by_name["sparse_categorical_crossentropy/Sum"] == "forward"
    assert by_name["AssignVariableOp"] == "other"  # the step counter: off loss and gradients


def test_an_inference_graph_has_no_training_record() -> None:
    result = CORRELATOR.correlate(RunBundle(TRAIN.parent / "cnn-infer"), "tf", CorrelationOptions())
    assert "training" not in result.opprofile.totals


SCOPES = """
!a = tensor<4x8xf32>
!w = tensor<8x8xf32>
module {
  func.func @main(%x: !a, %w: !w, %g: !a, %lr: tensor<f32>) -> (!a, !w) {
    %0 = "tf.MatMul"(%x, %w) : (!a, !w) -> !a loc("m/d/MatMul")
    %1 = "tf.Relu"(%0) : (!a) -> !a loc("m/d/Relu")
    %2 = "tf.Tanh"(%1) : (!a) -> !a loc("m/d/Tanh")
    %3 = "tf.ReluGrad"(%g, %1) : (!a, !a) -> !a loc("gradient_tape/m/d/ReluGrad")
    %4 = "tf.Mul"(%g, %g) : (!a, !a) -> !a loc("gradient_tape/m/d/mul")
    %5 = "tf.MatMul"(%x, %3) {transpose_a = true} : (!a, !a) -> !w loc(#dw)
    %6 = "tf.Mul"(%5, %lr) : (!w, tensor<f32>) -> !w loc("sgd/Mul")
    %7 = "tf.Sub"(%w, %6) : (!w, !w) -> !w loc("sgd/sub")
    %8 = "tf.Neg"(%4) : (!a) -> !a loc("gradient_tape/other/Neg")
    return %2, %7 : !a, !w
  }
}
#dw = loc("gradient_tape/m/d/MatMul/MatMul_1")
"""


def test_scope_links_by_def_use_else_name_every_candidate() -> None:
    """GIVEN three forward ops in scope `m/d` THEN ReluGrad (reads the Relu) gets the Relu, the
    MatMul gradient its own scope's MatMul, a `mul` touching no forward value all three (never
    one guessed), and a gradient of a scope with no forward op is unlinked with a reason."""
    module = parse_module(SCOPES, make_context())
    view = TfOpIndex.of(module)
    phases = training_phases(view)
    assert phases is not None

    def linked(name: str) -> list[str]:
        (position,) = view.resolve(name)
        return sorted(view.infos[p].keys.name or "" for p in phases.forward_of.get(position, ()))

    assert linked("gradient_tape/m/d/ReluGrad") == ["m/d/Relu"]
    assert linked("gradient_tape/m/d/MatMul/MatMul_1") == ["m/d/MatMul"]
    assert linked("gradient_tape/m/d/mul") == ["m/d/MatMul", "m/d/Relu", "m/d/Tanh"]
    (orphan,) = view.resolve("gradient_tape/other/Neg")
    assert "no forward op" in phases.unlinked[orphan]
    phase = {view.infos[p].keys.name: ph for p, ph in phases.phase_of.items()}
    assert phase["sgd/Mul"] == phase["sgd/sub"] == "optimizer"
    assert phase["m/d/Tanh"] == phase["m/d/MatMul"] == "forward"
