"""`mlir/op_index.py` on a module whose keys are written out by hand: the keys `derive_op_keys`
derives (a name ending in ':' that holds a '/' is a name, not a TF type marker), and the indexes
`OpIndex.of_module` and `OpIndex.of_infos` build, read back whole with `keyed_ops`."""

from __future__ import annotations

from iree.compiler import ir

from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
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
