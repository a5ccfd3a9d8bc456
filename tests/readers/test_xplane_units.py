"""XPlane reader rules pinned on XSpaces built in code: track ids, the relative/absolute line
timestamp boundary, refused times, several planes and lines merged in time order."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.xplane_proto.xplane_pb2 import XEvent, XSpace
from irprof.trace.model import EventKind, Trace

START_NS = 1_795_000_000_000_000_000


def task_environment(space: XSpace) -> None:
    plane = space.planes.add(name="Task Environment")
    plane.stat_metadata[1].id, plane.stat_metadata[1].name = 1, "profile_start_time"
    plane.stats.add(metadata_id=1, uint64_value=START_NS)


def read_space(tmp_path: Path, space: XSpace) -> Trace:
    path = tmp_path / "space.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return read_trace(path)


def _space(line_timestamp_ns: int, *events: XEvent, planes: int = 1) -> XSpace:
    space = XSpace()
    task_environment(space)
    for index in range(planes):
        plane = space.planes.add(id=0, name=f"/host:CPU{index}")
        plane.event_metadata[1].name = f"scope{index}"
        line = plane.lines.add(id=7 + index, name="worker", timestamp_ns=line_timestamp_ns)
        line.events.extend(events)
    return space


def test_tracks_are_plane_position_and_line_id(tmp_path: Path) -> None:
    event = XEvent(metadata_id=1, offset_ps=0, duration_ps=1000)
    trace = read_space(tmp_path, _space(0, event, planes=2))
    # The Task Environment plane is plane 0; both host planes have XPlane.id 0.
    assert sorted(trace.tracks.pid) == [1, 2]
    assert sorted(trace.tracks.tid) == [7, 8]
    assert sorted(trace.tracks.label(row) for row in range(2)) == [
        "/host:CPU0/worker",
        "/host:CPU1/worker",
    ]


@pytest.mark.parametrize(
    ("line_ns", "start_ns"),
    [
        (START_NS // 2 - 1, START_NS // 2 - 1 + START_NS),  # below half the start: relative
        (START_NS // 2, START_NS // 2),  # from half the start on: already absolute
    ],
)
def test_line_timestamps_below_half_the_start_are_relative(
    tmp_path: Path, line_ns: int, start_ns: int
) -> None:
    event = XEvent(metadata_id=1, offset_ps=0, duration_ps=2000)
    trace = read_space(tmp_path, _space(line_ns, event))
    assert trace.ts_ns.tolist() == [start_ns]
    assert trace.dur_ns.tolist() == [2]


def test_events_of_all_lines_come_out_in_time_order_longest_first(tmp_path: Path) -> None:
    space = XSpace()
    task_environment(space)
    plane = space.planes.add(name="/host:CPU")
    for key, name in ((1, "late"), (2, "outer"), (3, "inner"), (4, "early")):
        plane.event_metadata[key].name = name
    first = plane.lines.add(id=1, name="a", timestamp_ns=10)
    first.events.append(XEvent(metadata_id=1, offset_ps=50_000, duration_ps=1000))
    first.events.append(XEvent(metadata_id=3, offset_ps=20_000, duration_ps=1000))
    first.events.append(XEvent(metadata_id=2, offset_ps=20_000, duration_ps=9000))
    second = plane.lines.add(id=2, name="b", timestamp_ns=10)
    second.events.append(XEvent(metadata_id=4, offset_ps=5_000, duration_ps=0))
    trace = read_space(tmp_path, space)
    assert [trace.name_of(row) for row in range(len(trace))] == ["early", "outer", "inner", "late"]
    assert trace.ts_ns.tolist() == [START_NS + 15, START_NS + 30, START_NS + 30, START_NS + 60]
    assert [EventKind(int(k)) for k in trace.kind] == [
        EventKind.INSTANT,
        EventKind.RUNTIME,
        EventKind.RUNTIME,
        EventKind.RUNTIME,
    ]


LIMIT_NS = 2**62  # irprof's bound on nanosecond times, far from int64's edge


@pytest.mark.parametrize(
    ("line_ns", "event"),
    [
        (0, XEvent(metadata_id=1, offset_ps=5 * 10**18, duration_ps=5 * 10**18)),
        (LIMIT_NS - 5, XEvent(metadata_id=1, offset_ps=5_000, duration_ps=0)),
        (LIMIT_NS - 5, XEvent(metadata_id=1, offset_ps=0, duration_ps=4_000)),
        (-LIMIT_NS - START_NS, XEvent(metadata_id=1, offset_ps=0, duration_ps=0)),
    ],
)
def test_negative_or_overflowing_times_are_refused(
    tmp_path: Path, line_ns: int, event: XEvent
) -> None:
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(_space(line_ns, event).SerializeToString())
    with pytest.raises(TraceFormatError, match=r"event times beyond int64 nanoseconds"):
        read_trace(path)


def test_a_negative_duration_is_read_as_0_and_counted_as_in_every_reader(tmp_path: Path) -> None:
    events = (
        XEvent(metadata_id=1, offset_ps=0, duration_ps=-3_000),
        XEvent(metadata_id=1, offset_ps=10_000, duration_ps=2_000),
    )
    trace = read_space(tmp_path, _space(1_000, *events))
    assert trace.dur_ns.tolist() == [0, 2]
    assert "1 event(s) with a negative 'dur' read as 0 ns" in trace.warnings


def test_times_just_inside_the_bound_are_read(tmp_path: Path) -> None:
    event = XEvent(metadata_id=1, offset_ps=1_000, duration_ps=1_000)
    trace = read_space(tmp_path, _space(LIMIT_NS - 10, event))
    assert trace.ts_ns.tolist() == [LIMIT_NS - 9]
    assert trace.dur_ns.tolist() == [1]


def _stat_space(define_zero: bool, *events: XEvent) -> XSpace:
    space = _space(0, *events)
    plane = space.planes[1]
    plane.stat_metadata[5].id, plane.stat_metadata[5].name = 5, "shape"
    if define_zero:
        plane.stat_metadata[0].name = "zero_stat"
    return space


def test_events_with_and_without_stats_keep_their_own_args(tmp_path: Path) -> None:
    """An event's stats are its args; its neighbours on the line without stats have none."""
    plain = XEvent(metadata_id=1, offset_ps=1_000_000, duration_ps=1000)
    with_stat = XEvent(metadata_id=1, offset_ps=2_000_000, duration_ps=1000)
    with_stat.stats.add(metadata_id=5, str_value="[2,3]")
    later = XEvent(metadata_id=1, offset_ps=3_000_000, duration_ps=1000)
    trace = read_space(tmp_path, _stat_space(False, plain, with_stat, later))
    assert [trace.args(row) for row in range(len(trace))] == [{}, {"shape": "[2,3]"}, {}]


@pytest.mark.parametrize(("define_zero", "expected"), [(True, {"zero_stat": 7}), (False, {})])
def test_a_stat_naming_metadata_zero_is_read_only_when_the_plane_defines_it(
    tmp_path: Path, define_zero: bool, expected: dict[str, int]
) -> None:
    """Stat metadata 0 is an ordinary stat when the plane defines it; undefined, it is what an
    empty XStat reads as and is left out, whether or not the event has other stats."""
    alone = XEvent(metadata_id=1, offset_ps=1_000_000, duration_ps=1000)
    alone.stats.add(metadata_id=0, int64_value=7)
    beside = XEvent(metadata_id=1, offset_ps=2_000_000, duration_ps=1000)
    beside.stats.add(metadata_id=0, int64_value=7)
    beside.stats.add(metadata_id=5, str_value="[4]")
    trace = read_space(tmp_path, _stat_space(define_zero, alone, beside))
    assert trace.args(0) == expected
    assert trace.args(1) == expected | {"shape": "[4]"}


def test_aggregated_events_keep_their_occurrences_with_or_without_stats(tmp_path: Path) -> None:
    """`num_occurrences` (a oneof with offset_ps) becomes an arg; the event sits at offset 0."""
    bare = XEvent(metadata_id=1, num_occurrences=12, duration_ps=5000)
    with_stat = XEvent(metadata_id=1, num_occurrences=3, duration_ps=2000)
    with_stat.stats.add(metadata_id=5, str_value="[8]")
    at_zero = XEvent(metadata_id=1, offset_ps=0, duration_ps=1000)
    trace = read_space(tmp_path, _stat_space(False, bare, with_stat, at_zero))
    assert trace.ts_ns.tolist() == [START_NS] * 3
    assert trace.dur_ns.tolist() == [5, 2, 1]  # longest first at equal start
    assert [trace.args(row) for row in range(3)] == [
        {"num_occurrences": 12},
        {"shape": "[8]", "num_occurrences": 3},
        {},
    ]
