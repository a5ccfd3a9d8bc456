"""The `xla` level's ops take the call-site chain of their TF node from the `tf` level."""

from __future__ import annotations

from iree.compiler import ir

from irprof.frameworks.tf.xla_locations import borrow_tf_locations
from irprof.mlir.context import make_context
from irprof.mlir.op_index import derive_op_infos

TF = """
#script = loc("model.py":8:1)
#keras = loc("<sys.path>/keras/src/layers/layer.py":1002:1)
module {
  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "tf.Relu"(%x) : (tensor<2xf32>) -> tensor<2xf32> loc(fused["Relu:",
        callsite("net/relu/Relu"("<sys.path>/tensorflow/python/framework/ops.py":1221:1)
        at callsite(#keras at #script))])
    %1 = "tf.Neg"(%0) : (tensor<2xf32>) -> tensor<2xf32> loc(fused["Neg:",
        callsite("net/neg"("<sys.path>/tensorflow/python/framework/ops.py":1221:1) at #script)])
    return %1 : tensor<2xf32>
  }
}
"""

XLA = """
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %c = stablehlo.constant dense<0.0> : tensor<2xf32> loc(fused["net/relu/Relu",
        "<sys.path>/tensorflow/python/framework/ops.py":1221:0])
    %0 = stablehlo.maximum %x, %c : tensor<2xf32> loc(fused["net/relu/Relu",
        "<sys.path>/tensorflow/python/framework/ops.py":1221:0])
    %1 = stablehlo.negate %0 : tensor<2xf32> loc(fused["net/other",
        "<sys.path>/tensorflow/python/framework/ops.py":1221:0])
    %2 = stablehlo.negate %1 : tensor<2xf32> loc("net/neg")
    return %2 : tensor<2xf32>
  }
}
"""


def test_ops_named_by_a_node_the_tf_level_has_take_its_chain() -> None:
    with make_context():
        tf, xla = ir.Module.parse(TF), ir.Module.parse(XLA)
        relu_chain = next(i.keys.chain for i in derive_op_infos(tf) if i.op_name == "tf.Relu")
        assert borrow_tf_locations(xla, tf) == 2  # the constant and the maximum of net/relu/Relu
        infos = [i for i in derive_op_infos(xla) if i.op_name.startswith("stablehlo.")]
    by_op = [(i.op_name, i.keys.name, i.keys.chain) for i in infos]
    assert by_op[0] == ("stablehlo.constant", "net/relu/Relu", relu_chain)
    assert by_op[1] == ("stablehlo.maximum", "net/relu/Relu", relu_chain)
    assert "model.py:8:1" in relu_chain
    # A node the tf level lacks keeps XLA's frame; a location of another shape is left alone.
    assert by_op[2][1:] == ("net/other", ("<sys.path>/tensorflow/python/framework/ops.py:1221:0",))
    assert by_op[3][1] == "net/neg" and by_op[3][2] == ()
