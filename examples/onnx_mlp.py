"""A small ONNX model built with `onnx.helper` for `irprof capture onnx`: conv, relu, flatten, a
linear layer, GELU written out as erf arithmetic, LayerNormalization written out as reductions,
and a last MatMul. ONNX Runtime fuses several of these (Conv+Relu, MatMul+Add into Gemm, the
GELU and LayerNorm patterns), which is what the correlator maps back to the source nodes.

`irprof_model()` returns the ModelProto (seeded weights); `python examples/onnx_mlp.py OUT.onnx`
saves it.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
CHANNELS, SIZE, HIDDEN, CLASSES = 4, 8, 32, 10


def _weights() -> list[onnx.TensorProto]:
    rng = np.random.default_rng(0)

    def tensor(name: str, *shape: int, scale: float = 0.1) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    def scalar(name: str, value: float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(value, dtype=np.float32), name)

    return [
        tensor("conv.weight", CHANNELS, 3, 3, 3),
        tensor("conv.bias", CHANNELS),
        tensor("fc1.weight", CHANNELS * SIZE * SIZE, HIDDEN),
        tensor("fc1.bias", HIDDEN),
        scalar("sqrt2", float(np.sqrt(2.0))),
        scalar("one", 1.0),
        scalar("half", 0.5),
        scalar("two", 2.0),
        scalar("eps", 1e-5),
        numpy_helper.from_array(np.ones(HIDDEN, np.float32), "ln.scale"),
        numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "ln.bias"),
        tensor("fc2.weight", HIDDEN, CLASSES),
    ]


def _nodes() -> list[onnx.NodeProto]:
    node = helper.make_node
    return [
        node("Conv", ["images", "conv.weight", "conv.bias"], ["conv"], name="conv", pads=[1] * 4),
        node("Relu", ["conv"], ["relu"], name="relu"),
        node("Flatten", ["relu"], ["flat"], name="flatten", axis=1),
        node("MatMul", ["flat", "fc1.weight"], ["fc1.mm"], name="fc1.matmul"),
        node("Add", ["fc1.mm", "fc1.bias"], ["fc1"], name="fc1.bias_add"),
        # GELU(x) = x * 0.5 * (1 + erf(x / sqrt 2))
        node("Div", ["fc1", "sqrt2"], ["gelu.scaled"], name="gelu.div"),
        node("Erf", ["gelu.scaled"], ["gelu.erf"], name="gelu.erf"),
        node("Add", ["gelu.erf", "one"], ["gelu.shifted"], name="gelu.add"),
        node("Mul", ["fc1", "gelu.shifted"], ["gelu.product"], name="gelu.mul"),
        node("Mul", ["gelu.product", "half"], ["gelu"], name="gelu.half"),
        # LayerNorm over the last axis, as reductions
        node("ReduceMean", ["gelu"], ["ln.mean"], name="ln.mean", axes=[-1]),
        node("Sub", ["gelu", "ln.mean"], ["ln.centered"], name="ln.sub"),
        node("Pow", ["ln.centered", "two"], ["ln.squared"], name="ln.pow"),
        node("ReduceMean", ["ln.squared"], ["ln.var"], name="ln.var", axes=[-1]),
        node("Add", ["ln.var", "eps"], ["ln.var_eps"], name="ln.add_eps"),
        node("Sqrt", ["ln.var_eps"], ["ln.std"], name="ln.sqrt"),
        node("Div", ["ln.centered", "ln.std"], ["ln.normed"], name="ln.div"),
        node("Mul", ["ln.normed", "ln.scale"], ["ln.scaled"], name="ln.mul"),
        node("Add", ["ln.scaled", "ln.bias"], ["ln"], name="ln.add"),
        node("MatMul", ["ln", "fc2.weight"], ["logits"], name="fc2.matmul"),
    ]


def irprof_model() -> onnx.ModelProto:
    """The model, batch dimension symbolic (`batch`, fed as 1 unless `--dim batch=N`)."""
    graph = helper.make_graph(
        _nodes(),
        "onnx_mlp",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])],
        _weights(),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    onnx.save(irprof_model(), sys.argv[1] if len(sys.argv) > 1 else "onnx_mlp.onnx")
