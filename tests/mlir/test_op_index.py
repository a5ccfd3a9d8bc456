"""`OpIndex.match_positions` agrees with matching every key by hand, for any key and query.

The index picks the smallest per-field table and only filters that; a wrong table, a dropped
field or an ordinal ignored would select other ops than the definition: every non-None field of
the query equals the op's, and with an ordinal the (name, source) pair it counts in is exact
(an unset name or source then means the op has none).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from irprof.mlir.op_index import OpIndex
from irprof.opprofile import OpKey

values = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))
keys = st.builds(
    OpKey,
    name=values,
    source=values,
    origin=values,
    ordinal=st.one_of(st.none(), st.integers(0, 2)),
)


def _by_hand(ops: list[OpKey], wanted: OpKey) -> list[int]:
    fields = ("name", "source", "origin", "ordinal")
    # with an ordinal, name and source must equal even when unset: it counts in that exact pair
    exact = ("name", "source") if wanted.ordinal is not None else ()
    return [
        position
        for position, key in enumerate(ops)
        if all(
            getattr(wanted, field) == getattr(key, field)
            or (getattr(wanted, field) is None and field not in exact)
            for field in fields
        )
    ]


@given(st.lists(keys, max_size=30), st.lists(keys, min_size=1, max_size=5))
def test_match_positions_is_the_definition(ops: list[OpKey], queries: list[OpKey]) -> None:
    keyed: list[tuple[Any, OpKey]] = [(f"op{position}", key) for position, key in enumerate(ops)]
    index = OpIndex(keyed)
    assert len(index) == len(ops)
    for wanted in queries:  # several queries on one index: its tables are built once, reused
        positions = index.match_positions(wanted)
        assert positions == _by_hand(ops, wanted)
        assert index.match(wanted) == [f"op{position}" for position in positions]
    for position, key in enumerate(ops):
        assert index.key_at(position) == key
        assert index.op_at(position) == f"op{position}"
