"""Scope helpers, call-name suffixes, call resolution, owned scopes and shared IREE dispatches
of `profiled_ops`, on names and small modules whose expected values are worked out by hand
(written from the survivors of the mutation runs of `analyses/profiled_ops.py`)."""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from irprof.analyses.profiled_ops import (
    ProfiledOp,
    _common_suffix,
    _is_bare,
    innermost_first,
    name_scope,
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


TWO_NAMED_CALLS = """
module {
  func.func @main(%a: f32) -> f32 {
    %0 = func.call @g(%a) : (f32) -> f32 loc("jit(main)/jit(a)/jit(g)")
    %1 = func.call @g(%0) : (f32) -> f32 loc("jit(main)/jit(b)/jit(g)")
    return %1 : f32
  }
  func.func private @g(%a: f32) -> f32 {
    %0 = arith.maximumf %a, %a : f32 loc("max")
    return %0 : f32
  }
}
"""


def test_a_function_called_under_two_names_is_named_by_their_common_suffix() -> None:
    """Two calls of @g named `jit(main)/jit(a)/jit(g)` and `jit(main)/jit(b)/jit(g)`: its op is
    `jit(g)/max` with 2 call sites, not named after the first call alone; it rolls up in the
    first named call (its scope is that call's name)."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(TWO_NAMED_CALLS)).ops
    (maximum,) = [op for op in ops if op.op_name == "arith.maximumf"]
    assert (maximum.call_name, maximum.call_sites) == ("jit(g)", 2)
    assert maximum.qualified_name == "jit(g)/max (2 call sites)"
    assert maximum.scope == "jit(main)/jit(a)/jit(g)"


UNNAMED_CALL = """
module {
  func.func @main(%a: f32) -> f32 {
    %0 = func.call @g(%a) : (f32) -> f32
    return %0 : f32
  }
  func.func private @g(%a: f32) -> f32 {
    %0 = arith.maximumf %a, %a : f32 loc("max")
    return %0 : f32
  }
}
"""


def test_ops_of_a_function_reached_only_by_unnamed_calls_keep_an_empty_scope() -> None:
    """A call without a name gives its callee's ops no scope to roll up in: the op stays at
    scope "", named through the callee's symbol."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(UNNAMED_CALL)).ops
    (maximum,) = [op for op in ops if op.op_name == "arith.maximumf"]
    assert maximum.scope == ""
    assert maximum.qualified_name == "@g/max"


TWICE_FLOW = Path(__file__).parents[1] / "fixtures" / "iree" / "twice" / "ir" / "flow.mlir"
DISPATCH = "main_dispatch_0_matmul_64x128x128_f32"


def test_ops_of_a_dispatch_launched_twice_are_named_through_it_with_two_call_sites() -> None:
    """The fixture's two `flow.dispatch` ops (layer1 and layer2) launch one executable: every op
    of its function holds both launches' time, so it is named through the dispatch function
    with 2 call sites; the ops of the other functions are not."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(TWICE_FLOW.read_text(encoding="utf-8"))).ops
    inside = [op for op in ops if op.function == DISPATCH]
    outside = [op for op in ops if op.function != DISPATCH]
    assert len(inside) == 15 and len(outside) == 15
    assert {(op.call_name, op.call_sites) for op in inside} == {(DISPATCH, 2)}
    assert {(op.call_name, op.call_sites) for op in outside} == {("", 0)}
    (matmul,) = [op for op in inside if op.op_name == "linalg.matmul"]
    assert matmul.qualified_name == f"{DISPATCH}/layer1/dot_general (2 call sites)"


def test_ops_of_a_dispatch_launched_once_keep_their_own_names() -> None:
    """The same module with the second launch gone: one launch, no call sites."""
    lines = TWICE_FLOW.read_text(encoding="utf-8").splitlines()
    (second,) = [
        n for n, line in enumerate(lines) if line.lstrip().startswith("%3 = flow.dispatch")
    ]
    text = "\n".join(lines[:second] + [line.replace("%3", "%2") for line in lines[second + 1 :]])
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(text)).ops
    assert {(op.call_name, op.call_sites) for op in ops} == {("", 0)}
    (matmul,) = [op for op in ops if op.op_name == "linalg.matmul"]
    assert matmul.qualified_name == "layer1/dot_general"


OWNED_SCOPES = """
module {
  func.func @main(%a: f32) -> f32 {
    %0 = arith.addf %a, %a : f32 loc("model/conv/convolution")
    %1 = arith.mulf %0, %0 : f32 loc("model/conv/convolution/ReadVariableOp")
    %2 = arith.subf %1, %1 : f32 loc("model/conv/convolution/ReadVariableOp/inner")
    %3 = arith.divf %2, %2 : f32 loc("a/b")
    %4 = arith.negf %3 : f32 loc("b/c")
    %5 = arith.maximumf %4, %4 : f32 loc("z/a@fn")
    %6 = func.call @f(%5) : (f32) -> f32 loc("jit/call")
    %7 = arith.minimumf %6, %6 : f32 loc("jit/call/op")
    return %7 : f32 loc("ret/x")
  }
  func.func private @f(%a: f32) -> f32 {
    %0 = arith.maximumf %a, %a : f32 loc("f/max")
    return %0 : f32 loc("ret")
  }
}
"""


def test_an_op_named_like_a_scope_owns_that_scope() -> None:
    """`model/conv/convolution/ReadVariableOp` reads the variable of the op
    `model/conv/convolution`: its scope becomes that op's (`model/conv`), through every level
    (`.../ReadVariableOp/inner` too). `b/c` is in scope `b`, which the op `a/b` does not own
    (an owner's name is its whole runtime name: `a/b`, scope `a`); `z/a@fn` owns `z/a` (its TF
    function suffix dropped). Calls and trivial ops own nothing: `jit/call/op` keeps `jit/call`,
    and `ret/x` (a terminator) owns no scope `ret`."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(OWNED_SCOPES)).ops
    scopes = {op.runtime_name: op.scope for op in ops if op.runtime_name}
    # The functions themselves are at module level: in no function.
    assert [op.function for op in ops if op.op_name == "func.func"] == ["", ""]
    assert scopes["model/conv/convolution"] == "model/conv"
    assert scopes["model/conv/convolution/ReadVariableOp"] == "model/conv"
    assert scopes["model/conv/convolution/ReadVariableOp/inner"] == "model/conv"
    assert scopes["a/b"] == "a"
    assert scopes["b/c"] == "b"
    assert scopes["z/a@fn"] == "z"
    assert scopes["jit/call/op"] == "jit/call"
    assert scopes["jit/call"] == "jit"
    assert scopes["ret/x"] == "ret"


SCOPED_CALLEE = """
module {
  func.func @main(%a: f32) -> f32 {
    %0 = func.call @g(%a) : (f32) -> f32 loc("jit(main)/jit(g)")
    return %0 : f32
  }
  func.func private @g(%a: f32) -> f32 {
    %0 = arith.maximumf %a, %a : f32 loc("jit(g)/inner/max")
    %1 = arith.minimumf %0, %0 : f32 loc("min")
    return %1 : f32
  }
}
"""


def test_ops_of_a_called_function_keep_a_scope_of_their_own() -> None:
    """Only ops without a scope roll up in the call's: `jit(g)/inner/max` keeps `jit(g)/inner`
    (and its own name), `min` takes the call's name as its scope."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(SCOPED_CALLEE)).ops
    by_name = {op.runtime_name: op for op in ops if op.function == "g" and op.runtime_name}
    assert by_name["jit(g)/inner/max"].scope == "jit(g)/inner"
    assert by_name["jit(g)/inner/max"].qualified_name == "jit(g)/inner/max"
    assert by_name["min"].scope == "jit(main)/jit(g)"
    assert by_name["min"].qualified_name == "jit(main)/jit(g)/min"


def test_a_nested_symbol_callee_loses_only_its_leading_at() -> None:
    """A callee that is not a flat symbol (`@Xouter::@inner`) is its text without the leading
    `@` (and only that: its `X` stays)."""
    text = """
    module {
      func.func @main() {
        "test.call"() {callee = @Xouter::@inner} : () -> ()
        return
      }
    }
    """
    with make_context() as context:
        context.allow_unregistered_dialects = True
        ops = profiled_ops_of(ir.Module.parse(text)).ops
    (call,) = [op for op in ops if op.op_name == "test.call"]
    assert call.callee == "Xouter::@inner"


def test_name_scope_cuts_at_the_first_bar_and_the_first_bracket() -> None:
    """A torch name's scope is what comes before its first `|`, spaces or not; a JAX name's
    primitive parameters (from the first `[`, which may hold `/` and more brackets) are no
    scope."""
    assert name_scope("enc.fc1|linear|aten.linear") == "enc.fc1"
    assert name_scope("jit(f)/dense/dot_general[lhs=[0]/rhs=[1]]") == "jit(f)/dense"
    assert name_scope("dot_general[a/b]") == ""


def test_a_module_without_a_path_is_named_module() -> None:
    with make_context():
        assert profiled_ops_of(ir.Module.parse(UNNAMED_CALL)).path == "<module>"


LAUNCHES_OF_ANOTHER_OP = """
module {
  func.func @main() {
    "test.dispatch"() {entry_points = [@b]} : () -> ()
    "test.dispatch"() {entry_points = [@b]} : () -> ()
    return
  }
  func.func private @b(%a: f32) -> f32 {
    %0 = arith.negf %a : f32 loc("b/neg")
    return %0 : f32
  }
}
"""


def test_only_flow_dispatch_ops_count_as_launches() -> None:
    """Other ops with `entry_points` (stream and HAL dispatches of later levels) launch nothing
    here: the ops of @b keep their own names."""
    with make_context() as context:
        context.allow_unregistered_dialects = True
        ops = profiled_ops_of(ir.Module.parse(LAUNCHES_OF_ANOTHER_OP)).ops
    (neg,) = [op for op in ops if op.op_name == "arith.negf"]
    assert (neg.call_name, neg.call_sites) == ("", 0)
    assert neg.qualified_name == "b/neg"


RECORD_FIELDS = """
module {
  func.func private @decl(f32) -> f32
  func.func @main(%u: f32, %x: f32 loc("x")) -> f32 {
    %0 = arith.addf %u, %x : f32 loc("f/add")
    %1 = torch.operator "onnx.Neg"() : () -> !torch.int loc("f/neg"("m.py":3:4))
    return %0 : f32
  }
}
"""


def test_records_hold_the_location_source_kind_and_named_inputs() -> None:
    """A name-only location is its quoted name (placing nothing) with no source; a name over a
    file position gives that position as the source; a `torch.operator` is known by its
    operator's name; the input names come from named arguments even after a declaration (no
    body) and an unnamed argument."""
    with make_context():
        ops = profiled_ops_of(ir.Module.parse(RECORD_FIELDS)).ops
    by_name = {op.runtime_name: op for op in ops if op.runtime_name}
    add, neg = by_name["f/add"], by_name["f/neg"]
    assert (add.op_name, add.location, add.place, add.source) == ("arith.addf", "'f/add'", "", "")
    assert add.inputs == ("x",)
    assert (neg.op_name, neg.location, neg.source) == ("onnx.Neg", "'f/neg'(m.py:3:4)", "m.py:3:4")
    assert neg.inputs == ()
