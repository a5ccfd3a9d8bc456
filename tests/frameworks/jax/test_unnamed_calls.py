"""A call with an empty location name adds no scope to its callee's op names.

JAX lowers `jax.random.bernoulli` as `@_uniform`, which calls `@threefry2x32` at `loc("")`; XLA
inlines both and names the loop `jit(f)/jit(_bernoulli)/jit(_uniform)/while`, with no component
for the unnamed call. Found on a Flax block trained with dropout: every thunk of the dropout's
random bits (22% of the step) was unattributed, the ops joined as `.../jit(_uniform)//while`.
"""

from __future__ import annotations

from irprof.frameworks.jax.ir_index import JaxOpIndex
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos

MODULE = """
!t = tensor<4xui32>
module @jit_f {
  func.func public @main(%a: tensor<4xui32>) -> tensor<4xui32> {
    %0 = func.call @_uniform(%a) : (!t) -> !t loc(#uniform_call)
    %1 = func.call @_uniform(%0) : (!t) -> !t loc(#uniform_call2)
    return %1 : !t
  }
  func.func private @_uniform(%a: tensor<4xui32>) -> tensor<4xui32> {
    %0 = func.call @threefry(%a) : (!t) -> !t loc(#unnamed)
    return %0 : !t
  }
  func.func private @threefry(%a: tensor<4xui32>) -> tensor<4xui32> {
    %0 = stablehlo.xor %a, %a : !t loc(#xor)
    %1 = func.call @inner(%0) : (!t) -> !t loc(#unnamed)
    return %1 : !t
  }
  func.func private @inner(%a: tensor<4xui32>) -> tensor<4xui32> {
    %0 = stablehlo.add %a, %a : !t loc(#add)
    return %0 : !t
  }
}
#uniform_call = loc("jit(f)/Dropout_0/jit(_uniform)")
#uniform_call2 = loc("jit(f)/Dropout_1/jit(_uniform)")
#unnamed = loc("")
#xor = loc("while/body/xor")
#add = loc("add")
"""


def index_and_positions() -> tuple[JaxOpIndex, dict[str, int]]:
    index = JaxOpIndex(derive_op_infos(parse_module(MODULE, make_context())))
    positions = {info.op_name: p for p, info in enumerate(index.infos)}
    return index, positions


def test_an_unnamed_call_adds_no_scope() -> None:
    index, at = index_and_positions()
    names = sorted(identity.name for identity in index.identities(at["stablehlo.xor"]))
    assert names == [
        "jit(f)/Dropout_0/jit(_uniform)/while/body/xor",
        "jit(f)/Dropout_1/jit(_uniform)/while/body/xor",
    ]
    for name in names:
        targets = index.lookup(name, ())
        assert [t.position for t in targets] == [at["stablehlo.xor"]]
    assert index.lookup("jit(f)/Dropout_0/jit(_uniform)//while/body/xor", ()) == []


def test_two_unnamed_calls_in_a_row_add_no_scope_either() -> None:
    index, at = index_and_positions()
    names = sorted(identity.name for identity in index.identities(at["stablehlo.add"]))
    assert names == ["jit(f)/Dropout_0/jit(_uniform)/add", "jit(f)/Dropout_1/jit(_uniform)/add"]
    # the call path is kept: each identity goes through both unnamed calls and its own site
    paths = {len(identity.via_calls) for identity in index.identities(at["stablehlo.add"])}
    assert paths == {3}


BARE_MODULE = """
!t = tensor<4xf32>
module @jit_g {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = func.call @cumsum(%a) : (!t) -> !t loc(#site)
    %1 = stablehlo.exponential %0 : !t loc(#exp)
    return %1 : !t
  }
  func.func private @cumsum(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = func.call @cumsum_0(%a) : (!t) -> !t loc(unknown)
    return %0 : !t
  }
  func.func private @cumsum_0(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.negate %a : !t loc(#bare)
    %1 = func.call @first(%0) : (!t) -> !t loc(unknown)
    %2 = func.call @second(%1) : (!t) -> !t loc(unknown)
    return %2 : !t
  }
  func.func private @first(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : !t loc(#shared)
    return %0 : !t
  }
  func.func private @second(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : !t loc(#shared)
    return %0 : !t
  }
}
#site = loc("jit(g)/jit(cumsum)"("g.py":3:8))
#exp = loc("jit(g)/exp"("g.py":4:8))
#bare = loc("reduce_window_sum")
#shared = loc("add")
"""


def test_an_op_named_alone_behind_a_call_at_an_unknown_location_is_found_by_that_name() -> None:
    """JAX lowers `jnp.cumsum` on CPU to `@cumsum`, which calls `@cumsum_0` at an unknown
    location; its `reduce_window` is named `reduce_window_sum` alone, and so is the HLO
    instruction, with no stack frame ("op names not found in the IR" before)."""
    index = JaxOpIndex(derive_op_infos(parse_module(BARE_MODULE, make_context())))
    at = {info.op_name: p for p, info in enumerate(index.infos)}
    assert [t.position for t in index.lookup("reduce_window_sum", ())] == [at["stablehlo.negate"]]
    # a name with a chain keeps to its own position, and a named op is no bare op
    assert index.lookup("reduce_window_sum", ("g.py:3:8",)) == []
    assert index.lookup("jit(g)/exp", ()) == []
    # ops of one name in two functions (reducers of two call sites): no way to tell, no join
    assert index.lookup("add", ()) == []
