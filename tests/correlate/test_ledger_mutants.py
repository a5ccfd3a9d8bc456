"""The ledger's records as read back: what `record_with_rest` passes on (event, basis, group,
source, the rest's reason), the entries' op names and locations, profile fields, and the
earliest start of ties.

Written from the mutants of `correlate/ledger.py`; each figure is worked out from the events
the test records.
"""

from __future__ import annotations

from irprof.correlate.ledger import Ledger, split_exact
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos

MODULE = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32> loc("add")
  %1 = arith.mulf %0, %0 : tensor<4xf32> loc("mul")
  return %1 : tensor<4xf32>
}
"""


def test_the_part_of_an_event_reaching_ops_keeps_its_name_basis_group_and_source() -> None:
    ledger = Ledger()
    shares = ledger.record_with_rest(
        "dispatch", 5, 100, [0, 1], [1.0, 1.0], (2.0, "dispatch (rest)", "no origin"),
        source="trace",
    )  # fmt: skip
    assert shares == [25, 25] and ledger.unattributed_events["dispatch (rest)"] == [50]
    assert ledger.reasons["dispatch (rest)"] == "no origin"
    assert ledger.accounts[0].kernels == ["dispatch"] and ledger.accounts[0].source == "trace"
    # No group given: the event names the group; the basis is even.
    assert list(ledger.groups) == ["dispatch"] and ledger.groups["dispatch"].basis == "even"
    grouped = Ledger()
    grouped.record_with_rest("k", 0, 10, [0, 1], [1.0, 1.0], (0.0, "r", "x"), basis="flops")
    assert grouped.groups["k"].basis == "flops" and grouped.accounts[0].source == ""
    # A negative rest weight counts as none: everything reaches the ops.
    none_left = Ledger()
    assert none_left.record_with_rest("k", 0, 10, [0], [1.0], (-3.0, "r", "x")) == [10]
    assert none_left.unattributed_events["r"] == [0]


def test_entries_name_ops_and_profiles_carry_kernels_partners_and_source() -> None:
    infos = derive_op_infos(load_module(MODULE, make_context()))
    position = {info.op_name: index for index, info in enumerate(infos)}
    add, mul = position["arith.addf"], position["arith.mulf"]
    ledger = Ledger()
    ledger.record("fusion", 7, 30, [add, mul], source="xplane")
    entries = ledger.entries(infos, 30, location_of=lambda info: f"at {info.op_name}")
    entry = entries[add]
    assert (entry.op_name, entry.location) == ("arith.addf", "at arith.addf")
    assert entry.data.kernels == ("fusion",) and entry.data.source == "xplane"
    assert entry.data.fused_with == ("mul",)  # the default name: the op's location name
    assert entry.data.first_ts_ns == 7


def test_without_weights_an_event_splits_evenly_and_ties_keep_the_first_start() -> None:
    ledger = Ledger()
    assert ledger.record("k", 0, 7, [0, 1, 2]) == split_exact(7, [1.0, 1.0, 1.0]) == [3, 2, 2]
    assert split_exact(0, [1.0, 2.0]) == [0, 0]
    ledger.include(5, 1, "call", 40, 2.0)
    ledger.include(5, 2, "call", 40, 3.0)
    data = ledger.inclusive_data(5, 100, source="inclusive")
    assert (data.first_ts_ns, data.total_ns, data.count) == (40, 5, 2)
    assert data.kernels == ("call",)
    # Without `with_own` the op's own shares are not added; an op never started reads 0.
    ledger.record("own", 0, 4, [5])
    assert ledger.inclusive_data(5, 100, source="").total_ns == 5
    assert ledger.inclusive_data(5, 100, source="", with_own=True).total_ns == 9
    ledger.include(6, 1, "late", 0, 1.0)
    assert ledger.inclusive_data(6, 100, source="").first_ts_ns == 0
    assert ledger.group_of(9) is None and 9 not in ledger.annotated  # asking adds no op
    started = ledger.profile_data(0, 100, str)
    assert started.first_ts_ns == 0 and started.total_ns == 3
