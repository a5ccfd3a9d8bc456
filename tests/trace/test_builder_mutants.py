"""`TraceBuilder` at its edges: negative times and flow ids, default track names, the file and
place a refused time names, two events out of order, and `extend` after other events' args.

Written from the survivors of `trace/builder.py`'s first mutation run: no test built a trace
with a negative start, duration or flow id, a track without names, a time past the int64 bound
from a builder (so the source and `locate` were never shown), exactly two events out of order,
or called `extend` twice with arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind

BEYOND = 2**62  # the first |time| the builder refuses (trace.columns.MAX_ABS_NS)


def test_negative_start_duration_and_flow_id_are_kept() -> None:
    builder = TraceBuilder()
    row = builder.track(1, 2)
    first = builder.add(-50, 10, row, "before zero")
    second = builder.add(0, -7, row, "negative duration")
    builder.flow(first, second, -3)
    trace = builder.build()
    assert trace.ts_ns.tolist() == [-50, 0]
    assert trace.dur_ns.tolist() == [10, 0]  # -7 ns read as 0 ns, and counted
    assert trace.warnings == ("1 event(s) with a negative 'dur' read as 0 ns",)
    assert trace.flows.flow_id.tolist() == [-3]


def test_a_track_without_names_is_named_by_its_ids() -> None:
    builder = TraceBuilder()
    row = builder.track(5, 6)
    builder.add(0, 1, row, "x")
    tracks = builder.build().tracks
    assert (tracks.process, tracks.thread, tracks.pid, tracks.tid) == (("5",), ("6",), (5,), (6,))


def test_a_time_beyond_int64_names_the_default_source_and_event() -> None:
    builder = TraceBuilder()
    row = builder.track(1, 1)
    builder.add(0, 1, row, "fine")
    builder.add(BEYOND, 1, row, "too late")
    with pytest.raises(TraceFormatError) as caught:
        builder.build()
    assert caught.value.path == "<trace>"
    assert caught.value.where == "event 1 field 'ts'"


def test_a_time_beyond_int64_names_the_given_source_and_place() -> None:
    builder = TraceBuilder("run/trace.pb", locate=lambda row: f"line {row + 10}")
    row = builder.track(1, 1)
    builder.add(0, 1, row, "fine")
    builder.add(1, BEYOND, row, "too long")
    with pytest.raises(TraceFormatError) as caught:
        builder.build()
    assert caught.value.path == "run/trace.pb"
    assert caught.value.where == "line 11 field 'dur'"


def test_two_events_out_of_order_are_sorted() -> None:
    builder = TraceBuilder()
    row = builder.track(1, 1)
    builder.add(200, 5, row, "second", args={"n": 2})
    builder.add(100, 5, row, "first", args={"n": 1})
    trace = builder.build()
    assert trace.ts_ns.tolist() == [100, 200]
    assert trace.names() == ["first", "second"]
    assert [trace.args(0), trace.args(1)] == [{"n": 1}, {"n": 2}]


def _extend(builder: TraceBuilder, ts: list[int], lengths: list[int], blob: bytes) -> int:
    """Kernels of 3 ns on track 0 named by string 0, with the given args."""
    count = len(ts)
    return builder.extend(
        np.array(ts, np.int64),
        np.full(count, 3, np.int64),
        np.zeros(count, np.int32),
        np.zeros(count, np.int64),
        np.full(count, int(EventKind.KERNEL), np.int8),
        (np.array(lengths, np.int64), blob),
    )


def test_extend_twice_after_an_event_with_args_keeps_every_event_s_args() -> None:
    builder = TraceBuilder()
    row = builder.track(1, 1)
    builder.intern("op")
    builder.add(0, 3, row, "op", args={"a": 1})  # 7 bytes of args before the first extend
    assert _extend(builder, [10, 20, 30], [7, 0, 7], b'{"b":2}{"c":3}') == 1
    assert _extend(builder, [40], [7], b'{"d":4}') == 4
    trace = builder.build()
    assert [trace.args(i) for i in range(5)] == [{"a": 1}, {"b": 2}, {}, {"c": 3}, {"d": 4}]
    assert trace.kind.tolist() == [int(EventKind.OTHER)] + [int(EventKind.KERNEL)] * 4


def test_extend_refuses_lengths_that_do_not_add_up() -> None:
    builder = TraceBuilder()
    with pytest.raises(ValueError, match=r"^args lengths do not add up to the args blob$"):
        _extend(builder, [0], [5], b"{}")
