"""XLA names the nodes of a While's body by their full name under the While's scope, with no
branch label (`seq/lstm/while/lstm_cell/MatMul`): the body function holds the node under that
name, with the `@<function>` suffix TF's importer gives the nodes of a function. Found on a
Keras LSTM and GRU under `jit_compile=True`, whose tf level had 15.9% of its time attributed
("TF node names not found at this level") and now has 100%."""

from __future__ import annotations

from iree.compiler import ir

from irprof.frameworks.tf.graph import TfOpIndex

NEEDS_FRAMEWORK = False  # MLIR only: tests/frameworks/conftest.py

MODULE = """
module {
  func.func @main(%x: tensor<f32>) -> tensor<f32> {
    %w:2 = "tf.While"(%x, %x) <{body = @body, cond = @cond, is_stateless = true}>
        : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>) loc("seq/lstm/while")
    %m = "tf.Mul"(%w#0, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("seq/lstm/cell/Mul")
    return %m : tensor<f32>
  }
  func.func private @body(%a: tensor<f32>, %b: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    %m = "tf.Mul"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        loc("seq/lstm/while/cell/Mul@body")
    %t = "tf.Tanh"(%m) : (tensor<f32>) -> tensor<f32> loc("seq/lstm/while/cell/Tanh@body")
    return %t, %b : tensor<f32>, tensor<f32>
  }
  func.func private @cond(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {
    %c = "tf.Less"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<i1>
        loc("seq/lstm/while/Less@cond")
    return %c : tensor<i1>
  }
}
"""


def _view() -> tuple[TfOpIndex, ir.Module]:
    context = ir.Context()
    context.allow_unregistered_dialects = True
    module = ir.Module.parse(MODULE, context)
    return TfOpIndex.of(module), module


def test_a_body_node_is_found_by_its_full_name_in_the_while_s_functions() -> None:
    view, _module = _view()
    (tanh,) = view.resolve("seq/lstm/while/cell/Tanh")
    assert view.function_of[tanh] == "body" and view.infos[tanh].op_name == "tf.Tanh"
    (mul,) = view.resolve("seq/lstm/while/cell/Mul")
    assert view.function_of[mul] == "body"  # not main's `seq/lstm/cell/Mul`
    (less,) = view.resolve("seq/lstm/while/Less")
    assert view.function_of[less] == "cond"
    assert view.resolve("seq/lstm/while/cell/Exp") == []  # no such node anywhere
    assert view.resolve("seq/lstm/cell/Mul") != view.resolve("seq/lstm/while/cell/Mul")
