"""A statically quantized (QDQ) CNN captured through ONNX Runtime: ORT runs each convolution as
its own QLinearConv kernel in NHWC layout, all joined by ORT's own tensors into one region.
Each kernel's measured time must stay with its own convolution's source nodes, not be pooled
over both (the expected sums come from the trace and ORT's optimized graph, read here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from irprof.cli.main import main


def _float_cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(3)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
         helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                          strides=[2, 2]),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("GlobalAveragePool", ["r1"], ["y"], name="pool")],
        "qcnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 24, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 1, 1])],
        [weight("w0", (8, 3, 3, 3)), weight("b0", (8,)), weight("w1", (16, 8, 3, 3)),
         weight("b1", (16,))],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


class _Calibration(CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(4)
        self.batches = iter(
            [{"x": rng.standard_normal((2, 3, 24, 24)).astype(np.float32)} for _ in range(4)]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.batches, None)


def _kernel_ns(run: Path) -> dict[str, int]:
    """ORT node name -> the ns of its kernel events in the profiled runs, from the trace."""
    events: dict[str, int] = {}
    for event in json.loads((run / "trace" / "onnxruntime.json").read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            name = event["name"].removesuffix("_kernel_time")
            events[name] = events.get(name, 0) + event["dur"] * 1000
    return events


def _groups(run: Path) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    """The profile's entries, and each op's event group (None: an op alone in its kernel)."""
    entries: list[dict[str, Any]] = json.loads((run / "opprofile.onnx.json").read_text())["entries"]
    return entries, {entry["key"]["name"]: entry["profile"].get("group") for entry in entries}


def test_each_quantized_convolution_keeps_its_own_kernels_time(tmp_path: Path) -> None:
    onnx.save(_float_cnn(), str(tmp_path / "float.onnx"))
    model = tmp_path / "qdq.onnx"
    quantize_static(
        str(tmp_path / "float.onnx"), str(model), _Calibration(), quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
    )  # fmt: skip
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model), "-o", str(run), "--steps", "3"]) == 0
    assert main(["annotate", str(run)]) == 0
    # GIVEN ORT's graph: its QLinearConv kernels in order, and the layout nodes feeding each
    ran = onnx.load(str(run / "ir" / "onnxruntime.optimized.onnx")).graph.node
    convs = [kernel for kernel in ran if kernel.op_type == "QLinearConv"]
    assert len(convs) == 2, [kernel.op_type for kernel in ran]
    makers = {output: kernel for kernel in ran for output in kernel.output}
    feeding = [
        [makers[name].name for name in conv.input
         if name in makers and makers[name].op_type == "Transpose"]
        for conv in convs
    ]  # fmt: skip
    events = _kernel_ns(run)
    # THEN each convolution's source node sits in a group whose ops hold exactly its kernel's
    # time (and that of the layout Transposes feeding only it), and the two groups differ
    entries, group_of = _groups(run)
    for source_conv, kernel, transposes in zip(("conv0", "conv1"), convs, feeding, strict=True):
        group = group_of[source_conv]
        assert group is not None and kernel.name in group
        held = sum(e["profile"]["total_ns"] for e in entries if e["profile"].get("group") == group)
        assert held == events[kernel.name] + sum(events[name] for name in transposes)
    assert group_of["conv0"] != group_of["conv1"]


def _residual_cnn() -> onnx.ModelProto:
    """A stem convolution, then a downsampling residual block (conv1 -> relu -> conv2, plus a
    1x1 shortcut, added, then a Relu), then a pooling: every convolution a distinct shape."""
    rng = np.random.default_rng(5)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(0.2 * rng.standard_normal(shape).astype(np.float32), name)

    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "ws"], ["s"], name="stem", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["s"], ["rs"], name="stem_relu"),
         helper.make_node("Conv", ["rs", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                          strides=[2, 2]),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["rs", "wd"], ["d"], name="down", strides=[2, 2]),
         helper.make_node("Add", ["c2", "d"], ["sum"], name="add"),
         helper.make_node("Relu", ["sum"], ["r"], name="relu"),
         helper.make_node("GlobalAveragePool", ["r"], ["y"], name="pool")],
        "residual",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32, 1, 1])],
        [weight("ws", (16, 3, 3, 3)), weight("w1", (32, 16, 3, 3)), weight("w2", (32, 32, 3, 3)),
         weight("wd", (32, 16, 1, 1))],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_each_convolution_of_a_residual_block_keeps_its_own_kernels_time(tmp_path: Path) -> None:
    """At the default level ORT runs the block in its NCHWc layout (on x86): four convolution
    kernels joined by ORT's own tensors, the add and Relu fused into conv2's kernel as its Sum
    input, the pooling a kernel of its own after them."""
    model = tmp_path / "residual.onnx"
    onnx.save(_residual_cnn(), str(model))
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model), "-o", str(run), "--steps", "3"]) == 0
    assert main(["annotate", str(run)]) == 0
    # GIVEN each source convolution's kernel, found by its (reordered) weight's shape
    ran = onnx.load(str(run / "ir" / "onnxruntime.optimized.onnx")).graph
    shapes = {tensor.name: tuple(tensor.dims) for tensor in ran.initializer}
    kernel_of = {}
    for kernel in ran.node:
        if kernel.op_type == "Conv":
            shape = shapes[kernel.input[1]]
            name = {(32, 16, 3, 3): "conv1", (32, 32, 3, 3): "conv2", (32, 16, 1, 1): "down"}
            if shape in name:
                kernel_of[name[shape]] = kernel.name
    assert set(kernel_of) == {"conv1", "conv2", "down"}, [n.op_type for n in ran.node]
    events = _kernel_ns(run)
    # THEN each one's group holds exactly its kernel's time, three groups
    entries, group_of = _groups(run)
    totals = {entry["key"]["name"]: entry["profile"]["total_ns"] for entry in entries}
    for conv, kernel in kernel_of.items():
        group = group_of[conv]
        held = (
            totals[conv]  # the kernel's only source node: no group
            if group is None
            else sum(
                e["profile"]["total_ns"] for e in entries if e["profile"].get("group") == group
            )
        )
        assert held == events[kernel], conv
    grouped = [group_of[conv] for conv in kernel_of if group_of[conv] is not None]
    assert len(set(grouped)) == len(grouped)
    # AND where ORT's graph shows the add fused into conv2's kernel (its Sum input is the
    # shortcut kernel's output), the add and the Relu after it are in conv2's group
    kernels = {kernel.name: kernel for kernel in ran.node}
    conv2 = kernels[kernel_of["conv2"]]
    if len(conv2.input) > 3 and conv2.input[3] in kernels[kernel_of["down"]].output:
        assert group_of["add"] == group_of["relu"] == group_of["conv2"] is not None
