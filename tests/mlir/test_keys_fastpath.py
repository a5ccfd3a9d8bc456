"""The fast key derivation (no location model for name chains) equals the model-based keys."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from irprof.mlir.context import make_context
from irprof.mlir.keys import location_keys
from irprof.mlir.load import load_module
from irprof.mlir.locations import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Loc,
    NameLoc,
    UnknownLoc,
    from_ir,
    to_ir,
)
from irprof.mlir.op_index import OpIndex, derive_op_infos, derive_op_keys, walk_ops
from irprof.opprofile import OpKey
from irprof.passes.pipeline import run_pipeline

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"


def _reference_keys(module: ir.Module) -> list[OpKey]:
    """Keys as the location model defines them: `location_keys(from_ir(...))` + ordinals."""
    seen: dict[tuple[str | None, str | None], int] = {}
    keys = []
    for op in walk_ops(module):
        derived = location_keys(from_ir(op.location))
        pair = (derived.name, derived.source)
        keys.append(OpKey(derived.name, derived.source, derived.origin, seen.get(pair, 0)))
        seen[pair] = seen.get(pair, 0) + 1
    return keys


def _assert_fast_equals_model(module: ir.Module) -> None:
    reference = _reference_keys(module)
    assert [key for _, key in derive_op_keys(module)] == reference
    infos = derive_op_infos(module)
    assert [info.key for info in infos] == reference
    for info, op in zip(infos, walk_ops(module), strict=True):
        assert info.keys == location_keys(from_ir(op.location))
        assert info.loc == from_ir(op.location)


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.mlir")))
def test_fast_keys_equal_model_keys_on_real_ir(fixture: str) -> None:
    _assert_fast_equals_model(load_module(FIXTURES / fixture, make_context()))


# Names that exercise every rule: origin stamps, TF type markers, scoped and bare names, repeats.
_name = st.sampled_from(
    ["irprof.origin=tf#1", "irprof.origin=hlo#7", "MatMul:", "a/b", "x", "n@fn", "a/b", 'é "q"']
)
_leaf = st.one_of(
    st.just(UnknownLoc()),
    st.builds(FileLineColLoc, st.sampled_from(["m.py", "f g.py"]), st.integers(0, 9), st.just(1)),
)
_name_chain = st.recursive(_leaf, lambda inner: st.builds(NameLoc, _name, inner), max_leaves=5)
_tree = st.recursive(
    _name_chain,
    lambda children: st.one_of(
        st.builds(NameLoc, _name, children),
        st.builds(CallSiteLoc, children, children),
        st.builds(FusedLoc, st.lists(children, min_size=1, max_size=3).map(tuple)),
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None, database=None)
@given(trees=st.lists(st.one_of(_name_chain, _tree), min_size=1, max_size=12))
def test_fast_keys_equal_model_keys_property(trees: list[Loc]) -> None:
    """PROPERTY: on any mix of locations, fast keys, ordinals and infos equal the model's."""
    context = make_context()
    lines = [f'"test.op"() : () -> () {to_ir(tree, context)}' for tree in trees]
    module = ir.Module.parse("\n".join(lines), context)
    _assert_fast_equals_model(module)
    _assert_index_equals_brute_force(derive_op_keys(module))


def _matches(wanted: OpKey, key: OpKey) -> bool:
    """Every set field equal; with an ordinal, name and source equal even when unset (the
    ordinal counts within one exact (name, source) pair)."""
    exact = (True, True, False, False) if wanted.ordinal is not None else (False,) * 4
    return all(
        w == k or (w is None and not must)
        for w, k, must in zip(astuple(wanted), astuple(key), exact, strict=True)
    )


def _assert_index_equals_brute_force(keyed: list[tuple[ir.Operation, OpKey]]) -> None:
    index = OpIndex(keyed)
    keys = [key for _, key in keyed]
    for key in keys:
        for wanted in (
            OpKey(name=key.name),
            OpKey(source=key.source),
            OpKey(origin=key.origin),
            OpKey(name=key.name, ordinal=key.ordinal),
            OpKey(name=key.name, source=key.source),
            key,
            OpKey(ordinal=key.ordinal),
        ):
            expected = [p for p, actual in enumerate(keys) if _matches(wanted, actual)]
            assert index.match_positions(wanted) == expected


def test_info_loc_is_the_location_at_derive_time() -> None:
    """The model is built on demand, but from the location the op had when keys were derived."""
    module = load_module(FIXTURES / "jax.stablehlo.mlir", make_context())
    infos = derive_op_infos(module)
    before = [from_ir(op.location) for op in walk_ops(module)]
    run_pipeline(module, "builtin.module(irprof-stamp-origin{level=hlo})")
    assert [from_ir(op.location) for op in walk_ops(module)] != before
    assert [info.loc for info in infos] == before
