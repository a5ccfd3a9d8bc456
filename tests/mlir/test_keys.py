"""Correlation keys derived from real TF, JAX, torch and IREE locations."""

from __future__ import annotations

from pathlib import Path

from irprof.mlir.context import make_context
from irprof.mlir.keys import (
    fused_members,
    origin_name,
    origins,
    parse_origin,
    runtime_names,
    split_function_suffix,
)
from irprof.mlir.load import load_module
from irprof.mlir.locations import CallSiteLoc, FileLineColLoc, NameLoc
from irprof.mlir.op_index import OpIndex, OpInfo, derive_op_infos, derive_op_keys
from irprof.opprofile import OpKey
from irprof.passes.pipeline import run_pipeline

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"


def _infos(fixture: str, pipeline: str = "") -> list[OpInfo]:
    module = load_module(FIXTURES / fixture, make_context())
    if pipeline:
        run_pipeline(module, pipeline)
    return derive_op_infos(module)


def test_tf_node_names_skip_type_markers_and_keep_function_suffix() -> None:
    names = {i.op_name: i.key.name for i in _infos("tf.function.mlir") if i.key.name}
    assert names["tf.MatMul"] == "dense1/MatMul"
    assert names["tf.BiasAdd"] == "dense1/BiasAdd"
    node, function = split_function_suffix(names["tf.Relu"])
    assert node == "Relu"
    assert function is not None and function.startswith("__inference_inner_")
    assert all(not name.endswith(":") for name in names.values())
    matmul = next(i for i in _infos("tf.function.mlir") if i.op_name == "tf.MatMul")
    members = fused_members(matmul.loc)
    assert len(members) == 2 and members[0] == NameLoc("MatMul:")


def test_jax_names_and_innermost_source_distinguish_the_two_dots() -> None:
    dots = [i for i in _infos("jax.stablehlo.mlir") if i.op_name == "stablehlo.dot_general"]
    assert [d.key.name for d in dots] == ["jit(mlp)/dot_general"] * 2
    sources = [d.key.source for d in dots]
    assert sources[0] != sources[1]
    assert all(s.startswith("tests/fixtures/mlir/make_fixtures.py:") for s in sources)
    # Python frame names (`make_jax.<locals>.mlp`) are not op names.
    assert all("<locals>" not in n for d in dots for n in d.keys.names)
    # The call chain runs callee-most first: the user's line, then its callers.
    assert dots[0].keys.chain[0] == sources[0] and len(dots[0].keys.chain) == 3


def test_jax_private_function_ops_inherit_the_callers_name_once_inlined() -> None:
    before = [i for i in _infos("jax.stablehlo.mlir") if i.op_name == "stablehlo.maximum"]
    assert before[0].key.name == "max"
    after = [
        i
        for i in _infos("jax.stablehlo.mlir", "builtin.module(inline)")
        if i.op_name == "stablehlo.maximum"
    ]
    assert after[0].key.name == "jit(mlp)/jit(relu)"
    assert "max" in after[0].keys.names


def test_torch_linears_share_a_source_and_differ_by_ordinal() -> None:
    linears = [i for i in _infos("torch.fx.mlir") if i.op_name == "torch.aten.linear"]
    assert len(linears) == 2
    assert linears[0].key.source == linears[1].key.source == "torch/nn/modules/linear.py:134:0"
    # Same (name, source): only the walk-order ordinal tells them apart.
    assert linears[0].key.name is None
    assert linears[0].key.ordinal is not None and linears[1].key.ordinal is not None
    assert linears[1].key.ordinal > linears[0].key.ordinal


def test_iree_dispatch_bodies_keep_the_jax_names() -> None:
    matmuls = [i for i in _infos("iree.flow.mlir") if i.op_name == "linalg.matmul"]
    assert [m.key.name for m in matmuls] == ["jit(mlp)/dot_general"] * 2


def test_op_index_matches_every_non_none_field() -> None:
    module = load_module(FIXTURES / "torch.fx.mlir", make_context())
    keyed = derive_op_keys(module)
    index = OpIndex(keyed)
    linear_source = "torch/nn/modules/linear.py:134:0"
    all_at_source = index.match(OpKey(source=linear_source))
    assert len(all_at_source) == sum(1 for _, k in keyed if k.source == linear_source) > 2
    first = index.match(OpKey(source=linear_source, ordinal=0))
    assert len(first) == 1 and first[0].name == "func.func"
    assert index.match(OpKey(name="nope")) == []
    assert len(index.match(OpKey())) == len(keyed)


def test_origins_are_found_through_callsites_outermost_first() -> None:
    stamp = origin_name("linalg", 7)
    assert parse_origin(stamp.partition("=")[2]) == ("linalg", 7)
    assert parse_origin("no-hash") is None
    inner = NameLoc(origin_name("shlo", 3), NameLoc("max", FileLineColLoc("a.py", 1, 2)))
    loc = NameLoc(origin_name("flow", 1), CallSiteLoc(inner, NameLoc(origin_name("shlo", 9))))
    assert origins(loc) == ("flow#1", "shlo#3", "shlo#9")
    assert runtime_names(loc) == ("max",)
