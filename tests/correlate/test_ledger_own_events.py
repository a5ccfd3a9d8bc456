"""An op lists the starts of its own events (`ProfileData.event_ts`) exactly when its event names
ran other ops too, or reached no op: torch names every linear layer's event `aten::linear`, and
per-step samples read from the trace by name alone gave each layer a share of all of them (one
preempted layer moved every layer's steps). Starts are written only where needed: a name that
is one op's alone (a TF node, an XLA thunk) needs none."""

from __future__ import annotations

from irprof.correlate.ledger import Ledger
from irprof.opprofile import ProfileData


def test_ops_sharing_an_event_name_list_their_own_events() -> None:
    ledger = Ledger()
    for step, start in enumerate((100, 200, 300)):
        ledger.record("aten::linear", start, 10, [0])
        ledger.record("aten::linear", start + 20, 12 + step, [1])
    ledger.record("aten::convolution", 50, 30, [2])
    ledger.record("aten::convolution", 150, 30, [2])
    first, second, conv = (ledger.profile_data(i, 1000, str) for i in (0, 1, 2))
    assert first.event_ts == (100, 200, 300)
    assert second.event_ts == (120, 220, 320)
    assert conv.event_ts == ()  # every convolution is this op's


def test_a_group_holding_every_event_of_its_name_lists_none() -> None:
    ledger = Ledger()
    ledger.record("fusion.3", 40, 9, [4, 5], group="fusion.3")
    ledger.record("fusion.3", 10, 9, [4, 5], group="fusion.3")
    assert ledger.profile_data(4, 100, str).event_ts == ()
    assert ledger.profile_data(5, 100, str).event_ts == ()


def test_an_unattributed_event_of_the_same_name_makes_the_name_shared() -> None:
    ledger = Ledger()
    ledger.record("aten::add", 30, 5, [0])
    ledger.record("aten::add", 10, 5, [0])
    assert ledger.profile_data(0, 100, str).event_ts == ()
    ledger.unattributed("aten::add", 7, "no FX node")
    assert ledger.profile_data(0, 100, str).event_ts == (10, 30)  # sorted


def test_event_ts_round_trips_through_json_and_is_left_out_when_empty() -> None:
    data = ProfileData.from_durations([4, 6], 10, 100, kernels=["k"], event_ts=[30, 10])
    assert data.event_ts == (10, 30)
    assert data.to_json()["event_ts"] == [10, 30]
    assert ProfileData.from_json(data.to_json()) == data
    plain = ProfileData.from_durations([4], 10, 100, kernels=["k"])
    assert "event_ts" not in plain.to_json()
    assert ProfileData.from_json(plain.to_json()).event_ts == ()
