"""Correlation keys derived from real TF, JAX, torch and IREE locations."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.mlir.context import make_context
from irprof.mlir.keys import (
    LocationKeys,
    call_chain,
    fused_members,
    innermost_source,
    is_type_marker,
    key_fields,
    location_keys,
    name_chain_keys,
    origin_name,
    origins,
    origins_at_level,
    parse_origin,
    primary_name,
    runtime_names,
    split_function_suffix,
)
from irprof.mlir.load import load_module
from irprof.mlir.locations import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Loc,
    NameLoc,
    UnknownLoc,
    to_ir,
)
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


MODEL = FileLineColLoc("model.py", 12, 5)
LIBRARY = FileLineColLoc("torch/nn/linear.py", 125, 16)


@pytest.mark.parametrize(
    ("origin", "parsed"),
    [
        ("tf#3", ("tf", 3)),
        ("linalg#0", ("linalg", 0)),
        ("tf#03", ("tf", 3)),
        ("a#b#4", ("a#b", 4)),  # the index is after the last '#'
        ("#3", None),
        ("tf#", None),
        ("tf#x", None),
        ("tf#-1", None),
        ("tf", None),
        ("", None),
    ],
)
def test_parse_origin(origin: str, parsed: tuple[str, int] | None) -> None:
    assert parse_origin(origin) == parsed


def test_origin_name_round_trips_through_parse_origin() -> None:
    assert origin_name("stablehlo", 41) == "irprof.origin=stablehlo#41"
    assert parse_origin(origin_name("stablehlo", 41).removeprefix("irprof.origin=")) == (
        "stablehlo",
        41,
    )


@pytest.mark.parametrize(
    ("name", "marker"),
    [("MatMul:", True), (":", True), ("dense/MatMul:", False), ("MatMul", False), ("", False)],
)
def test_type_markers_are_unscoped_names_ending_in_a_colon(name: str, marker: bool) -> None:
    assert is_type_marker(name) is marker


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("Relu@__inference_f_12", ("Relu", "__inference_f_12")),
        ("dense/MatMul@fn", ("dense/MatMul", "fn")),
        ("a@b@fn", ("a@b", "fn")),
        ("node@scope/fn", ("node@scope/fn", None)),  # a '/' after '@' is not a function
        ("@fn", ("@fn", None)),
        ("node@", ("node@", None)),
        ("node", ("node", None)),
    ],
)
def test_split_function_suffix(name: str, split: tuple[str, str | None]) -> None:
    assert split_function_suffix(name) == split


def test_a_lone_frame_name_is_the_runtime_name() -> None:
    assert runtime_names(NameLoc("mlp", MODEL)) == ("mlp",)
    assert primary_name(NameLoc("mlp", MODEL)) == "mlp"


def test_op_names_win_over_frame_names_and_repeat_once() -> None:
    loc = NameLoc("jit(f)/dot", NameLoc("jit(f)/dot", NameLoc("mlp", MODEL)))
    assert runtime_names(loc) == ("jit(f)/dot",)
    frames_only = CallSiteLoc(NameLoc("inner", MODEL), NameLoc("outer", LIBRARY))
    assert runtime_names(frames_only) == ("inner", "outer")


def test_origin_stamps_and_type_markers_are_not_names() -> None:
    loc = NameLoc(origin_name("tf", 1), FusedLoc((NameLoc("MatMul:"), NameLoc("dense/MatMul"))))
    assert runtime_names(loc) == ("dense/MatMul",)
    assert runtime_names(NameLoc("MatMul:", UnknownLoc())) == ()
    assert primary_name(UnknownLoc()) is None


def test_an_inlined_primitive_takes_its_callers_scoped_name_first() -> None:
    caller = NameLoc("jit(f)/relu", NameLoc("f", MODEL))  # an op name around a frame name
    inlined = CallSiteLoc(NameLoc("max"), caller)
    assert runtime_names(inlined) == ("jit(f)/relu", "max")
    # A callee with its own scoped name keeps it first.
    scoped = CallSiteLoc(NameLoc("jit(f)/max"), caller)
    assert runtime_names(scoped) == ("jit(f)/max", "jit(f)/relu")
    # A caller with frame names only does not take over.
    framed = CallSiteLoc(NameLoc("max"), NameLoc("caller", MODEL))
    assert runtime_names(framed) == ("max",)


def test_call_chain_runs_callee_first_through_names_and_fused_locations() -> None:
    loc = NameLoc("op", CallSiteLoc(LIBRARY, CallSiteLoc(MODEL, FileLineColLoc("main.py", 3, 1))))
    assert [frame.file for frame in call_chain(loc)] == [
        "torch/nn/linear.py",
        "model.py",
        "main.py",
    ]
    assert innermost_source(loc) == "torch/nn/linear.py:125:16"
    fused = FusedLoc((NameLoc("Type:"), NameLoc("x", MODEL), LIBRARY))
    assert call_chain(fused) == (MODEL,)  # the first member with a chain only
    assert call_chain(NameLoc("n")) == ()
    assert innermost_source(NameLoc("n")) is None


def test_fused_members_are_found_through_names_only() -> None:
    members = (NameLoc("Type:"), NameLoc("node"))
    assert fused_members(FusedLoc(members)) == members
    assert fused_members(NameLoc("a", NameLoc("b", FusedLoc(members)))) == members
    named = NameLoc("a", MODEL)
    assert fused_members(named) == (named,)
    call = CallSiteLoc(FusedLoc(members), MODEL)
    assert fused_members(call) == (call,)


def test_origins_dedupe_and_filter_by_level() -> None:
    loc = NameLoc(
        origin_name("flow", 2),
        FusedLoc(
            (
                NameLoc(origin_name("shlo", 3)),
                NameLoc(origin_name("shlo", 3)),
                NameLoc(origin_name("shlo", 4)),
            )
        ),
    )
    assert origins(loc) == ("flow#2", "shlo#3", "shlo#4")
    assert origins_at_level(loc, "shlo") == ("shlo#3", "shlo#4")
    assert origins_at_level(loc, "flow") == ("flow#2",)
    assert origins_at_level(loc, "sh") == ()
    assert origins(MODEL) == ()


def test_location_keys_gather_every_key() -> None:
    loc = NameLoc(origin_name("tf", 7), NameLoc("dense/MatMul", CallSiteLoc(LIBRARY, MODEL)))
    keys = location_keys(loc)
    assert keys.names == ("dense/MatMul",)
    assert keys.name == "dense/MatMul"
    assert keys.source == "torch/nn/linear.py:125:16"
    assert keys.chain == ("torch/nn/linear.py:125:16", "model.py:12:5")
    assert keys.origins == ("tf#7",)
    assert keys.origin == "tf#7"
    empty = location_keys(UnknownLoc())
    assert (empty.name, empty.source, empty.chain, empty.origin) == (None, None, (), None)


def _fast(loc: Loc) -> tuple[LocationKeys | None, tuple[str | None, str | None, str | None] | None]:
    """`name_chain_keys` and `key_fields` of `loc` built as a bindings location."""
    location = to_ir(loc, make_context())
    return name_chain_keys(location), key_fields(location)


def test_fast_keys_of_a_name_chain_around_a_source_position() -> None:
    """Origins (outermost first, once each) and markers are skipped; the frame name dropped."""
    loc = NameLoc(
        origin_name("tf", 1),
        NameLoc(
            "MatMul:",
            NameLoc(
                origin_name("hlo", 2),
                NameLoc(origin_name("tf", 1), NameLoc("dense/MatMul", NameLoc("mlp", MODEL))),
            ),
        ),
    )
    keys, fields = _fast(loc)
    assert keys == LocationKeys(
        names=("dense/MatMul",), source="model.py:12:5", chain=("model.py:12:5",),
        origins=("tf#1", "hlo#2"),
    )  # fmt: skip
    assert keys == location_keys(loc)
    assert fields == ("dense/MatMul", "model.py:12:5", "tf#1")


def test_fast_keys_keep_a_lone_frame_name_and_names_above_a_marker() -> None:
    """A single name is kept; only a kept innermost name is a frame name."""
    assert _fast(NameLoc("mlp", MODEL)) == (
        LocationKeys(("mlp",), "model.py:12:5", ("model.py:12:5",), ()),
        ("mlp", "model.py:12:5", None),
    )
    # The innermost NameLoc is a type marker or an origin: no name is a frame name.
    for inner in ("MatMul:", origin_name("tf", 3)):
        loc = NameLoc("a", NameLoc("b", NameLoc(inner, MODEL)))
        keys, fields = _fast(loc)
        assert keys is not None and keys.names == ("a", "b") == location_keys(loc).names
        assert fields is not None and fields[0] == "a"
    repeated = NameLoc("a", NameLoc("b", NameLoc("a", NameLoc("f", MODEL))))
    assert _fast(repeated)[0] == location_keys(repeated)
    assert location_keys(repeated).names == ("a", "b")


def test_fast_keys_of_a_name_chain_around_an_unknown_location() -> None:
    """No source and an empty chain; a chain of one stamp has only its origin."""
    keys, fields = _fast(NameLoc("x", NameLoc(origin_name("tf", 4), UnknownLoc())))
    assert keys == LocationKeys(names=("x",), source=None, chain=(), origins=("tf#4",))
    assert fields == ("x", None, "tf#4")
    assert _fast(UnknownLoc()) == (LocationKeys((), None, (), ()), (None, None, None))
    assert _fast(MODEL) == (
        LocationKeys((), "model.py:12:5", ("model.py:12:5",), ()),
        (None, "model.py:12:5", None),
    )


@pytest.mark.parametrize(
    "loc",
    [
        CallSiteLoc(MODEL, LIBRARY),
        NameLoc("a", CallSiteLoc(MODEL, LIBRARY)),
        NameLoc("a", FusedLoc((NameLoc("T:"), NameLoc("b")))),
    ],
)
def test_fast_keys_decline_other_shapes(loc: Loc) -> None:
    """Call sites and fused locations are left to the location model (None)."""
    assert _fast(loc) == (None, None)


def test_a_call_site_with_a_frame_on_one_side_ends_the_search_of_a_fused_location() -> None:
    """A member whose callee or caller alone holds a frame is the first chain: later members
    are not searched."""
    callee_only = FusedLoc((CallSiteLoc(MODEL, UnknownLoc()), LIBRARY))
    assert call_chain(callee_only) == (MODEL,)
    caller_only = FusedLoc((CallSiteLoc(NameLoc("f"), MODEL), LIBRARY))
    assert call_chain(caller_only) == (MODEL,)
    neither = FusedLoc((CallSiteLoc(NameLoc("f"), UnknownLoc()), LIBRARY))
    assert call_chain(neither) == (LIBRARY,)


def test_a_repeated_origin_stamp_is_listed_once() -> None:
    """Two equal stamps (a pass run twice) give one origin, by model and by fast path."""
    loc = NameLoc(origin_name("tf", 5), NameLoc(origin_name("tf", 5), MODEL))
    assert origins(loc) == ("tf#5",)
    keys, fields = _fast(loc)
    assert keys is not None and keys.origins == ("tf#5",)
    assert fields == (None, "model.py:12:5", "tf#5")
    two = NameLoc(origin_name("tf", 5), NameLoc(origin_name("hlo", 1), UnknownLoc()))
    assert origins(two) == ("tf#5", "hlo#1")
    assert _fast(two)[0] == LocationKeys((), None, (), ("tf#5", "hlo#1"))


def test_a_repeated_name_is_listed_once_by_the_fast_path() -> None:
    """Two equal op names (with or without a frame name below) give one runtime name."""
    for loc in (
        NameLoc("a/b", NameLoc("a/b", UnknownLoc())),
        NameLoc("a/b", NameLoc("a/b", NameLoc("mlp", MODEL))),
    ):
        keys, fields = _fast(loc)
        assert keys is not None and keys.names == ("a/b",) == runtime_names(loc)
        assert fields is not None and fields[0] == "a/b"
