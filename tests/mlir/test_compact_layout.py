"""The compact layout: one `irprof.profile_table` on the module, `irprof.row` per op.

The reference for every op is the per-op `irprof.profile` dictionary, decoded here field by
field (not by `get_profile`) and checked against the raw opprofile.json entries.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from irprof.api import Run
from irprof.errors import MlirError
from irprof.mlir.apply_profile import apply_opprofile
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import walk_ops
from irprof.mlir.profile_attrs import (
    PROFILE_ATTR,
    attach_profile,
    get_profile,
    has_profile,
    strip_profiles,
)
from irprof.mlir.profile_table import ROW_ATTR, TABLE_ATTR, decode_table, table_attribute
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

MLP_RUN = Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_run"
GROUP_FIELDS = {"group": "", "group_total_ns": 0, "group_size": 0, "share_basis": ""}


def _plain(attr: ir.Attribute) -> Any:
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    return [_plain(item) for item in ir.ArrayAttr(attr)]


def _dictionary(op: ir.Operation) -> dict[str, Any] | None:
    """The per-op `irprof.profile` as a plain dict, group fields defaulted when absent."""
    if PROFILE_ATTR not in op.attributes:
        return None
    fields = {named.name: _plain(named.attr) for named in ir.DictAttr(op.attributes[PROFILE_ATTR])}
    return {**GROUP_FIELDS, **fields}


def _as_dict(data: ProfileData | None) -> dict[str, Any] | None:
    if data is None:
        return None
    fields = {**data.__dict__, "kernels": list(data.kernels), "fused_with": list(data.fused_with)}
    del fields["event_ts"]  # opprofile.json only: the IR does not hold an op's event starts
    return fields


@pytest.fixture(scope="module")
def mlp_annotated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The JAX MLP run annotated per op: (its annotated IR, its opprofile.json)."""
    run = tmp_path_factory.mktemp("mlp") / "run"
    shutil.copytree(MLP_RUN, run)
    outcome = Run(run).annotate()
    return outcome.annotated_path, outcome.opprofile_path


def test_every_op_of_a_real_annotation_reads_the_same_in_both_layouts(
    mlp_annotated: tuple[Path, Path],
) -> None:
    annotated_path, opprofile_path = mlp_annotated
    per_op = load_module(annotated_path, make_context())
    # The captured IR is the annotated IR without irprof's attributes: same ops, same order.
    compact = load_module(MLP_RUN / "ir" / "stablehlo.mlir", make_context())
    apply_opprofile(compact, OpProfile.load(opprofile_path), layout="compact")
    compact = load_module(print_module(compact, debug_info=True), make_context())  # re-parsed
    raw_entries = orjson.loads(opprofile_path.read_bytes())["entries"]
    measured = [{**GROUP_FIELDS, **entry["profile"]} for entry in raw_entries]
    for profile in measured:
        profile.pop("event_ts", None)
    per_op_ops, compact_ops = walk_ops(per_op), walk_ops(compact)
    assert [op.name for op in per_op_ops] == [op.name for op in compact_ops]
    annotated = zero_time = 0
    for reference_op, compact_op in zip(per_op_ops, compact_ops, strict=True):
        expected = _dictionary(reference_op)
        assert has_profile(compact_op) == (expected is not None)
        assert _as_dict(get_profile(compact_op)) == expected
        if expected is not None:
            assert expected in measured  # the reference holds what the profile says
            annotated += 1
            zero_time += expected["total_ns"] == 0
    assert annotated == 24 and zero_time > 0  # ops with zero attributed time are rows too
    assert ROW_ATTR not in compact.operation.attributes
    assert get_profile(compact.operation) is None  # the table holder is not a profiled op


def test_compact_output_is_smaller_and_strips_back_to_the_input(
    mlp_annotated: tuple[Path, Path],
) -> None:
    _, opprofile_path = mlp_annotated
    captured = load_module(MLP_RUN / "ir" / "stablehlo.mlir", make_context())
    before = print_module(captured, debug_info=True)
    apply_opprofile(captured, OpProfile.load(opprofile_path), layout="compact")
    annotated = print_module(captured, debug_info=True)
    assert annotated.count(f"{ROW_ATTR} = ") == 24 and annotated.count(TABLE_ATTR) == 1
    reparsed = load_module(annotated, make_context())
    strip_profiles(reparsed)
    assert print_module(reparsed, debug_info=True) == before


MODULE = """func.func @main(%arg0: i64) -> i64 {
  %0 = arith.addi %arg0, %arg0 : i64 loc("a")
  %1 = arith.addi %0, %arg0 : i64 loc("b")
  %2 = arith.addi %1, %arg0 : i64 loc("c")
  return %2 : i64
}"""


def _data(total: int, *, kernels: tuple[str, ...] = (), group: str = "") -> ProfileData:
    return ProfileData(
        count=2, total_ns=total, mean_ns=total // 2, min_ns=0, max_ns=total, first_ts_ns=-5,
        fraction=total / 1000, kernels=kernels, source=f"src {total}", group=group,
        group_total_ns=7 if group else 0, group_size=3 if group else 0,
        share_basis="flops" if group else "",
    )  # fmt: skip


def _profile(**by_name: ProfileData) -> OpProfile:
    entries = tuple(OpProfileEntry(OpKey(name=name), data) for name, data in by_name.items())
    return OpProfile(level="t", framework="t", entries=entries)


def _adds(module: ir.Module) -> list[ir.Operation]:
    return [op for op in walk_ops(module) if op.name == "arith.addi"]


def _reparsed(module: ir.Module) -> ir.Module:
    return load_module(print_module(module, debug_info=True), make_context())


def _read_back(module: ir.Module) -> list[ProfileData | None]:
    """The profiles of the adds once the module is printed and parsed again."""
    reparsed = _reparsed(module)  # held: ops do not keep their module alive
    return [get_profile(op) for op in _adds(reparsed)]


def test_boundary_values_round_trip_through_the_printed_table() -> None:
    module = load_module(MODULE, make_context())
    wide = ProfileData(
        count=1, total_ns=2**63 - 1, mean_ns=2**40, min_ns=0, max_ns=2**63 - 1,
        first_ts_ns=-(2**63), fraction=1.0, kernels=("k\"\\\n", "é", ""),
        fused_with=("x",), source="", group="g", group_total_ns=1, group_size=2,
        share_basis="even",
    )  # fmt: skip
    profile = _profile(a=wide, b=_data(0), c=_data(5, kernels=("k1", "k2"), group="g1"))
    apply_opprofile(module, profile, layout="compact")
    assert _read_back(module) == [entry.data for entry in profile.entries]


def test_a_value_outside_i64_is_refused_as_by_the_per_op_layout() -> None:
    module = load_module(MODULE, make_context())
    with pytest.raises(OverflowError):
        apply_opprofile(module, _profile(a=_data(2**63)), layout="compact")


def test_ops_absent_from_the_profile_have_no_row_and_no_profile() -> None:
    module = load_module(MODULE, make_context())
    apply_opprofile(module, _profile(b=_data(10)), layout="compact")
    reparsed = _reparsed(module)
    assert [has_profile(op) for op in _adds(reparsed)] == [False, True, False]
    assert _read_back(module) == [None, _data(10), None]


def test_a_module_with_no_op_profiled_gets_an_empty_table() -> None:
    module = load_module(MODULE, make_context())
    before = print_module(module, debug_info=True)
    applied = apply_opprofile(module, _profile(elsewhere=_data(10)), layout="compact")
    assert not applied.annotated and len(applied.unmatched_entries) == 1
    reparsed = _reparsed(module)
    assert "rows = 0" in print_module(reparsed)
    assert not any(has_profile(op) or get_profile(op) for op in walk_ops(reparsed))
    strip_profiles(reparsed)
    assert print_module(reparsed, debug_info=True) == before


def test_reannotating_replaces_the_table_and_keeps_the_ops_it_does_not_name() -> None:
    module = load_module(MODULE, make_context())
    apply_opprofile(module, _profile(a=_data(1), b=_data(2)), layout="compact")
    apply_opprofile(module, _profile(b=_data(20), c=_data(30)), layout="compact")
    text = print_module(module, debug_info=True)
    assert text.count(TABLE_ATTR) == 1 and "rows = 3" in text  # no row left behind
    assert _read_back(module) == [_data(1), _data(20), _data(30)]
    # Annotating the same profile again changes nothing.
    apply_opprofile(module, _profile(b=_data(20), c=_data(30)), layout="compact")
    assert print_module(module, debug_info=True) == text


def test_switching_layouts_leaves_one_profile_per_op() -> None:
    module = load_module(MODULE, make_context())
    apply_opprofile(module, _profile(a=_data(1), b=_data(2)), layout="irprof")
    apply_opprofile(module, _profile(b=_data(20)), layout="compact")
    ops = _adds(module)
    assert ROW_ATTR not in ops[0].attributes and PROFILE_ATTR in ops[0].attributes
    assert PROFILE_ATTR not in ops[1].attributes and ROW_ATTR in ops[1].attributes
    apply_opprofile(module, _profile(b=_data(200)), layout="irprof")
    assert ROW_ATTR not in ops[1].attributes
    assert [get_profile(op) for op in ops] == [_data(1), _data(200), None]


def test_attach_profile_adds_one_row_at_a_time() -> None:
    module = load_module(MODULE, make_context())
    ops = _adds(module)
    attach_profile(ops[2], _data(3), layout="compact")
    attach_profile(ops[0], _data(1), layout="compact")
    assert _read_back(module) == [_data(1), None, _data(3)]


def _hostile(table: str, row: str = "0 : i32") -> tuple[ir.Module, ir.Operation]:
    text = (
        f"module attributes {{{TABLE_ATTR} = {table}}} {{\n"
        f"  func.func @f() attributes {{{ROW_ATTR} = {row}}} {{\n    return\n  }}\n}}"
    )
    module = load_module(text, make_context())
    return module, walk_ops(module)[0]  # the func.func


NO_STRINGS = "dense<> : tensor<0xi8>"
GOOD = (
    f"{{version = 1, rows = 1, strings = {NO_STRINGS}, string_ends = dense<0> : tensor<1xi8>, "
    "count = dense<1> : tensor<1xi8>, "
    + ", ".join(
        f"{name} = dense<0> : tensor<1xi8>"
        for name in (
            "total_ns",
            "mean_ns",
            "min_ns",
            "max_ns",
            "first_ts_ns",
            "group_total_ns",
            "group_size",
            "source",
            "group",
            "share_basis",
            "kernels_end",
            "fused_with_end",
        )
    )
    + ", fraction = dense<0.0> : tensor<1xf64>, kernels_ids = dense<> : tensor<0xi8>, "
    "fused_with_ids = dense<> : tensor<0xi8>}"
)


def test_a_hand_written_table_reads() -> None:
    _module, op = _hostile(GOOD)  # held: ops do not keep their module alive
    assert get_profile(op) == ProfileData(1, 0, 0, 0, 0, 0, 0.0)


@pytest.mark.parametrize(
    ("table", "row", "message"),
    [
        (GOOD, "1 : i32", "irprof.row = 1 is outside the profile table's 1 rows"),
        (GOOD, "-1 : i32", "irprof.row = -1 is outside"),
        (GOOD, '"0"', "is not an integer row index"),
        ("[1, 2]", "0 : i32", "not a dictionary"),
        (GOOD.replace("version = 1", "version = 2"), "0 : i32", "version 2 is not 1"),
        (GOOD.replace("rows = 1", "rows = 2"), "0 : i32", "has 1 values, expected 2"),
        (GOOD.replace(NO_STRINGS, '"x"'), "0 : i32", "'strings' is not a dense integer"),
        (GOOD.replace(NO_STRINGS, "dense<1> : tensor<1xi8>"), "0 : i32", "ending at 1"),
        (
            GOOD.replace(
                f"{NO_STRINGS}, string_ends = dense<0> : tensor<1xi8>",
                "dense<1> : tensor<1xi8>, string_ends = dense<[1, 1]> : tensor<2xi8>",
            ),
            "0 : i32",
            "must start with 0 (the empty string)",
        ),
        (
            # "é" is the bytes C3 A9: an offset between them cuts the character.
            GOOD.replace(
                f"{NO_STRINGS}, string_ends = dense<0> : tensor<1xi8>",
                "dense<[-61, -87]> : tensor<2xi8>, string_ends = dense<[0, 1, 2]> : tensor<3xi8>",
            ),
            "0 : i32",
            "cuts a UTF-8 character",
        ),
        (GOOD.replace("count = dense<1> : tensor<1xi8>, ", ""), "0 : i32", "'count' is missing"),
        (
            GOOD.replace("count = dense<1> : tensor<1xi8>", "count = 1"),
            "0 : i32",
            "'count' is not a dense integer tensor",
        ),
        (
            GOOD.replace("source = dense<0>", "source = dense<4>"),
            "0 : i32",
            "'source' indexes outside the 1 strings",
        ),
        (
            GOOD.replace("kernels_end = dense<0>", "kernels_end = dense<2>"),
            "0 : i32",
            "does not end at the 0 ids",
        ),
        (
            GOOD.replace("count = dense<1> : tensor<1xi8>", "count = dense<-1> : tensor<1xi8>"),
            "0 : i32",
            "'count' = -1 is negative",
        ),
    ],
)
def test_a_hostile_table_or_row_is_a_clear_error(table: str, row: str, message: str) -> None:
    _module, op = _hostile(table, row)
    with pytest.raises(MlirError, match="op '") as caught:
        get_profile(op)
    assert message in str(caught.value)
    assert has_profile(op)  # the op says it is profiled; reading it says why it cannot be


def test_a_row_without_any_table_is_a_clear_error() -> None:
    text = MODULE.replace(' : i64 loc("a")', f' {{{ROW_ATTR} = 0 : i32}} : i64 loc("a")')
    module = load_module(text, make_context())
    with pytest.raises(MlirError, match=f"carries {ROW_ATTR} but no enclosing op has"):
        get_profile(_adds(module)[0])


def test_group_fields_without_a_group_read_back_as_in_the_per_op_layout() -> None:
    module = load_module(MODULE, make_context())
    stray = ProfileData(**{**_data(4).__dict__, "group_total_ns": 9, "group_size": 3,
                           "share_basis": "even"})  # fmt: skip
    apply_opprofile(module, _profile(a=stray), layout="irprof")
    apply_opprofile(module, _profile(b=stray), layout="compact")
    per_op, compact, _ = _read_back(module)
    assert compact == per_op == _data(4)  # group fields mean nothing without a group


_I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
_PROFILES = st.builds(
    ProfileData,
    count=_I64, total_ns=_I64, mean_ns=_I64, min_ns=_I64, max_ns=_I64, first_ts_ns=_I64,
    fraction=st.floats(allow_nan=False),
    kernels=st.lists(_TEXT, max_size=3).map(tuple),
    fused_with=st.lists(_TEXT, max_size=2).map(tuple),
    source=_TEXT, group=_TEXT, group_total_ns=_I64, group_size=_I64, share_basis=_TEXT,
)  # fmt: skip


def _stored(data: ProfileData) -> ProfileData:
    """What the per-op layout keeps: no group fields without a group."""
    if data.group:
        return data
    return ProfileData(**{**data.__dict__, "group_total_ns": 0, "group_size": 0,
                          "share_basis": ""})  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(_PROFILES, max_size=12))
def test_any_profiles_survive_the_printed_table(datas: list[ProfileData]) -> None:
    context = ir.Context()
    printed = str(table_attribute(datas, context))
    table = decode_table(ir.Attribute.parse(printed, ir.Context()))
    assert [table.profile(row) for row in range(table.rows)] == [_stored(d) for d in datas]
