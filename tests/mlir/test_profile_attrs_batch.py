"""Profiles built in batches from attribute text are the very attributes the builder makes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.mlir.context import make_context
from irprof.mlir.profile_attrs import AttributeBuilder, Layout, float_literal, string_literal
from irprof.opprofile import ProfileData

_I64 = st.integers(-(2**63), 2**63 - 1)
# Every code point but lone surrogates (not encodable, so never in a profile read from JSON).
_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
_float = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-05, 5e-324, 1.7976931348623157e308, 1e16, 0.1, -2.5e-300]),
)
_data = st.builds(
    ProfileData,
    count=_I64, total_ns=_I64, mean_ns=_I64, min_ns=_I64, max_ns=_I64, first_ts_ns=_I64,
    fraction=_float,
    kernels=st.lists(_text, max_size=3).map(tuple),
    fused_with=st.lists(_text, max_size=2).map(tuple),
    source=_text,
)  # fmt: skip


@settings(max_examples=150, deadline=None, database=None)
@given(datas=st.lists(_data, min_size=1, max_size=6))
def test_batch_equals_builder_property(datas: list[ProfileData]) -> None:
    """PROPERTY: uniqued attributes compare by identity, so equality is bit-for-bit."""
    builder = AttributeBuilder(make_context())
    assert builder.profiles(datas) == [builder.profile(d) for d in datas]
    assert builder.profiles(datas, "ts-dur") == [builder.ts_dur(d) for d in datas]


def test_batch_spans_several_parses_and_keeps_order() -> None:
    builder = AttributeBuilder(make_context())
    datas = [ProfileData.from_durations([k + 1], k, 10**6, kernels=[f"k{k}"]) for k in range(9000)]
    built = builder.profiles(datas)
    assert len(built) == 9000
    assert built[0] == builder.profile(datas[0]) and built[-1] == builder.profile(datas[-1])


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64, -(2**63) - 1])
def test_out_of_range_values_fail_as_with_the_builder(value: int) -> None:
    """The parser would wrap 2**63..2**64-1 to negative i64; the batch must not."""
    builder = AttributeBuilder(make_context())
    bad = ProfileData(**{**ProfileData.from_durations([1], 0, 1).__dict__, "total_ns": value})
    layouts: tuple[Layout, ...] = ("irprof", "ts-dur")
    for layout in layouts:
        with pytest.raises(Exception) as by_builder:  # the bindings' own error type
            builder.profile(bad) if layout == "irprof" else builder.ts_dur(bad)
        with pytest.raises(by_builder.type):
            builder.profiles([bad], layout)


def test_unencodable_strings_fail_as_with_the_builder() -> None:
    builder = AttributeBuilder(make_context())
    bad = ProfileData(**{**ProfileData.from_durations([1], 0, 1).__dict__, "source": "a\udc80"})
    with pytest.raises(TypeError, match="get\\(\\)"):
        builder.profile(bad)
    with pytest.raises(TypeError, match="get\\(\\)"):
        builder.profiles([bad])


def test_unknown_layout_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown annotation layout"):
        AttributeBuilder(make_context()).profiles([], "xml")  # type: ignore[arg-type]


def test_literals() -> None:
    assert string_literal('a"b\\c\nd') == '"a\\22b\\5Cc\\0Ad"'
    assert string_literal("é/x") == '"é/x"'
    assert float_literal(1e-05) == "1.0e-05"
    assert float_literal(math.inf) == "0x7FF0000000000000 : f64"
