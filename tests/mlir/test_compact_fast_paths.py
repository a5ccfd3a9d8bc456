"""The fast paths `apply_opprofile(layout="compact")` takes, held to their definitions.

- `derive_key_columns` (keys without an `OpKey` per op) against the location model;
- `OpIndex.match_many` (a dict look-up for name-only keys) against matching by hand;
- `write_table` (rows as positions into the index's ops) against the profile each op must read;
- the table's string encoding (ASCII shortcut, UTF-8 otherwise) against byte counts computed
  here, and boundary tables (empty, one row, int64 extremes, the last row of many).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from irprof.mlir.apply_profile import annotate_module, apply_opprofile, write_summary
from irprof.mlir.context import make_context
from irprof.mlir.keys import location_keys
from irprof.mlir.load import load_module, print_module
from irprof.mlir.locations import from_ir
from irprof.mlir.op_index import OpIndex, derive_key_columns, walk_ops
from irprof.mlir.profile_attrs import (
    PROFILE_ATTR,
    attach_profile,
    get_profile,
    get_summary,
    has_profile,
)
from irprof.mlir.profile_table import (
    ROW_ATTR,
    TABLE_ATTR,
    attach_table,
    decode_table,
    row_attributes,
    table_attribute,
    write_table,
)
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"


def _module_text(ops: int) -> str:
    """`ops` chained adds, op k at `"layer_k/add"("model.py":k+1:5)`."""
    lines = ["func.func @main(%arg0: i64) -> i64 {"]
    previous = "%arg0"
    for k in range(ops):
        location = f'loc("layer_{k}/add"("model.py":{k + 1}:5))'
        lines.append(f"  %v{k} = arith.addi {previous}, %arg0 : i64 {location}")
        previous = f"%v{k}"
    lines += [f"  return {previous} : i64", "}"]
    return "\n".join(lines)


def _adds(module: ir.Module) -> list[ir.Operation]:
    return [op for op in walk_ops(module) if op.name == "arith.addi"]


def _data(total: int, **fields: Any) -> ProfileData:
    return ProfileData(
        count=1, total_ns=total, mean_ns=total, min_ns=total, max_ns=total, first_ts_ns=total,
        fraction=0.5, **fields,
    )  # fmt: skip


def _reparsed(module: ir.Module) -> ir.Module:
    return load_module(print_module(module, debug_info=True), make_context())


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.mlir")))
def test_key_columns_equal_the_location_model(fixture: str) -> None:
    module = load_module(FIXTURES / fixture, make_context())
    ops = walk_ops(module)
    seen: dict[tuple[str | None, str | None], int] = {}
    reference = []
    for op in ops:
        keys = location_keys(from_ir(op.location))
        pair = (keys.name, keys.source)
        reference.append(OpKey(keys.name, keys.source, keys.origin, seen.get(pair, 0)))
        seen[pair] = seen.get(pair, 0) + 1
    columns = derive_key_columns(module)
    assert columns.ops == ops
    assert columns.keys() == reference
    index = OpIndex.of_columns(columns)
    assert len(index) == len(reference)
    assert [index.key_at(p) for p in range(len(index))] == reference
    fields = ("name", "source", "origin", "ordinal")
    for key in reference[:50]:  # each key the module has: every non-None field must equal,
        # and, with an ordinal, the (name, source) pair it counts in exactly: each key one op
        exact = ("name", "source") if key.ordinal is not None else ()
        expected = [
            p
            for p, other in enumerate(reference)
            if all(
                getattr(key, f) == getattr(other, f) or (getattr(key, f) is None and f not in exact)
                for f in fields
            )
        ]
        assert expected == [reference.index(key)]
        assert index.match_positions(key) == expected
        by_name = [p for p, other in enumerate(reference) if other.name == key.name]
        every = list(range(len(reference)))  # a key without any field matches every op
        assert index.match_many([key, OpKey(name=key.name)]) == [
            expected,
            by_name if key.name is not None else every,
        ]


_VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))
_KEYS = st.builds(
    OpKey, name=_VALUES, source=_VALUES, origin=_VALUES,
    ordinal=st.one_of(st.none(), st.integers(0, 2)),
)  # fmt: skip


@given(st.lists(_KEYS, max_size=30), st.lists(_KEYS, max_size=8))
def test_match_many_is_the_definition(ops: list[OpKey], queries: list[OpKey]) -> None:
    keyed: list[tuple[Any, OpKey]] = [(f"op{p}", key) for p, key in enumerate(ops)]
    index = OpIndex(keyed)
    found = index.match_many(queries)
    fields = ("name", "source", "origin", "ordinal")
    exact = {q: ("name", "source") if q.ordinal is not None else () for q in queries}
    assert found == [
        [
            p
            for p, key in enumerate(ops)
            if all(
                getattr(q, f) == getattr(key, f) or (getattr(q, f) is None and f not in exact[q])
                for f in fields
            )
        ]
        for q in queries
    ]
    for positions in found:  # the caller may keep or change its lists: never the index's own
        positions.append(-1)
    assert index.match_many(queries) == [[p for p in f if p != -1] for f in found]
    # skip_empty: a key without any field matches nothing (apply_opprofile's rule).
    skipped = index.match_many(queries, skip_empty=True)
    assert skipped == [
        [] if q == OpKey() else [p for p in f if p != -1]
        for q, f in zip(queries, found, strict=True)
    ]


def test_row_attributes_are_the_i32_row_numbers() -> None:
    context = ir.Context()
    assert row_attributes(0, context) == []
    rows = row_attributes(3, context)
    assert [str(row) for row in rows] == ["0 : i32", "1 : i32", "2 : i32"]


def test_write_table_gives_each_position_its_row_and_drops_other_layouts() -> None:
    module = load_module(_module_text(4), make_context())
    ops = _adds(module)
    attach_profile(ops[3], _data(99), layout="irprof")  # a per-op dictionary to replace
    datas = [_data(1), _data(2)]
    write_table(module.operation, datas, ops, [[0, 3], [2]], replaces=(PROFILE_ATTR,))
    assert [get_profile(op) for op in ops] == [_data(1), None, _data(2), _data(1)]
    assert PROFILE_ATTR not in ops[3].attributes
    # A second table keeps the rows it does not rewrite: op 2 keeps _data(2), op 0 and 3 their
    # _data(1) (one carried row for both), op 1 gets the new row.
    write_table(module.operation, [_data(5)], ops, [[1]])
    reparsed = _reparsed(module)  # kept: the ops of a collected module dangle
    assert [get_profile(op) for op in _adds(reparsed)] == [
        _data(1), _data(5), _data(2), _data(1),
    ]  # fmt: skip
    table = decode_table(module.operation.attributes[TABLE_ATTR])
    assert table.rows == 3
    rows = [int(ir.IntegerAttr(op.attributes[ROW_ATTR]).value) for op in ops]
    assert rows[0] == rows[3] != rows[2] and rows[1] == 0


def test_attach_table_and_write_table_write_the_same_text() -> None:
    texts = []
    for by_positions in (False, True):
        module = load_module(_module_text(3), make_context())
        ops = _adds(module)
        if by_positions:
            write_table(module.operation, [_data(7), _data(8)], ops, [[2, 0], [1]])
        else:
            attach_table(module.operation, [(_data(7), [ops[2], ops[0]]), (_data(8), [ops[1]])])
        texts.append(print_module(module, debug_info=True))
    assert texts[0] == texts[1]


def _printed_strings(datas: list[ProfileData]) -> tuple[bytes, list[int]]:
    """The `strings` bytes and `string_ends` of the printed table, read with numpy."""
    table = ir.DictAttr(ir.Attribute.parse(str(table_attribute(datas, ir.Context())), ir.Context()))
    blob = np.asarray(ir.DenseIntElementsAttr(table["strings"])).astype(np.uint8).tobytes()
    ends = np.asarray(ir.DenseIntElementsAttr(table["string_ends"])).tolist()
    return blob, [int(end) for end in ends]


@pytest.mark.parametrize(
    "kernels",
    [
        ("plain", "ascii/name:Op"),  # the ASCII shortcut
        ("é", "a", "日本", "😀", "x"),  # 2-, 1-, 3- and 4-byte characters
        ("",),  # only the empty string
    ],
)
def test_string_ends_are_utf8_byte_offsets(kernels: tuple[str, ...]) -> None:
    datas = [_data(1, kernels=kernels, source="src")]
    blob, ends = _printed_strings(datas)
    distinct = list(dict.fromkeys(["", "src", *kernels]))
    assert len(blob) == sum(len(s.encode("utf-8")) for s in distinct)
    assert len(ends) == len(distinct) and ends[0] == 0
    pieces = [blob[start:end].decode("utf-8") for start, end in zip([0, *ends], ends, strict=False)]
    assert sorted(pieces) == sorted(distinct)
    table = decode_table(
        ir.Attribute.parse(str(table_attribute(datas, ir.Context())), ir.Context())
    )
    assert table.profile(0) == datas[0]


def test_a_lone_surrogate_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="cannot be written as UTF-8"):
        table_attribute([_data(1, kernels=("\ud800",))], ir.Context())


_EXTREMES = (-(2**63), -1, 0, 1, 2**63 - 1)


@pytest.mark.parametrize("rows", [0, 1, 3])
def test_boundary_tables_round_trip_through_text(rows: int) -> None:
    datas = [
        ProfileData(
            count=_EXTREMES[(r + 1) % 5],
            total_ns=_EXTREMES[r % 5],
            mean_ns=2**63 - 1,
            min_ns=-(2**63),
            max_ns=_EXTREMES[(r + 2) % 5],
            first_ts_ns=-(2**63) + r,
            fraction=1.0 / (r + 1),
            kernels=(f"k{r}", "ü"),
            fused_with=("f",) * r,
            source=f"s{r}",
            group="g" if r else "",
            group_total_ns=r,
            group_size=r,
            share_basis="even" if r else "",
        )
        for r in range(rows)
    ]
    table = decode_table(
        ir.Attribute.parse(str(table_attribute(datas, ir.Context())), ir.Context())
    )
    assert table.rows == rows
    assert [table.profile(r) for r in range(rows)] == datas


@settings(max_examples=5, deadline=None)
@given(st.integers(1, 300))
def test_every_op_of_a_many_op_module_reads_its_own_entry(ops: int) -> None:
    module = load_module(_module_text(ops), make_context())
    profile = OpProfile(
        level="t", framework="t",
        entries=tuple(
            OpProfileEntry(OpKey(name=f"layer_{k}/add"), _data(k, kernels=(f"k{k}",)))
            for k in range(ops)
        ),
    )  # fmt: skip
    applied = apply_opprofile(module, profile, layout="compact")
    assert applied.annotated == frozenset(range(1, ops + 1))  # position 0 is the func
    reparsed = _reparsed(module)
    adds = _adds(reparsed)
    assert all(has_profile(op) for op in adds)
    last = adds[-1]
    assert int(ir.IntegerAttr(last.attributes[ROW_ATTR]).value) == ops - 1
    assert [get_profile(op) for op in adds] == [_data(k, kernels=(f"k{k}",)) for k in range(ops)]


@pytest.mark.parametrize("layout", ["irprof", "compact"])
def test_the_summary_from_the_applied_index_equals_one_derived_again(layout: str) -> None:
    module = load_module(_module_text(5), make_context())
    ops = _adds(module)
    attach_profile(ops[4], _data(40), layout="irprof")  # annotated before: counted too
    profile = OpProfile(
        level="t", framework="t",
        entries=(
            OpProfileEntry(OpKey(name="layer_1/add"), _data(1)),
            OpProfileEntry(OpKey(name="layer_3/add", source="model.py:4:5", ordinal=0), _data(3)),
            OpProfileEntry(OpKey(name="nowhere"), _data(9)),
        ),
    )  # fmt: skip
    annotate_module(module, profile, layout=layout)  # type: ignore[arg-type]
    from_index = get_summary(module)
    write_summary(module, profile, entries_unmatched=1)  # keys derived from the module again
    assert get_summary(module) == from_index
    assert from_index is not None and from_index["ops_annotated"] == 3


def test_write_table_refuses_data_and_positions_of_different_lengths() -> None:
    module = load_module(_module_text(2), make_context())
    with pytest.raises(ValueError, match="2 rows of data for 1 rows of positions"):
        write_table(module.operation, [_data(1), _data(2)], _adds(module), [[0]])
    assert TABLE_ATTR not in module.operation.attributes  # nothing written


SAME_NAME = """
func.func @main() {
  "x.sourced"() : () -> () loc("while"("flax/attention.py":633:22))
  "x.bare"() : () -> () loc("while")
  "x.bare"() : () -> () loc("while")
  return
}
"""


@pytest.mark.parametrize("layout", ["irprof", "compact"])
def test_a_key_with_an_ordinal_designates_one_op_of_its_exact_pair(layout: str) -> None:
    """GIVEN ops named `while`, one with a source and two without (JAX's `threefry2x32` and its
    copies, found on a Flax block trained with dropout) and an entry for each derived key
    THEN each op receives its own entry: `(while, no source)#0` is not also `(while, src)#0`,
    which had received both entries, its own lost and the other's counted twice."""
    module = load_module(SAME_NAME, make_context())
    keys = [OpKey("while", "flax/attention.py:633:22", None, 0), OpKey("while", None, None, 0),
            OpKey("while", None, None, 1)]  # fmt: skip
    profile = OpProfile(
        level="t", framework="t",
        entries=tuple(OpProfileEntry(key, _data(10**k)) for k, key in enumerate(keys, 1)),
    )  # fmt: skip
    annotate_module(module, profile, layout=layout)  # type: ignore[arg-type]
    ops = [op for op in walk_ops(module) if op.name.startswith("x.")]
    totals = [get_profile(op).total_ns for op in ops]  # type: ignore[union-attr]
    assert totals == [10, 100, 1000]
    summary = get_summary(module)
    assert summary is not None and summary["ops_annotated"] == 3
