"""What `capture iree` feeds a function: signatures (builtin and torch tensors), random inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irprof.errors import CaptureError
from irprof.frameworks.iree.inputs import (
    TensorSpec,
    bfloat16_bits,
    function_signature,
    random_inputs,
    write_inputs,
)
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module

TORCH = """func.func @main(%a: !torch.vtensor<[4,3],f32>, %b: !torch.vtensor<[?,11],si64>,
                     %c: !torch.vtensor<[],f32>) -> !torch.vtensor<[4,3],f32> {
  return %a : !torch.vtensor<[4,3],f32>
}
"""
BUILTIN = """func.func @main(%a: tensor<2x?xbf16>, %b: tensor<3xi32>) -> tensor<3xi32> {
  return %b : tensor<3xi32>
}
"""


def test_torch_tensor_signatures_are_read_from_their_spelling() -> None:
    specs = function_signature(parse_module(TORCH, make_context()), "main", "m.mlir")
    assert [spec.render() for spec in specs] == ["4x3xf32", "?x11xi64", "f32"]
    assert specs[1].shape is None and specs[1].element == "i64"  # signless, as IREE's ABI


def test_dynamic_dimensions_are_refused_with_the_argument_named() -> None:
    specs = function_signature(parse_module(BUILTIN, make_context()), "main", "m.mlir")
    assert specs[0].render() == "2x?xbf16"
    with pytest.raises(CaptureError, match=r"m.mlir: argument 0 is 2x\?xbf16"):
        random_inputs(specs, "m.mlir", seed=0)


def test_bfloat16_bits_round_to_nearest_even() -> None:
    values = np.array([1.0, 1.5, -2.0, 1.00390625, 1.01171875], dtype=np.float32)
    # 1 + 2**-8 is halfway between two bf16 values: ties go to the even one (1.0).
    assert bfloat16_bits(values).tolist() == [0x3F80, 0x3FC0, 0xC000, 0x3F80, 0x3F82]


def test_bf16_inputs_are_written_raw_with_their_type(tmp_path: Path) -> None:
    specs = [TensorSpec((2, 3), "bf16"), TensorSpec((3,), "i32")]
    arrays = random_inputs(specs, "m.mlir", seed=0)
    assert arrays[0].dtype == np.uint16 and arrays[1].dtype == np.int32
    written = write_inputs(arrays, tmp_path, specs)
    assert written[0] == f"2x3xbf16=@{tmp_path / 'input_0.bin'}"
    assert (tmp_path / "input_0.bin").stat().st_size == 2 * 6
    assert written[1] == f"@{tmp_path / 'input_1.npy'}"
