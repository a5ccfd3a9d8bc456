"""An integer `fraction` (`ProfileData(fraction=0)`, which type-checks: int is a float) is written
as `i64` by the batched attribute text, unlike the per-profile builder (f64); `get_profile`
then refuses the op as malformed."""

from __future__ import annotations

import pytest

from irprof.mlir.apply_profile import apply_opprofile
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import walk_ops
from irprof.mlir.profile_attrs import AttributeBuilder, float_literal, get_profile
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData


@pytest.mark.parametrize("fraction", [0, 1])
def test_an_integer_fraction_is_written_as_f64_and_read_back(fraction: int) -> None:
    data = ProfileData(
        count=1, total_ns=5, mean_ns=5, min_ns=5, max_ns=5, first_ts_ns=0, fraction=fraction
    )
    module = load_module('"x.op"() : () -> () loc("a")', make_context())
    opprofile = OpProfile(
        level="tf", framework="tf", entries=(OpProfileEntry(OpKey(name="a"), data),), totals={},
        source_trace="t",
    )  # fmt: skip
    apply_opprofile(module, opprofile)
    assert get_profile(walk_ops(module)[0]) == data
    builder = AttributeBuilder(make_context())
    assert [str(attribute) for attribute in builder.profiles([data])] == [
        str(builder.profile(data))
    ]
    assert float_literal(fraction) == f"{fraction}.0"
