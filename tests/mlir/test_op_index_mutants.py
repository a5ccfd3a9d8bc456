"""`mlir/op_index.py` on a module whose keys are written out by hand: the keys `derive_op_keys`
derives (a name ending in ':' that holds a '/' is a name, not a TF type marker), and the indexes
`OpIndex.of_module` and `OpIndex.of_infos` build, read back whole with `keyed_ops`."""

from __future__ import annotations

from typing import Any

import pytest
from iree.compiler import ir

from irprof.mlir import op_index
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.locations import from_ir
from irprof.mlir.op_index import OpIndex, derive_op_infos, derive_op_keys
from irprof.opprofile import OpKey

# Every op's location is a NameLoc chain ending in a file position or unknown.
MODULE = """
func.func @f() {
  "x.a"() : () -> () loc("irprof.origin=tf#4"("dense/MatMul"("m.py":1:2)))
  "x.b"() : () -> () loc("MatMul:"("dense/MatMul"(unknown)))
  "x.c"() : () -> () loc("scope/Relu:"(unknown))
  "x.d"() : () -> () loc("dense/MatMul"("m.py":1:2))
  "x.e"() : () -> () loc(unknown)
  "x.f"() : () -> () loc("irprof.origin=tf#7"("irprof.origin=tf#8"("x/y"("g"("m.py":7:1)))))
  return loc(unknown)
} loc(unknown)
"""

OP_NAMES = ["func.func", "x.a", "x.b", "x.c", "x.d", "x.e", "x.f", "func.return"]

# Written from the locations: the first kept name (origin stamps and "Type:" markers skipped,
# the innermost frame name dropped when there are others), the innermost file position, the
# outermost origin, and the op's count among the earlier ops of the same (name, source).
EXPECTED = [
    OpKey(name=None, source=None, origin=None, ordinal=0),  # func.func
    OpKey(name="dense/MatMul", source="m.py:1:2", origin="tf#4", ordinal=0),
    OpKey(name="dense/MatMul", source=None, origin=None, ordinal=0),  # "MatMul:" is a marker
    OpKey(name="scope/Relu:", source=None, origin=None, ordinal=0),  # a '/': not a marker
    OpKey(name="dense/MatMul", source="m.py:1:2", origin=None, ordinal=1),
    OpKey(name=None, source=None, origin=None, ordinal=1),
    OpKey(name="x/y", source="m.py:7:1", origin="tf#7", ordinal=0),
    OpKey(name=None, source=None, origin=None, ordinal=2),  # func.return
]


def _module() -> ir.Module:
    return load_module(MODULE, make_context())


def test_derived_keys_are_the_keys_written_by_hand() -> None:
    keyed = derive_op_keys(_module())
    assert [op.name for op, _ in keyed] == OP_NAMES
    assert [key for _, key in keyed] == EXPECTED
    assert [info.key for info in derive_op_infos(_module())] == EXPECTED


def test_an_index_of_the_module_gives_back_every_op_with_its_key() -> None:
    index = OpIndex.of_module(_module())
    assert len(index) == len(OP_NAMES)
    keyed = index.keyed_ops()
    assert [op.name for op, _ in keyed] == OP_NAMES
    assert [key for _, key in keyed] == EXPECTED
    assert [index.key_at(position) for position in range(len(index))] == EXPECTED
    assert [op.name for op in index.match(OpKey(name="dense/MatMul"))] == ["x.a", "x.b", "x.d"]
    assert index.match_positions(OpKey(name="dense/MatMul", source="m.py:1:2", ordinal=1)) == [4]
    assert index.match_positions(OpKey(origin="tf#7")) == [6]
    assert index.match_positions(OpKey(name="scope/Relu:")) == [3]


def test_an_index_of_derived_infos_gives_back_every_op_with_its_key() -> None:
    index = OpIndex.of_infos(derive_op_infos(_module()))
    assert len(index) == len(OP_NAMES)
    keyed = index.keyed_ops()
    assert [op.name for op, _ in keyed] == OP_NAMES
    assert [key for _, key in keyed] == EXPECTED
    assert index.match_positions(OpKey(origin="tf#4")) == [1]
    assert index.match_positions(OpKey(ordinal=2)) == [7]


# Two ops whose call-site chains share their caller: the location model's shapes.
CALLSITES = """
func.func @g() {
  "x.a"() : () -> () loc(callsite("a"("m.py":1:1) at "main"("run.py":9:1)))
  "x.b"() : () -> () loc(callsite("b"("m.py":2:1) at "main"("run.py":9:1)))
  "x.c"() : () -> () loc(callsite("a"("m.py":1:1) at "main"("run.py":9:1)))
  return loc(unknown)
} loc(unknown)
"""


def test_name_chains_are_read_without_the_location_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NameLoc chains ending in a file position or unknown take the fast path (the location
    model is not called for any op of MODULE, by either walk); a call site takes the model."""
    called: list[str] = []
    model = op_index._ModelKeys.__call__

    def spy(self: op_index._ModelKeys, location: ir.Location) -> Any:
        called.append(str(location))
        return model(self, location)

    monkeypatch.setattr(op_index._ModelKeys, "__call__", spy)
    module = load_module(MODULE, make_context())
    op_index.derive_key_columns(module)
    derive_op_infos(module)
    assert called == []
    op_index.derive_key_columns(load_module(CALLSITES, make_context()))
    assert len(called) == 3  # the three call sites


def test_the_location_model_converts_each_location_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_ModelKeys` converts a location the first time only (the third op repeats the first's
    location), and shares the sub-locations of its conversions (the common caller)."""
    converted: list[str] = []

    def counting(location: ir.Location, memo: Any = None) -> Any:
        converted.append(str(location))
        return from_ir(location, memo)

    monkeypatch.setattr(op_index, "from_ir", counting)
    module = load_module(CALLSITES, make_context())
    model_keys = op_index._ModelKeys()
    ops = [op for op in op_index.walk_ops(module) if op.name.startswith("x.")]
    keys = [model_keys(op.location) for op in ops]
    assert len(converted) == 2
    assert keys[0] == keys[2] != keys[1]
    assert keys[0].name == "a" and keys[1].name == "b"
    # The caller `"main"("run.py":9:1)` was converted once, for both chains.
    shared = [loc for attr, loc in model_keys._locs.items() if "run.py" in str(attr)]
    assert len(shared) >= 1


def test_each_fields_table_is_built_once() -> None:
    index = OpIndex.of_module(load_module(MODULE, make_context()))
    for key_field in ("name", "source", "origin"):
        assert index._table(key_field) is index._table(key_field)
    assert index._table("name") is not index._table("source")
