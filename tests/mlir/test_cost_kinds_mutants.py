"""Op kinds from op names: torch's namespaced names, trailing underscores, short names.

Written from the mutants of `mlir/cost_kinds.py` that the cost-model tests let through; each
expected kind is read off the name by the documented rule (the op part after a torch
namespace, without in-place underscores; else the last component), lower case.
"""

from __future__ import annotations

import pytest

from irprof.mlir.cost_kinds import op_kind


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("tf.Conv2D", "conv2d"),
        ("linalg.matmul", "matmul"),
        ("stablehlo.dot_general", "dot_general"),
        ("torch.aten.add.Tensor", "add"),  # the overload is not the kind
        ("torch.aten.relu_", "relu"),  # three parts: in-place underscore dropped
        ("torch.aten.add_.Tensor", "add"),
        ("torch.aten._softmax", "_softmax"),  # a leading underscore stays
        ("torch.aten.__and__.Tensor", "__and"),
        ("torch.aten._", "_"),  # nothing left without underscores: the name as it is
        ("torch.prim.ListConstruct", "listconstruct"),
        ("torch.prims.convert_element_type", "convert_element_type"),
        ("torch.onnx.MatMul", "matmul"),
        ("torch.custom.Foo.bar", "bar"),  # not a torch namespace: the last part
        ("torch.aten", "aten"),  # two parts: the last one
        ("torch.constant.int", "int"),
        ("Relu", "relu"),
    ],
)
def test_op_kind(name: str, kind: str) -> None:
    assert op_kind(name) == kind
