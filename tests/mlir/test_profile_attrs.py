"""The annotation interface: attach/get/has/strip, the ts-dur layout, the module summary."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree.compiler import ir

from irprof.coverage import Coverage
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import walk_ops
from irprof.mlir.profile_attrs import (
    PROFILE_ATTR,
    SUMMARY_ATTR,
    TS_DUR_ATTR,
    AttributeBuilder,
    ModuleSummary,
    attach_profile,
    attach_summary,
    attribute_name,
    float_literal,
    get_profile,
    get_summary,
    has_profile,
    profile_text,
    string_literal,
    strip_profiles,
    ts_dur_text,
)
from irprof.opprofile import ProfileData

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"

DATA = ProfileData.from_durations(
    [1200, 800], first_ts_ns=1_700_000_000_000_000_000, profiled_ns=10_000,
    kernels=("ynn_fusion.1", 'we"ird\\name'), fused_with=("jit(f)/tanh",), source="xplane:x",
)  # fmt: skip


def test_attach_then_get_returns_the_same_data_and_reparses() -> None:
    context = make_context()
    module = load_module(FIXTURES / "jax.stablehlo.mlir", context)
    dot = next(op for op in walk_ops(module) if op.name == "stablehlo.dot_general")
    assert not has_profile(dot) and get_profile(dot) is None
    attach_profile(dot, DATA)
    assert has_profile(dot)
    assert get_profile(dot) == DATA
    text = print_module(module)
    assert "irprof.profile = {count = 2 : i64" in text
    assert "fraction = 2.000000e-01 : f64" in text
    reparsed = load_module(text, context)
    dot2 = next(op for op in walk_ops(reparsed) if op.name == "stablehlo.dot_general")
    assert get_profile(dot2) == DATA


def test_thesis_layout_is_ts_first_start_and_dur_total() -> None:
    module = load_module(FIXTURES / "tf.function.mlir", make_context())
    matmul = next(op for op in walk_ops(module) if op.name == "tf.MatMul")
    attach_profile(matmul, DATA, layout="ts-dur")
    text = print_module(module, debug_info=False)
    assert f"profiler_data = {{dur = 2000 : i64, ts = {DATA.first_ts_ns} : i64}}" in text
    read = get_profile(matmul)
    assert read is not None and (read.total_ns, read.first_ts_ns, read.count) == (
        2000,
        DATA.first_ts_ns,
        1,
    )
    assert PROFILE_ATTR not in matmul.attributes
    with pytest.raises(ValueError, match="layout"):
        attach_profile(matmul, DATA, layout="xml")  # type: ignore[arg-type]


def test_summary_round_trips_and_strip_removes_everything() -> None:
    module = load_module(FIXTURES / "torch.fx.mlir", make_context())
    before = print_module(module)
    summary = {"framework": "torch", "level": "torch", "profiled_ns": 5, "time_coverage": 0.5}
    attach_summary(module, summary)
    for op in walk_ops(module)[:4]:
        attach_profile(op, DATA)
    assert get_summary(module) == summary
    assert strip_profiles(module) == 5
    assert print_module(module) == before
    assert get_summary(module) is None


# Generated modules: ops of registered and unregistered dialects with distinct locations.
_names = st.text(alphabet="abcdefgh/_:@()", min_size=1, max_size=12)
_loc = st.one_of(
    st.just("unknown"),
    st.tuples(st.integers(1, 999), st.integers(0, 99)).map(lambda p: f'"m.py":{p[0]}:{p[1]}'),
    _names.map(lambda n: '"' + n.replace('"', "") + '"'),
    st.tuples(_names, st.integers(1, 50)).map(lambda p: f'fused["T:", "{p[0]}"("f.py":{p[1]}:1)]'),
)
_op = st.tuples(st.sampled_from(["arith.constant", "tf.Foo", "x.y"]), _loc, st.booleans())


def _module_text(ops: list[tuple[str, str, bool]]) -> str:
    lines = ["func.func @f() {"]
    for number, (kind, loc, has_attr) in enumerate(ops):
        attr = f' {{keep = "v{number}"}}' if has_attr else ""
        if kind == "arith.constant":
            lines.append(f"  %c{number} = arith.constant{attr} {number} : i64 loc({loc})")
        else:
            lines.append(f'  "{kind}"(){attr} : () -> () loc({loc})')
    lines.append("  return")
    lines.append("}")
    return "\n".join(lines)


_durations = st.lists(st.integers(0, 10**12), min_size=1, max_size=4)


@settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    ops=st.lists(_op, min_size=1, max_size=12),
    picks=st.lists(st.tuples(st.integers(0, 40), _durations, st.booleans()), max_size=10),
)
def test_strip_of_attach_prints_exactly_the_input(
    ops: list[tuple[str, str, bool]], picks: list[tuple[int, list[int], bool]]
) -> None:
    """PROPERTY: annotated IR re-parses, and stripping what was attached gives the input back."""
    context = make_context()
    module = load_module(_module_text(ops), context)
    original = print_module(module)
    all_ops = walk_ops(module)
    for position, durations, ts_dur in picks:
        data = ProfileData.from_durations(durations, 7, 10**13, kernels=[f"k{position}"])
        attach_profile(
            all_ops[position % len(all_ops)], data, layout="ts-dur" if ts_dur else "irprof"
        )
    attach_summary(module, {"framework": "test", "ops": len(picks)})
    annotated = print_module(module)
    reparsed = load_module(annotated, context)
    assert print_module(reparsed) == annotated
    strip_profiles(reparsed)
    assert print_module(reparsed) == original
    strip_profiles(module)
    assert print_module(module) == original


I64_MAX = 2**63 - 1
I64_MIN = -(2**63)

MEASURED = ProfileData(
    count=2, total_ns=2000, mean_ns=1000, min_ns=800, max_ns=1200, first_ts_ns=-5,
    fraction=0.25, kernels=("k1", 'a"b'), fused_with=(), source="xplane:x",
)  # fmt: skip
SHARED = ProfileData(
    count=1, total_ns=300, mean_ns=300, min_ns=300, max_ns=300, first_ts_ns=7,
    fraction=1.5e-07, kernels=(), fused_with=("t",), source="s",
    group="fusion.1", group_total_ns=900, group_size=3, share_basis="flops",
)  # fmt: skip

# Walk order: 0 x.outer, 1 x.inner, 2 x.leaf, 3 x.last.
MODULE = """
"x.outer"() ({
  "x.inner"() ({
    "x.leaf"() : () -> ()
  }) : () -> ()
}) : () -> ()
"x.last"() : () -> ()
"""


def _ops(text: str = MODULE) -> tuple[ir.Module, list[ir.Operation]]:
    module = load_module(text, make_context())
    return module, walk_ops(module)


def test_attribute_names_per_layout() -> None:
    """`irprof` writes `irprof.profile`, `ts-dur` writes `profiler_data`, others are refused."""
    assert attribute_name("irprof") == "irprof.profile" == PROFILE_ATTR
    assert attribute_name("ts-dur") == "profiler_data" == TS_DUR_ATTR
    with pytest.raises(ValueError, match=r"unknown annotation layout 'xml'; expected one of"):
        attribute_name("xml")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain/name:0", '"plain/name:0"'),
        ("é", '"é"'),
        ("", '""'),
        ('a"b', '"a\\22b"'),
        ("a\\b", '"a\\5Cb"'),
        ("a\tb", '"a\\09b"'),
        ("\x7f", '"\\7F"'),
        ("\x00\x1f", '"\\00\\1F"'),
    ],
)
def test_string_literal_escapes_quotes_backslashes_and_controls(value: str, text: str) -> None:
    """Each of quote, backslash and control characters alone forces `\\XX` escapes."""
    assert string_literal(value) == text
    assert ir.StringAttr(ir.Attribute.parse(text, make_context())).value == value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.25, "0.25"),
        (-0.0, "-0.0"),
        (1e-05, "1.0e-05"),
        (1e16, "1.0e+16"),
        (1.5e-07, "1.5e-07"),
        (math.inf, "0x7FF0000000000000 : f64"),
        (-math.inf, "0xFFF0000000000000 : f64"),
        (math.nan, "0x7FF8000000000000 : f64"),
    ],
)
def test_float_literal_parses_back_to_the_same_bits(value: float, text: str) -> None:
    """Exponent forms get a '.', non-finite values become bit patterns."""
    assert float_literal(value) == text
    parsed = ir.FloatAttr(ir.Attribute.parse(text, make_context())).value
    assert math.copysign(1, parsed) == math.copysign(1, value)
    assert parsed == value or (math.isnan(parsed) and math.isnan(value))


def test_profile_text_of_a_measured_profile() -> None:
    """Keys in sorted order, no group fields, empty lists as `[]`."""
    assert profile_text(MEASURED) == (
        "{count = 2, first_ts_ns = -5, fraction = 0.25, fused_with = [], "
        'kernels = ["k1", "a\\22b"], max_ns = 1200, mean_ns = 1000, min_ns = 800, '
        'source = "xplane:x", total_ns = 2000}'
    )


def test_profile_text_of_a_shared_profile_has_the_group_fields() -> None:
    """A profile with a group also writes group, group_size, group_total_ns and share_basis."""
    assert profile_text(SHARED) == (
        '{count = 1, first_ts_ns = 7, fraction = 1.5e-07, fused_with = ["t"], '
        'group = "fusion.1", group_size = 3, group_total_ns = 900, kernels = [], '
        'max_ns = 300, mean_ns = 300, min_ns = 300, share_basis = "flops", source = "s", '
        "total_ns = 300}"
    )


def test_thesis_text_is_dur_then_ts() -> None:
    """`profiler_data` holds the total as `dur` and the first start as `ts`."""
    assert ts_dur_text(MEASURED) == "{dur = 2000, ts = -5}"


def _with(data: ProfileData, **fields: object) -> ProfileData:
    return ProfileData(**{**data.__dict__, **fields})


@pytest.mark.parametrize(
    "field", ["count", "total_ns", "mean_ns", "min_ns", "max_ns", "first_ts_ns"]
)
def test_every_integer_field_is_bounded_to_i64(field: str) -> None:
    """i64 limits are written as is; one past either limit raises OverflowError."""
    for value in (I64_MIN, I64_MAX):
        text = profile_text(_with(MEASURED, **{field: value}))
        assert re.search(rf"\b{field} = {value}[,}}]", text)
    for value in (I64_MIN - 1, I64_MAX + 1):
        with pytest.raises(OverflowError, match="does not fit in i64"):
            profile_text(_with(MEASURED, **{field: value}))


@pytest.mark.parametrize("field", ["group_total_ns", "group_size"])
def test_group_integers_are_bounded_only_when_there_is_a_group(field: str) -> None:
    """Group counters are written (and so checked) only for a profile with a group."""
    assert f"{field} = {I64_MAX}," in profile_text(_with(SHARED, **{field: I64_MAX}))
    with pytest.raises(OverflowError, match="does not fit in i64"):
        profile_text(_with(SHARED, **{field: I64_MAX + 1}))
    with pytest.raises(OverflowError, match="does not fit in i64"):
        profile_text(_with(SHARED, **{field: I64_MIN - 1}))
    assert "group" not in profile_text(_with(MEASURED, **{field: I64_MAX + 1}))


@pytest.mark.parametrize("field", ["total_ns", "first_ts_ns"])
def test_thesis_text_bounds_its_two_fields(field: str) -> None:
    """`dur` and `ts` are checked against i64 like the irprof layout."""
    with pytest.raises(OverflowError, match="does not fit in i64"):
        ts_dur_text(_with(MEASURED, **{field: I64_MAX + 1}))
    with pytest.raises(OverflowError, match="does not fit in i64"):
        ts_dur_text(_with(MEASURED, **{field: I64_MIN - 1}))


@pytest.mark.parametrize("data", [MEASURED, SHARED])
def test_builder_and_batch_both_print_as_the_profile_text(data: ProfileData) -> None:
    """The builder's attribute, the batch's and the parsed text are the same attribute."""
    context = make_context()
    builder = AttributeBuilder(context)
    expected = ir.Attribute.parse(profile_text(data), context)
    assert builder.profile(data) == expected
    assert builder.profiles([data, data]) == [expected, expected]
    ts_dur = ir.Attribute.parse(ts_dur_text(data), context)
    assert builder.ts_dur(data) == ts_dur
    assert builder.profiles([data], "ts-dur") == [ts_dur]
    assert str(ts_dur) == f"{{dur = {data.total_ns} : i64, ts = {data.first_ts_ns} : i64}}"


def test_builder_types_and_strings() -> None:
    """Integers are i64, strings are cached per value, empty lists are an empty ArrayAttr."""
    builder = AttributeBuilder(make_context())
    assert str(builder.integer(-3)) == "-3 : i64"
    assert builder.string("k") is builder.string("k")
    assert str(builder.string("k")) == '"k"'
    assert str(builder.strings(())) == "[]"
    assert str(builder.strings(("a", "b"))) == '["a", "b"]'


def test_an_unparsable_batch_falls_back_to_the_builder_per_profile() -> None:
    """A value the text cannot hold makes the batch be built by the builder, raising as it does.

    The text refuses it with OverflowError; the bindings' builder raises RuntimeError.
    """
    builder = AttributeBuilder(make_context())
    bad = _with(MEASURED, total_ns=I64_MAX + 1)
    with pytest.raises(RuntimeError):
        builder.profile(bad)
    with pytest.raises(RuntimeError):
        builder.profiles([MEASURED, bad])
    with pytest.raises(RuntimeError):
        builder.profiles([MEASURED, bad], "ts-dur")


def test_attach_profile_writes_one_layout_and_replaces_the_previous_profile() -> None:
    """Attaching again replaces; the ts-dur layout leaves `irprof.profile` alone."""
    _, ops = _ops()
    leaf = ops[2]
    attach_profile(leaf, MEASURED)
    attach_profile(leaf, SHARED)
    assert get_profile(leaf) == SHARED
    assert str(leaf.attributes[PROFILE_ATTR]) == str(
        ir.Attribute.parse(profile_text(SHARED), leaf.context)
    )
    builder = AttributeBuilder(leaf.context)
    last = ops[3]
    attach_profile(last, MEASURED, layout="ts-dur", builder=builder)
    assert str(last.attributes[TS_DUR_ATTR]) == "{dur = 2000 : i64, ts = -5 : i64}"
    assert PROFILE_ATTR not in last.attributes


def _op_with(attrs: str) -> ir.Operation:
    _, ops = _ops(f'\n"x.op"() {{{attrs}}} : () -> ()\n')
    return ops[0]


def test_a_partial_irprof_profile_reads_with_defaults() -> None:
    """Missing fields read as 0, 0.0, () and "" (hand-edited or older attributes)."""
    op = _op_with("irprof.profile = {count = 3 : i64}")
    assert get_profile(op) == ProfileData(
        count=3, total_ns=0, mean_ns=0, min_ns=0, max_ns=0, first_ts_ns=0, fraction=0.0
    )
    read = get_profile(op)
    assert read is not None
    assert (read.kernels, read.fused_with, read.source, read.group, read.share_basis) == (
        (), (), "", "", "",
    )  # fmt: skip
    assert (read.group_total_ns, read.group_size) == (0, 0)


def test_every_irprof_field_is_read_back() -> None:
    """Each field is read from its own key."""
    op = _op_with(
        "irprof.profile = {count = 1 : i64, total_ns = 2 : i64, mean_ns = 3 : i64, "
        "min_ns = 4 : i64, max_ns = 5 : i64, first_ts_ns = 6 : i64, fraction = 0.5 : f64, "
        'kernels = ["k"], fused_with = ["f1", "f2"], source = "src", group = "g", '
        'group_total_ns = 7 : i64, group_size = 8 : i64, share_basis = "bytes"}'
    )
    assert get_profile(op) == ProfileData(
        count=1, total_ns=2, mean_ns=3, min_ns=4, max_ns=5, first_ts_ns=6, fraction=0.5,
        kernels=("k",), fused_with=("f1", "f2"), source="src", group="g", group_total_ns=7,
        group_size=8, share_basis="bytes",
    )  # fmt: skip


def test_a_thesis_profile_reads_as_one_event() -> None:
    """`{ts, dur}` reads as count 1 with mean = min = max = dur, source `profiler_data`."""
    op = _op_with("profiler_data = {ts = 11 : i64, dur = 40 : i64}")
    assert has_profile(op)
    assert get_profile(op) == ProfileData(
        count=1, total_ns=40, mean_ns=40, min_ns=40, max_ns=40, first_ts_ns=11, fraction=0.0,
        source="profiler_data",
    )  # fmt: skip
    empty = _op_with("profiler_data = {}")
    assert get_profile(empty) == ProfileData(
        count=1, total_ns=0, mean_ns=0, min_ns=0, max_ns=0, first_ts_ns=0, fraction=0.0,
        source="profiler_data",
    )  # fmt: skip


def test_the_irprof_layout_wins_when_both_are_present() -> None:
    """An op with both attributes reads as its `irprof.profile`."""
    op = _op_with("irprof.profile = {count = 5 : i64}, profiler_data = {dur = 9 : i64}")
    read = get_profile(op)
    assert read is not None and (read.count, read.total_ns, read.source) == (5, 0, "")


def test_has_profile_accepts_either_layout_only() -> None:
    """Either attribute makes a profile; the summary or other attributes do not."""
    assert has_profile(_op_with("irprof.profile = {}"))
    assert has_profile(_op_with("profiler_data = {}"))
    assert not has_profile(_op_with('irprof.summary = {}, other = "x"'))
    assert get_profile(_op_with("irprof.summary = {}")) is None


def test_strip_counts_every_attribute_removed_in_nested_ops() -> None:
    """Both layouts and the summary go, on every op at any depth; other attributes stay."""
    module, ops = _ops(
        """
        "x.outer"() ({
          "x.inner"() ({
            "x.leaf"() {irprof.profile = {}, profiler_data = {}, keep = 1} : () -> ()
          }) {profiler_data = {}} : () -> ()
        }) {irprof.summary = {}} : () -> ()
        "x.last"() {irprof.profile = {}} : () -> ()
        """
    )
    assert strip_profiles(module) == 5
    assert [has_profile(op) for op in ops] == [False] * 4
    assert SUMMARY_ATTR not in ops[0].attributes
    assert "keep" in ops[2].attributes
    assert strip_profiles(module.operation) == 0


def test_module_summary_of_a_coverage_record() -> None:
    """Every summary field comes from the coverage or the arguments, with 0 and "" defaults."""
    coverage = Coverage(
        level="stablehlo", profiled_ns=1000, attributed_ns=250, ops_total=9, ops_nontrivial=4,
        ops_annotated=3, ops_nontrivial_annotated=2,
    )  # fmt: skip
    assert ModuleSummary.of(coverage, source_trace="t.xplane.pb", framework="jax") == ModuleSummary(
        source_trace="t.xplane.pb", framework="jax", level="stablehlo", profiled_ns=1000,
        attributed_ns=250, ops_total=9, ops_annotated=3, entries_unmatched=0,
        time_coverage=0.25, nontrivial_coverage=0.5, reattached_from="",
    )  # fmt: skip
    given = ModuleSummary.of(
        coverage, source_trace="t", framework="tf", entries_unmatched=4, reattached_from="tf"
    )
    assert (given.entries_unmatched, given.reattached_from) == (4, "tf")


def test_summary_values_round_trip_as_plain_values() -> None:
    """Bools stay bools, ints i64, floats f64, lists lists of strings, anything else a string."""
    module, ops = _ops()
    attach_summary(
        module,
        {"flag": True, "off": False, "n": 3, "x": 0.5, "names": ["a", 1], "tup": ("b",),
         "none": [], "s": "str", "other": None},
    )  # fmt: skip
    assert get_summary(module) == {
        "flag": True, "off": False, "n": 3, "x": 0.5, "names": ["a", "1"], "tup": ["b"],
        "none": [], "s": "str", "other": "None",
    }  # fmt: skip
    assert SUMMARY_ATTR not in ops[0].attributes  # on the module op, not its first op
    text = print_module(module)
    assert "flag = true" in text and "n = 3 : i64" in text and "x = 5.000000e-01 : f64" in text


def test_a_module_summary_record_is_written_field_by_field() -> None:
    """A ModuleSummary is written with all its fields, readable by `get_summary`."""
    module, _ = _ops()
    summary = ModuleSummary(
        source_trace="t", framework="tf", level="tf", profiled_ns=10, attributed_ns=5,
        ops_total=4, ops_annotated=1, entries_unmatched=2, time_coverage=0.5,
        nontrivial_coverage=0.25, reattached_from="",
    )  # fmt: skip
    attach_summary(module.operation, summary)
    assert get_summary(module.operation) == summary.__dict__


def test_summary_attributes_of_other_kinds_read_as_their_text() -> None:
    """A summary holding a unit or type attribute (hand-written) reads them as text."""
    module = load_module(
        "module attributes {irprof.summary = {u, t = i32, nested = [[1 : i64]]}} {}",
        make_context(),
    )
    assert get_summary(module) == {"u": "unit", "t": "i32", "nested": [[1]]}
    assert get_summary(load_module('"x.op"() : () -> ()', make_context())) is None
