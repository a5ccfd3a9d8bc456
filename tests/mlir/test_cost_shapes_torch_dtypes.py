"""Bytes of torch tensors of every element type the torch dialect prints, complex and 8-bit
floats included: a complex<fN> element holds two N-bit floats, an f8E4M3FN one byte. Before
the fix these matched no torch shape and counted as 0 bytes, like a handle."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from iree.compiler import ir

from irprof.mlir.cost_shapes import element_bytes, is_index_tensor, shape_of


@pytest.fixture(name="context")
def fixture_context() -> Iterator[ir.Context]:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        yield ctx


# (dtype as torch prints it, bits of one element by the dtype's definition)
DTYPES = [
    ("i1", 1), ("ui8", 8), ("si8", 8), ("si16", 16), ("si32", 32), ("si64", 64),
    ("f16", 16), ("bf16", 16), ("f32", 32), ("f64", 64),
    ("f8E4M3FN", 8), ("f8E5M2", 8), ("f8E4M3FNUZ", 8), ("f8E5M2FNUZ", 8),
    ("complex<f32>", 64), ("complex<f64>", 128), ("complex<f16>", 32),
]  # fmt: skip


@pytest.mark.parametrize(("dtype", "bits"), DTYPES)
def test_every_torch_dtype_has_its_shape_and_size(
    context: ir.Context, dtype: str, bits: int
) -> None:
    value_type = ir.Type.parse(f"!torch.vtensor<[2,3],{dtype}>")
    assert shape_of(value_type) == (2, 3)
    assert element_bytes(value_type) == max(1, bits // 8)  # an i1 takes a byte
    assert is_index_tensor(value_type) == dtype.startswith(("i", "si", "ui"))


def test_an_unknown_dtype_has_no_size(context: ir.Context) -> None:
    assert element_bytes(ir.Type.parse("!torch.vtensor<[2],!torch.qint8>")) is None
