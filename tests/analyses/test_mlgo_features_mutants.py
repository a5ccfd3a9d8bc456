"""`analyses/mlgo_features.py`'s parts on values written by hand: the feature specs of the log
header, torch tensor types read from their text, element bits, element counts, padded shapes and
the (dims, bits) of MLIR types."""

from __future__ import annotations

import types
import zlib
from pathlib import Path
from typing import Any

import pytest
from iree.compiler import ir

from irprof.analyses import mlgo_features
from irprof.analyses.mlgo_features import (
    FEATURES,
    SCORE,
    MlgoContext,
    Observation,
    name_id,
    tensor_of,
)
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.errors import BundleError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import walk_ops
from irprof.opprofile import ProfileData

SPECS = [
    ("op_kind_id", 1), ("dialect_id", 1), ("level_id", 1), ("num_operands", 1),
    ("num_results", 1), ("result_rank", 1), ("result_shape", 6), ("operand0_shape", 6),
    ("operand1_shape", 6), ("result_elements", 1), ("operand_elements", 1), ("element_bits", 1),
    ("tensor_bytes", 1), ("event_count", 1), ("estimated", 1), ("group_size", 1), ("flops", 1),
    ("bytes_moved", 1),
]  # fmt: skip


def test_the_header_specs_are_int64_features_and_a_mean_ns_score() -> None:
    assert [spec.to_json() for spec in FEATURES] == [
        {"name": name, "type": "int64_t", "port": 0, "shape": [size]} for name, size in SPECS
    ]
    assert SCORE.to_json() == {"name": "mean_ns", "type": "int64_t", "port": 0, "shape": [1]}
    assert sum(spec.elements for spec in FEATURES) == 15 + 3 * 6


def test_int_specs_hold_size_int64_values() -> None:
    # `_int` builds FEATURES and SCORE at import, before a mutant can be switched on: called
    # here, its mutants are seen (the header test above checks the specs it built)
    assert mlgo_features._int("n").to_json() == {
        "name": "n", "type": "int64_t", "port": 0, "shape": [1]
    }  # fmt: skip
    assert mlgo_features._int("dims", 6).to_json() == {
        "name": "dims", "type": "int64_t", "port": 0, "shape": [6]
    }  # fmt: skip


def test_names_are_the_crc32_of_their_utf8() -> None:
    assert name_id("") == 0
    assert name_id("a") == 0xE8B7BE43
    assert name_id("\u00e9") == zlib.crc32(b"\xc3\xa9")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!torch.vtensor<[2,3],f32>", ((2, 3), "f32")),
        ("!torch.tensor<[?,4],si64>", ((-1, 4), "si64")),
        ("!torch.vtensor<[],bf16>", ((), "bf16")),
        ("!torch.vtensor<[x,2],f32>", (None, "f32")),
        ("!torch.vtensor<*,f32>", None),
        ("!torch.vtensor", None),
        ("tensor<[2],f32>", None),
        ("!torch.int", None),
    ],
)
def test_torch_tensor_types_are_read_from_their_text(
    text: str, expected: tuple[tuple[int, ...] | None, str] | None
) -> None:
    assert mlgo_features._torch_tensor(text) == expected


@pytest.mark.parametrize(
    ("element", "bits"),
    [("f32", 32), ("bf16", 16), ("si64", 64), ("ui8", 8), ("i1", 1), ("f8E4M3", 0),
     ("complex<f32>", 0), ("xf32", 0), ("", 0)],
)  # fmt: skip
def test_bits_of_a_torch_element_name(element: str, bits: int) -> None:
    assert mlgo_features._bits(element) == bits


def test_bits_of_mlir_element_types() -> None:
    with make_context():
        assert mlgo_features._bits(ir.IntegerType.get_signless(8)) == 8
        assert mlgo_features._bits(ir.F16Type.get()) == 16
        assert mlgo_features._bits(ir.F64Type.get()) == 64
        assert mlgo_features._bits(ir.IndexType.get()) == 0


def test_elements_and_padded_shapes() -> None:
    assert mlgo_features._elements((2, 3)) == 6
    assert mlgo_features._elements((0, 3)) == 0
    assert mlgo_features._elements(()) == 1
    assert mlgo_features._elements((2, -1)) == -1
    assert mlgo_features._elements(None) == -1
    assert mlgo_features._padded((2, 3)) == (2, 3, 0, 0, 0, 0)
    assert mlgo_features._padded(None) == (0,) * 6
    assert mlgo_features._padded((1, 2, 3, 4, 5, 6, 7)) == (1, 2, 3, 4, 5, 6)


def test_dims_and_bits_of_mlir_types() -> None:
    with make_context():
        assert tensor_of(ir.Type.parse("tensor<2x?x3xf32>")) == ((2, -1, 3), 32)
        assert tensor_of(ir.Type.parse("tensor<*xf16>")) == (None, 16)
        assert tensor_of(ir.Type.parse("memref<4xi8>")) == ((4,), 8)
        assert tensor_of(ir.Type.parse("tensor<5xindex>")) == ((5,), 0)
        assert tensor_of(ir.Type.parse("i32")) == (None, 0)
        # torch tensors have no Python class: read from their text
        assert tensor_of(ir.Type.parse("!torch.vtensor<[2,?],si8>")) == ((2, -1), 8)
        assert tensor_of(ir.Type.parse("!torch.tensor<[3],bf16>")) == ((3,), 16)
        assert tensor_of(ir.Type.parse("!torch.vtensor<*,f32>")) == (None, 0)


MODULE = """
func.func @f(%a: tensor<2x3xf32>, %b: tensor<?x4xi8>, %c: tensor<12xi1>) -> tensor<2x4xf32> {
  %0 = "x.mm"(%a, %b) : (tensor<2x3xf32>, tensor<?x4xi8>) -> tensor<2x4xf32>
  "x.no.op"() : () -> ()
  %1 = stablehlo.add %a, %a : tensor<2x3xf32>
  "x.mask"(%c) : (tensor<12xi1>) -> ()
  return %0 : tensor<2x4xf32>
}
"""
NAMES = ["func.func", "x.mm", "x.no.op", "stablehlo.add", "x.mask", "func.return"]


def _profiled(
    index: int, function: str, profile: ProfileData | None, callee: str = ""
) -> ProfiledOp:
    return ProfiledOp(
        index=index, op_name=NAMES[index], function=function, runtime_name="", scope="",
        source="", chain=(), location="", profile=profile, trivial=False, callee=callee,
    )  # fmt: skip


def _data(count: int, mean_ns: int, group_size: int = 0) -> ProfileData:
    return ProfileData(
        count=count, total_ns=count * mean_ns, mean_ns=mean_ns, min_ns=mean_ns, max_ns=mean_ns,
        first_ts_ns=0, fraction=0.1, group_size=group_size,
    )  # fmt: skip


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


# Written from the types: f32 is 32 bits, i8 8, i1 1; a dynamic dim is -1 and leaves its tensor
# out of the element and byte sums (12 i1 values are 1 whole byte); the dialect is the name up to
# its first dot; the cost model counts 2*2*4*3 FLOPs for `x.mm` (no bytes).
MM = (
    (_crc("x.mm"),), (_crc("x"),), (_crc("lvl"),), (2,), (1,), (2,),
    (2, 4, 0, 0, 0, 0), (2, 3, 0, 0, 0, 0), (-1, 4, 0, 0, 0, 0),
    (8,), (6,), (32,), (6 * 4 + 8 * 4,), (3,), (1,), (2,), (48,), (-1,),
)  # fmt: skip
NONE = (
    (_crc("x.no.op"),), (_crc("x"),), (_crc("lvl"),), (0,), (0,), (-1,),
    (0,) * 6, (0,) * 6, (0,) * 6, (-1,), (0,), (0,), (0,), (1,), (0,), (0,), (0,), (0,),
)  # fmt: skip
ADD = (
    (_crc("stablehlo.add"),), (_crc("stablehlo"),), (_crc("lvl"),), (2,), (1,), (2,),
    (2, 3, 0, 0, 0, 0), (2, 3, 0, 0, 0, 0), (2, 3, 0, 0, 0, 0),
    (6,), (12,), (32,), (3 * 6 * 4,), (1,), (0,), (0,), (6,), (48,),
)  # fmt: skip
MASK = (
    (_crc("x.mask"),), (_crc("x"),), (_crc("lvl"),), (1,), (0,), (-1,),
    (0,) * 6, (12, 0, 0, 0, 0, 0), (0,) * 6, (-1,), (12,), (0,), (1,), (2,), (0,), (1,), (0,), (0,),
)  # fmt: skip


def test_op_features_written_from_the_types_and_the_profile() -> None:
    module = load_module(MODULE, make_context())
    ops = walk_ops(module)
    assert [op.name for op in ops] == NAMES
    features = mlgo_features.op_features
    assert features(ops[1], "lvl", _profiled(1, "f", _data(3, 100, group_size=2))) == MM
    assert features(ops[2], "lvl", _profiled(2, "", _data(1, 5))) == NONE
    assert features(ops[3], "lvl", _profiled(3, "f", _data(1, 7))) == ADD
    assert features(ops[4], "lvl", _profiled(4, "f", _data(2, 9, group_size=1))) == MASK
    for feature in MM + NONE + ADD + MASK:
        assert all(type(value) is int for value in feature)


def test_contexts_group_profiled_ops_by_function_leaving_out_inclusive_calls() -> None:
    module = load_module(MODULE, make_context())
    ops = [
        _profiled(0, "", None),
        _profiled(1, "f", _data(3, 100, group_size=2)),
        _profiled(2, "", _data(1, 5)),
        _profiled(3, "f", _data(1, 7), callee="g"),  # a call repeating its callee's time
        _profiled(4, "f", _data(2, 9, group_size=1)),
        _profiled(5, "f", None),
    ]
    contexts = mlgo_features.level_contexts(module, "lvl", ops)
    assert contexts == (
        MlgoContext("lvl:f", (Observation(1, "x.mm", MM, 100), Observation(4, "x.mask", MASK, 9))),
        MlgoContext("lvl:<module>", (Observation(2, "x.no.op", NONE, 5),)),
    )
    with pytest.raises(BundleError) as changed:
        mlgo_features.level_contexts(module, "lvl", ops[:-1])
    assert str(changed.value) == "level lvl: the module changed under its profiled ops"


def _ops(level: str) -> list[ProfiledOp]:
    return [
        _profiled(0, "", None),
        _profiled(1, "f", _data(3, 100, group_size=2)),
        _profiled(2, "", _data(1, 5)),
        _profiled(3, "f", None),
        _profiled(4, "f", None),
        _profiled(5, "f", None),
    ]


def test_a_log_holds_the_contexts_of_every_annotated_level_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = load_module(MODULE, make_context())

    def load(bundle: object, level: str) -> object:
        profiled = types.SimpleNamespace(ops=_ops(level))
        return types.SimpleNamespace(module=module, level=level, profiled=profiled)

    monkeypatch.setattr(mlgo_features, "load_annotated_level", load)
    bundle: Any = types.SimpleNamespace(root=Path("run"), annotated_levels=lambda: ["a", "b"])
    log = mlgo_features.load_mlgo_features(bundle)
    assert (log.features, log.score) == (FEATURES, SCORE)
    assert [context.name for context in log.contexts] == ["a:f", "a:<module>", "b:f", "b:<module>"]
    assert log.observation_count == 4
    one = mlgo_features.load_mlgo_features(bundle, "b")
    assert [context.name for context in one.contexts] == ["b:f", "b:<module>"]
    bundle.annotated_levels = lambda: []
    with pytest.raises(BundleError) as none:
        mlgo_features.load_mlgo_features(bundle)
    assert str(none.value) == ("run: no annotated IR under annotated/; run `irprof annotate run`")
