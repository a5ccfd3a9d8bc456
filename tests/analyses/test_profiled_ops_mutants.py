"""Scope helpers, call-name suffixes and call resolution of `profiled_ops`, on names and small
modules whose expected values are worked out by hand (written from the survivors of a partial
mutation run of `analyses/profiled_ops.py`)."""

from __future__ import annotations

from iree.compiler import ir

from irprof.analyses.profiled_ops import (
    ProfiledOp,
    _common_suffix,
    _is_bare,
    innermost_first,
    profiled_ops_of,
    scope_depth,
    scope_separator,
)
from irprof.mlir.context import make_context


def test_common_suffix_of_call_names() -> None:
    assert _common_suffix(["a/x/y", "b/x/y"]) == "x/y"
    assert _common_suffix(["a/x/y", "b/x/y", "c/z/y"]) == "y"
    # Nothing in common: the first name's last part.
    assert _common_suffix(["a/b/c", "d/e/f"]) == "c"
    assert _common_suffix(["p/q", "r/s"]) == "q"


def test_scope_helpers_at_their_edges() -> None:
    assert scope_depth("") == 0
    assert scope_depth("a") == 1 and scope_depth("a/b.c") == 2 and scope_depth("m.fc1") == 2
    assert scope_separator("a/b.c") == "/"  # a slash wins over dots (`dense_1/bias.read`)
    assert scope_separator("m.fc1") == "."
    assert _is_bare("Xla") and _is_bare("max")
    assert not _is_bare("a/b") and not _is_bare("f@g") and not _is_bare("m | aten")


def test_a_chain_entirely_in_the_frameworks_package_has_no_model_frame() -> None:
    chain = ("<sys.path>/tensorflow/a.py:1:1", "<sys.path>/tensorflow/b.py:2:1")
    op = ProfiledOp(
        index=0, op_name="tf.Conv2D", function="f", runtime_name="c", scope="", source="",
        chain=chain, location="", profile=None, trivial=False,
    )  # fmt: skip
    (turned,) = innermost_first([op], "tf")
    assert turned.chain == chain[::-1]
    assert turned.model_frame == ""
    assert turned.user_source == ""


NESTED_CALLS = """
module {
  func.func @main(%a: f32) -> f32 {
    %0 = func.call @f(%a) : (f32) -> f32 loc("jit(main)/jit(f)")
    return %0 : f32
  }
  func.func private @f(%a: f32) -> f32 {
    %0 = func.call @g(%a) : (f32) -> f32 loc("jit(f)/jit(g)")
    return %0 : f32
  }
  func.func private @g(%a: f32) -> f32 {
    %0 = arith.maximumf %a, %a : f32 loc("max")
    return %0 : f32
  }
}
"""


def test_a_call_with_a_scoped_name_is_not_prefixed_by_its_own_callers() -> None:
    """`jit(f)/jit(g)` already names the call in full: the op of @g it reaches is
    `jit(f)/jit(g)/max`, not prefixed again by the call of @f."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(NESTED_CALLS)).ops
    (maximum,) = [op for op in ops if op.op_name == "arith.maximumf"]
    assert maximum.qualified_name == "jit(f)/jit(g)/max"
    assert (maximum.call_name, maximum.call_sites) == ("jit(f)/jit(g)", 1)
