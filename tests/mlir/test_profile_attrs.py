"""The annotation interface: attach/get/has/strip, the ts-dur layout, the module summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import walk_ops
from irprof.mlir.profile_attrs import (
    PROFILE_ATTR,
    attach_profile,
    attach_summary,
    get_profile,
    get_summary,
    has_profile,
    strip_profiles,
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
