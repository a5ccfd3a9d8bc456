"""`finish_level` passes the level, the removed and untimed ops and the profiled time on to both
records, and leaves the source trace empty unless given.

Written from the mutants of `correlate/finish.py`: a module of three ops (add, mul, a call), the
add timed, the mul removed by the compiler, the call seen only outside the timed steps.
"""

from __future__ import annotations

from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos
from tests.correlate.test_finish import MODULE  # the same module: add, mul and a call


def test_level_removed_untimed_and_profiled_time_reach_both_records() -> None:
    infos = derive_op_infos(load_module(MODULE, make_context()))
    position_of = {info.op_name: position for position, info in enumerate(infos)}
    add, mul, call = (position_of[name] for name in ("arith.addf", "arith.mulf", "func.call"))
    ledger = Ledger()
    ledger.record("kernel", 0, 70, [add])
    ledger.unattributed("copy", 30, "no op")
    entries = ledger.entries(infos, 100, location_of=lambda info: info.op_name)
    result = finish_level(
        ledger, infos, entries, level="level-a", framework="fw", profiled_ns=100, where="here",
        not_executed=[mul], untimed=[call],
    )  # fmt: skip
    coverage, opprofile = result.coverage, result.opprofile
    assert coverage.level == "level-a" and opprofile.level == "level-a"
    assert (coverage.ops_not_executed, coverage.ops_untimed) == (1, 1)
    assert (coverage.ops_annotated, coverage.attributed_ns) == (1, 70)
    assert opprofile.totals["profiled_ns"] == 100
    assert opprofile.totals["attributed_ns"] == 70 and opprofile.totals["unattributed_ns"] == 30
    assert opprofile.source_trace == ""
    assert [entry.data.total_ns for entry in opprofile.entries] == [70]


def test_without_removed_or_untimed_ops_none_are_counted() -> None:
    infos = derive_op_infos(load_module(MODULE, make_context()))
    ledger = Ledger()
    ledger.record("kernel", 0, 10, [0])
    entries = ledger.entries(infos, 10, location_of=lambda info: info.op_name)
    result = finish_level(
        ledger, infos, entries, level="b", framework="fw", profiled_ns=10, where="here"
    )
    assert (result.coverage.ops_not_executed, result.coverage.ops_untimed) == (0, 0)
    assert result.opprofile.totals["profiled_ns"] == 10
