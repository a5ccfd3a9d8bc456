"""XLA thunk events on traces built in code: which events are thunks of the module, how an
asynchronous thunk finds its `end:` event (by consumer id, else by name on its track, never one
that started before it), and the time of nested thunks taken out of the one they run in.

Written from the mutants of `correlate/xla_thunks.py`. Every duration is worked out in the test
from the starts and ends it gives.
"""

from __future__ import annotations

from typing import Any

from irprof.correlate.xla_thunks import ThunkEvent, thunk_events
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace


class Events:
    """A trace under construction, with events named uniquely."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()
        self.main = self.builder.track(1, 1, "/host:CPU", "tf_XLAEigen/1")
        self.other = self.builder.track(1, 2, "/host:CPU", "tf_XLAEigen/2")

    def thunk(
        self,
        name: str,
        ts: int,
        dur: int,
        *,
        hlo_op: str | None = None,
        module: str | None = "jit_f",
        track: int | None = None,
        **extra: Any,
    ) -> None:
        args: dict[str, Any] = {"hlo_op": hlo_op or name, **extra}
        if module is not None:
            args["hlo_module"] = module
        self.builder.add(
            ts, dur, self.main if track is None else track, name, EventKind.KERNEL, args
        )

    def end(self, name: str, ts: int, dur: int, *, track: int | None = None, **args: Any) -> None:
        track = self.main if track is None else track
        self.builder.add(ts, dur, track, f"end: {name}", EventKind.RUNTIME, args)

    def build(self) -> Trace:
        return self.builder.build()


def by_name(events: list[ThunkEvent]) -> dict[str, ThunkEvent]:
    return {event.name: event for event in events}


def row_named(trace: Trace, name: str) -> int:
    return next(row for row in range(len(trace)) if trace.name_of(row) == name)


def test_events_of_other_modules_are_named_and_left_out() -> None:
    events = Events()
    events.thunk("dot.1", 0, 10)
    events.thunk("add.2", 20, 5, module=None)  # no module: taken as this one's
    events.thunk("mul.3", 40, 5, module="jit_g")
    events.thunk("mul.4", 60, 5, module="jit_b")
    events.thunk("mul.5", 80, 5, module="jit_g")
    events.builder.add(100, 5, events.main, "not a thunk", EventKind.KERNEL, {"x": 1})
    trace = events.build()
    found, others = thunk_events(trace, "jit_f")
    assert others == ["jit_b", "jit_g"]
    assert [(e.name, e.hlo_op, e.ts_ns, e.dur_ns, e.async_end_row) for e in found] == [
        ("dot.1", "dot.1", 0, 10, None),
        ("add.2", "add.2", 20, 5, None),
    ]
    assert [e.row for e in found] == [row_named(trace, "dot.1"), row_named(trace, "add.2")]


def test_the_event_name_and_the_hlo_op_are_kept_apart() -> None:
    events = Events()
    events.thunk("custom-call thunk", 0, 10, hlo_op="custom-call.7")
    (found,), _ = thunk_events(events.build(), "jit_f")
    assert (found.name, found.hlo_op) == ("custom-call thunk", "custom-call.7")


def test_an_async_end_is_found_by_its_consumer_id_on_any_track() -> None:
    events = Events()
    events.thunk("all-reduce.1", 1_000, 10, _p=7)
    events.end("all-reduce.1", 900, 5, track=events.other, _c=7)  # before the start: not it
    events.end("all-reduce.1", 1_500, 20, track=events.other, _c=7)
    events.end("all-reduce.1", 1_200, 30, track=events.other, _c=7)  # the first after: it
    events.end("all-reduce.1", 1_100, 5, _c=8)  # another id, on the thunk's track
    trace = events.build()
    (found,), _ = thunk_events(trace, "jit_f")
    assert found.dur_ns == 1_200 + 30 - 1_000
    assert found.async_end_row is not None
    assert int(trace.ts_ns[found.async_end_row]) == 1_200


def test_an_end_at_the_thunks_start_counts() -> None:
    events = Events()
    events.thunk("recv.1", 1_000, 10, _p=3)
    events.end("recv.1", 1_000, 40, track=events.other, _c=3)
    (found,), _ = thunk_events(events.build(), "jit_f")
    assert found.dur_ns == 40


def test_an_end_inside_the_launch_does_not_shorten_it() -> None:
    events = Events()
    events.thunk("send.1", 1_000, 100, _p=3)
    events.end("send.1", 1_010, 5, track=events.other, _c=3)
    (found,), _ = thunk_events(events.build(), "jit_f")
    assert found.dur_ns == 100 and found.async_end_row is not None


def test_without_consumer_ids_the_next_end_of_its_hlo_op_on_its_track() -> None:
    events = Events()
    events.thunk("copy-start thunk", 1_000, 10, hlo_op="copy-start.1", _p=5)  # id never consumed
    events.end("copy-start.1", 1_300, 7, track=events.other)  # another track: not it
    events.end("copy-start thunk", 1_100, 7)  # the event's name, not its hlo_op: not it
    events.end("copy-start.1", 1_400, 7)
    events.end("copy-start.1", 1_250, 9)
    trace = events.build()
    (found,), _ = thunk_events(trace, "jit_f")
    assert found.dur_ns == 1_250 + 9 - 1_000
    assert found.async_end_row == row_named_at(trace, "end: copy-start.1", 1_250)


def row_named_at(trace: Trace, name: str, ts: int) -> int:
    return next(
        row
        for row in range(len(trace))
        if trace.name_of(row) == name and int(trace.ts_ns[row]) == ts
    )


def test_an_end_event_that_is_a_thunk_itself_is_no_async_end() -> None:
    events = Events()
    events.thunk("while.1", 1_000, 10)
    # a thunk whose event name starts with "end: " (it has an hlo_op): a thunk, not an end
    events.thunk("end: while.1", 1_500, 5, hlo_op="end.9")
    # a real end event after it is still found
    events.thunk("recv.2", 2_000, 10, _p=4)
    events.end("recv.2", 2_100, 50, track=events.other, _c=4)
    found, _ = thunk_events(events.build(), "jit_f")
    assert [(e.name, e.dur_ns, e.async_end_row is None) for e in found] == [
        ("while.1", 10, True),
        ("end: while.1", 5, True),
        ("recv.2", 2_100 + 50 - 2_000, False),
    ]


def test_no_end_event_keeps_the_launch() -> None:
    events = Events()
    events.thunk("fusion.1", 1_000, 10, _p=1)
    events.end("fusion.1", 500, 7, _c=1)  # only before the start
    (found,), _ = thunk_events(events.build(), "jit_f")
    assert (found.dur_ns, found.async_end_row) == (10, None)


def test_nested_thunks_time_is_taken_out_of_their_direct_parent() -> None:
    events = Events()
    events.thunk("while.1", 0, 1_000)
    events.thunk("first.8", 0, 20)  # starts with the while: inside it all the same
    events.thunk("dot.2", 100, 300)  # in the while
    events.thunk("add.3", 150, 50)  # in dot.2 (its direct parent), so in the while through it
    events.thunk("mul.4", 500, 200)  # in the while
    events.thunk("tail.5", 700, 300)  # ends with the while: still inside it
    events.thunk("after.6", 1_000, 40)  # starts at the while's end: not inside
    events.thunk("apart.7", 100, 900, track=events.other)  # another thread: no nesting
    found = by_name(thunk_events(events.build(), "jit_f")[0])
    assert found["while.1"].dur_ns == 1_000 - 20 - 300 - 200 - 300
    assert found["first.8"].dur_ns == 20
    assert found["dot.2"].dur_ns == 300 - 50
    assert found["add.3"].dur_ns == 50
    assert found["mul.4"].dur_ns == 200
    assert found["tail.5"].dur_ns == 300
    assert found["after.6"].dur_ns == 40
    assert found["apart.7"].dur_ns == 900


def test_a_parent_never_goes_below_zero_and_siblings_do_not_nest() -> None:
    events = Events()
    # the same span twice: the second (same start and end) is inside the first
    events.thunk("outer.1", 0, 100)
    events.thunk("inner.2", 0, 100)
    # overlapping, not nested: the second ends later, so it is not inside the first
    events.thunk("a.3", 200, 100)
    events.thunk("b.4", 250, 100)
    found = by_name(thunk_events(events.build(), "jit_f")[0])
    assert sorted((found["outer.1"].dur_ns, found["inner.2"].dur_ns)) == [0, 100]
    assert found["a.3"].dur_ns == 100 and found["b.4"].dur_ns == 100


def test_nesting_is_read_from_the_launches_not_the_async_ends() -> None:
    events = Events()
    # the all-reduce's launch (0..10) ends before the dot; its end event runs to 500
    events.thunk("all-reduce.1", 0, 10, _p=1)
    events.end("all-reduce.1", 480, 20, track=events.other, _c=1)
    events.thunk("dot.2", 100, 200)
    found = by_name(thunk_events(events.build(), "jit_f")[0])
    assert found["all-reduce.1"].dur_ns == 500
    assert found["dot.2"].dur_ns == 200
    # the nested time comes off the resolved duration: a while whose end is async
    events = Events()
    events.thunk("while.1", 0, 100, _p=2)
    events.end("while.1", 900, 100, track=events.other, _c=2)
    events.thunk("body.2", 10, 60)
    found = by_name(thunk_events(events.build(), "jit_f")[0])
    assert found["while.1"].dur_ns == 1_000 - 60
    assert found["body.2"].dur_ns == 60
