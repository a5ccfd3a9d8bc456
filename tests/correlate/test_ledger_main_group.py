"""Which group an op is shown in: the record it received the most time from, its own events
included.

Below the torch level, a linalg matmul takes its own `aten.mm`'s time and also a share of a
small torch op that lowering folded into several layers' matmuls (a `clone` of the encoder
output reused by every cross-attention). The shared op must not make the matmuls one four-op
group: `top` would then show one row summing three layers' projections under one name.
"""

from __future__ import annotations

from irprof.correlate.ledger import Ledger


def main_group(ledger: Ledger, position: int) -> str:
    data = ledger.profile_data(position, 1_000_000, name_of=str)
    return data.group or ""


def test_an_op_mostly_timed_alone_is_in_no_group() -> None:
    ledger = Ledger()
    for position, own in enumerate((175_000, 160_000, 122_000)):
        ledger.record(f"mm{position}", 0, own, [position])
    ledger.record("clone", 0, 1_353, [0, 1, 2, 3], group="clone")  # 338-339 ns each
    assert [main_group(ledger, p) for p in range(4)] == ["", "", "", "clone"]
    totals = [ledger.profile_data(p, 1_000_000, name_of=str).total_ns for p in range(4)]
    assert sum(totals) == 175_000 + 160_000 + 122_000 + 1_353  # every ns still counted


def test_an_op_mostly_timed_by_a_group_keeps_it() -> None:
    ledger = Ledger()
    ledger.record("own", 0, 10, [0])
    ledger.record("fused", 0, 200, [0, 1], group="g")  # 100 ns each: 100 > 10
    assert [main_group(ledger, p) for p in range(2)] == ["g", "g"]


def test_equal_time_alone_and_in_a_group_keeps_the_group() -> None:
    ledger = Ledger()
    ledger.record("own", 0, 100, [0])
    ledger.record("fused", 0, 200, [0, 1], group="g")  # 100 ns each: a tie
    assert main_group(ledger, 0) == "g"


def test_a_member_given_no_time_by_its_group_stays_in_it() -> None:
    """A broadcast weighted 0 in an XLA fusion still belongs to the fusion's row."""
    ledger = Ledger()
    ledger.record("fusion", 0, 300, [0, 1, 2], weights=[1.0, 0.0, 2.0], group="f")
    assert [main_group(ledger, p) for p in range(3)] == ["f", "f", "f"]
