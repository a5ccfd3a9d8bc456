"""The pre-scan's nesting depth against a token-by-token scan: `->`, `>=` and `<=` are not
brackets wherever they stand, and a `-` or `=` next to a bracket (`dense<-1>`) changes nothing.

A TF module of `keras.applications.InceptionV3` trained with `fit` holds 1,043 `dense<-1>`
constants; the pre-scan read each `<-1>` as `<->` once the digit was dropped, lost the `>` to an
arrow, and refused the module as nested 1,048 deep (its real depth is under 20).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.errors import MlirError
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.safe_parse import ParseLimits, prescan_mlir

NOT_BRACKETS = (b"->", b">=", b"<=")


def deepest(text: bytes) -> int:
    """The deepest nesting, token by token: a two-character arrow or comparison is skipped,
    an opener goes one deeper, a closer one shallower but never below the top."""
    depth = deepest_seen = index = 0
    while index < len(text):
        if text[index : index + 2] in NOT_BRACKETS:
            index += 2
            continue
        char = text[index : index + 1]
        if char in b"([{<":
            depth += 1
        elif char in b")]}>":
            depth = max(depth - 1, 0)
        deepest_seen = max(deepest_seen, depth)
        index += 1
    return deepest_seen


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="()[]{}<>-=1 x", max_size=120), limit=st.integers(0, 6))
def test_the_prescan_refuses_exactly_what_nests_past_the_limit(text: str, limit: int) -> None:
    data = text.encode()
    refused = deepest(data) > limit
    if refused:
        with pytest.raises(MlirError, match=f"nesting deeper than {limit} levels"):
            prescan_mlir(data, "t.mlir", ParseLimits(max_nesting=limit))
    else:
        prescan_mlir(data, "t.mlir", ParseLimits(max_nesting=limit))


def test_a_module_of_many_negative_constants_parses_under_the_default_limit() -> None:
    constants = "".join(
        f"    %c{index} = arith.constant dense<-1> : tensor<i32>\n" for index in range(1500)
    )
    text = f"func.func @f() {{\n{constants}    return\n  }}\n"
    assert deepest(text.encode()) == 2
    module = parse_module(text, make_context())
    assert len(module.body.operations[0].regions[0].blocks[0].operations) == 1501


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"a<-1>", 1),
        (b"dense<-1> dense<-2> dense<-3>", 1),  # each `>` closes its `<`
        (b"f(%a) -> (i1) {}", 1),
        (b"affine_set<(d0) : (d0 - 1 >= 0)>", 2),
        (b"<<=>", 1),  # `<=` is skipped first: `<`, then `>` closes it
        (b"-<->-", 1),  # `->` inside: the `<` stays open
    ],
)
def test_known_depths(text: bytes, depth: int) -> None:
    assert deepest(text) == depth
    prescan_mlir(text, "t.mlir", ParseLimits(max_nesting=depth))
    with pytest.raises(MlirError):
        prescan_mlir(text, "t.mlir", ParseLimits(max_nesting=depth - 1))
