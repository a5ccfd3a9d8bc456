"""`mlir/profile_attrs.py`: attaching in one layout removes the other layouts' attributes (the
profile read back is the one just attached), and a damaged profile is refused with an error
naming the op and the field."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from irprof.errors import MlirError
from irprof.mlir import profile_attrs
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import walk_ops
from irprof.mlir.profile_attrs import (
    PROFILE_ATTR,
    TS_DUR_ATTR,
    AttributeBuilder,
    Layout,
    attach_profile,
    get_profile,
    profile_text,
    ts_dur_text,
)
from irprof.mlir.profile_table import ROW_ATTR, TABLE_ATTR
from irprof.opprofile import ProfileData

FIRST = ProfileData(
    count=2, total_ns=300, mean_ns=150, min_ns=100, max_ns=200, first_ts_ns=7, fraction=0.25
)
SECOND = ProfileData(
    count=1, total_ns=40, mean_ns=40, min_ns=40, max_ns=40, first_ts_ns=9, fraction=0.5
)


def _leaf(attributes: str = "") -> tuple[ir.Module, ir.Operation]:
    """A module (kept by the caller while its ops are used) and its op `x.leaf`."""
    text = f'"x.outer"() ({{\n  "x.leaf"() {{{attributes}}} : () -> () loc("leaf")\n}}) : () -> ()'
    module = load_module(text, make_context())
    return module, walk_ops(module)[1]


def test_each_layout_replaces_the_profiles_of_the_others() -> None:
    """irprof over ts-dur, compact over irprof, ts-dur over compact: one attribute is left and
    it reads back as the profile attached last."""
    module, leaf = _leaf()
    attach_profile(leaf, FIRST, layout="ts-dur")
    attach_profile(leaf, SECOND)
    assert TS_DUR_ATTR not in leaf.attributes
    attach_profile(leaf, FIRST, layout="compact")
    # `irprof.profile` would be read before the row: it must be gone.
    assert PROFILE_ATTR not in leaf.attributes and ROW_ATTR in leaf.attributes
    assert get_profile(leaf) == FIRST
    attach_profile(leaf, SECOND, layout="ts-dur")
    assert ROW_ATTR not in leaf.attributes
    assert list(leaf.attributes) == [TS_DUR_ATTR]
    read = get_profile(leaf)
    assert read is not None and (read.total_ns, read.first_ts_ns) == (40, 9)
    assert TABLE_ATTR in module.operation.attributes  # the compact table stays


def test_a_malformed_field_is_an_error_naming_the_op() -> None:
    """A field of the wrong type: an MlirError naming the op and its location."""
    _module, leaf = _leaf('irprof.profile = {total_ns = "lots"}')
    with pytest.raises(MlirError) as raised:
        get_profile(leaf)
    message = str(raised.value)
    assert message.startswith("op 'x.leaf' at loc(\"leaf\"): profile attribute is malformed (")


@pytest.mark.parametrize("fraction", ["-5.000000e-01", "0x7FF8000000000000", "0x7FF0000000000000"])
def test_a_fraction_that_is_not_a_share_is_refused(fraction: str) -> None:
    """Negative (finite), NaN and +inf fractions are each refused, naming the field."""
    _module, leaf = _leaf(f"irprof.profile = {{fraction = {fraction} : f64}}")
    with pytest.raises(MlirError, match=r"^op 'x\.leaf' at .*: profile field 'fraction' = "):
        get_profile(leaf)


@pytest.mark.parametrize("fraction", ["0.000000e+00", "1.500000e+00"])
def test_a_fraction_of_zero_or_above_one_is_read(fraction: str) -> None:
    """Zero and a share above 1 (time counted on overlapping events) are kept."""
    _module, leaf = _leaf(f"irprof.profile = {{fraction = {fraction} : f64}}")
    read = get_profile(leaf)
    assert read is not None and read.fraction == float(fraction)


def test_the_compact_layout_has_no_attribute_to_build() -> None:
    """`AttributeBuilder.profiles` refuses the compact layout, saying why."""
    builder = AttributeBuilder(make_context())
    with pytest.raises(ValueError, match=r"^the compact layout has no per-op profile attribute$"):
        builder.profiles([FIRST], "compact")


@pytest.mark.parametrize("layout", ["irprof", "ts-dur"])
def test_valid_profiles_are_parsed_in_one_batch_not_built_one_by_one(
    monkeypatch: pytest.MonkeyPatch, layout: Layout
) -> None:
    """The per-profile builder is only the fallback for values the batch text cannot hold."""
    builder = AttributeBuilder(make_context())

    def one_by_one(data: ProfileData) -> ir.Attribute:
        raise AssertionError("built one by one")

    monkeypatch.setattr(builder, "profile", one_by_one)
    monkeypatch.setattr(builder, "ts_dur", one_by_one)
    built = builder.profiles([FIRST, SECOND], layout)
    text = profile_text if layout == "irprof" else ts_dur_text
    expected = [ir.Attribute.parse(text(data), builder.context) for data in (FIRST, SECOND)]
    assert [str(attribute) for attribute in built] == [str(one) for one in expected]


def test_a_batch_that_falls_back_is_followed_by_the_next_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches of 2: the first one's text does not parse, so it is built profile by profile;
    the two batches after it are still parsed, and every profile gets its attribute."""
    monkeypatch.setattr(profile_attrs, "_PARSE_BATCH", 2)
    monkeypatch.setattr(
        profile_attrs,
        "profile_text",
        lambda data: "{" if data is FIRST else profile_text(data),
    )
    builder = AttributeBuilder(make_context())
    datas = [FIRST, SECOND, SECOND, SECOND, SECOND]
    built = builder.profiles(datas)
    assert [str(attribute) for attribute in built] == [str(builder.profile(data)) for data in datas]


def test_a_negative_count_is_an_error_naming_the_op_and_the_field() -> None:
    """A count below 0: an MlirError naming the op, its location, the field and the value."""
    _module, leaf = _leaf("irprof.profile = {count = -3 : i64}")
    with pytest.raises(MlirError) as raised:
        get_profile(leaf)
    assert (
        str(raised.value) == "op 'x.leaf' at loc(\"leaf\"): profile field 'count' = -3 is negative"
    )
