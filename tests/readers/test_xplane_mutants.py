"""XPlane reader cases written from the survivors of `readers/xplane.py`'s mutation runs: the
warnings for ids and times that are not integers (their exact text and count), TraceMe context
ids of the whole uint64 range, a `program_id` given as a ref or of int64's lowest value, the
picosecond bounds of a line's times, an `hlo_op` on a device's "Steps" line, and Task
Environment times from 2**62 ns."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.errors import TraceFormatError
from irprof.readers.xplane import read_xplane
from irprof.readers.xplane_proto.xplane_pb2 import XPlane, XSpace
from irprof.trace.model import EventKind, Trace

START_NS = 1_795_000_000_000_000_000


def read(tmp_path: Path, space: XSpace) -> Trace:
    path = tmp_path / "mutants.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return read_xplane(path, path.read_bytes())


def environment(space: XSpace) -> None:
    plane = space.planes.add(name="Task Environment")
    plane.stat_metadata[1].name = "profile_start_time"
    plane.stats.add(metadata_id=1, uint64_value=START_NS)


def flow_plane(space: XSpace) -> XPlane:
    """A host plane whose stat metadata 1-4 are `_p`, `_pt`, `_c`, `_ct`, with event metadata
    1 ("Record") and 2 ("StartRegion")."""
    plane = space.planes.add(name="/host:CPU")
    for key, stat in enumerate(("_p", "_pt", "_c", "_ct"), start=1):
        plane.stat_metadata[key].name = stat
    plane.event_metadata[1].name = "Record"
    plane.event_metadata[2].name = "StartRegion"
    return plane


def test_context_ids_of_the_whole_uint64_range_pair_and_larger_ones_are_ignored(
    tmp_path: Path,
) -> None:
    """TraceMe context ids are uint64: an id of 2**63 + 5 (past int64) still pairs, its flow id
    being its low 63 bits (5); an id of 2**64 (an integral double) is no context id: ignored and
    counted in a warning, with a negative double id (-1.5, not integral) counted too."""
    space = XSpace()
    environment(space)
    plane = flow_plane(space)
    line = plane.lines.add(id=1, name="l")
    big = 2**63 + 5
    producer = line.events.add(metadata_id=1, offset_ps=0, duration_ps=1000)
    producer.stats.add(metadata_id=1, uint64_value=big)
    consumer = line.events.add(metadata_id=2, offset_ps=5000, duration_ps=1000)
    consumer.stats.add(metadata_id=3, uint64_value=big)
    too_big = line.events.add(metadata_id=1, offset_ps=10_000, duration_ps=1000)
    too_big.stats.add(metadata_id=1, double_value=2.0**64)
    too_big_consumer = line.events.add(metadata_id=2, offset_ps=15_000, duration_ps=1000)
    too_big_consumer.stats.add(metadata_id=3, double_value=-1.5)
    trace = read(tmp_path, space)
    names = trace.names()
    assert names == ["Record", "StartRegion", "Record", "StartRegion"]
    assert trace.flows.src.tolist() == [0]
    assert trace.flows.dst.tolist() == [1]
    assert trace.flows.flow_id.tolist() == [5]
    assert trace.warnings == (
        "2 producer/consumer context(s) ('_p'/'_c') with an id that is not an integer were ignored",
    )


def test_a_program_id_that_is_no_integer_is_read_as_minus_1_with_its_first_40_characters(
    tmp_path: Path,
) -> None:
    """A `program_id` stat holding a 45-character string, or a ref (read as the referenced stat
    metadata's name, here "12": a string, not an integer), is read as -1, with a warning naming
    the program and the value's first 40 characters."""
    space = XSpace()
    environment(space)
    meta = space.planes.add(name="/host:metadata")
    meta.stat_metadata[1].name, meta.stat_metadata[2].name = "Hlo Proto", "program_id"
    meta.stat_metadata[3].name = "12"
    long_value = "0123456789" * 4 + "abcde"
    for key, name, program_id in ((1, "jit_text(4)", long_value), (2, "jit_ref(5)", None)):
        entry = meta.event_metadata[key]
        entry.name = name
        entry.stats.add(metadata_id=1, bytes_value=name.encode())
        if program_id is None:
            entry.stats.add(metadata_id=2, ref_value=3)
        else:
            entry.stats.add(metadata_id=2, str_value=program_id)
    trace = read(tmp_path, space)
    assert sorted((p.program_id, p.name) for p in trace.hlo_programs) == [
        (-1, "jit_ref"),
        (-1, "jit_text"),
    ]
    assert sorted(trace.warnings) == [
        "HLO program 'jit_ref(5)': program_id '12' is not an integer; read as -1",
        "HLO program 'jit_text(4)': program_id '0123456789012345678901234567890123456789' is "
        "not an integer; read as -1",
    ]


def test_a_program_id_of_int64s_lowest_value_is_kept(tmp_path: Path) -> None:
    """`program_id` may be any int64: -2**63, the lowest, is an integer like the others."""
    space = XSpace()
    meta = space.planes.add(name="/host:metadata")
    meta.stat_metadata[1].name, meta.stat_metadata[2].name = "Hlo Proto", "program_id"
    entry = meta.event_metadata[1]
    entry.name = "jit_low(1)"
    entry.stats.add(metadata_id=1, bytes_value=b"low")
    entry.stats.add(metadata_id=2, int64_value=-(2**63))
    trace = read(tmp_path, space)
    assert [(p.program_id, p.name) for p in trace.hlo_programs] == [(-(2**63), "jit_low")]
    assert trace.warnings == ()


def one_event_space(offset_ps: int, duration_ps: int) -> XSpace:
    """One event on a host line at timestamp 0, without a Task Environment (times unshifted)."""
    space = XSpace()
    plane = space.planes.add(name="/host:CPU")
    plane.event_metadata[1].name = "a"
    line = plane.lines.add(id=3, name="worker")
    line.events.add(metadata_id=1, offset_ps=offset_ps, duration_ps=duration_ps)
    return space


@pytest.mark.parametrize(
    ("offset_ps", "duration_ps"),
    [
        (2**63 - 1001, 0),  # the last end in ps, a zero duration: no wrap once 500 is added
        (2**63 - 2001, 1000),
    ],
)
def test_an_end_one_ns_below_int64_picoseconds_is_read(
    tmp_path: Path, offset_ps: int, duration_ps: int
) -> None:
    trace = read(tmp_path, one_event_space(offset_ps, duration_ps))
    start = (offset_ps + 500) // 1000
    assert trace.ts_ns.tolist() == [start]
    assert trace.dur_ns.tolist() == [(offset_ps + duration_ps + 500) // 1000 - start]


@pytest.mark.parametrize(
    ("offset_ps", "duration_ps"),
    [
        (2**63 - 2000, 1000),  # ends at 2**63 - 1000 ps: adding 500 would come near the edge
        (2**63 - 1000, 0),
        (-(2**63), 1000),  # int64's lowest start
        (-(2**63) + 10, -1000),  # a start below int64 through a negative duration
    ],
)
def test_times_at_or_past_int64_picoseconds_are_refused(
    tmp_path: Path, offset_ps: int, duration_ps: int
) -> None:
    with pytest.raises(TraceFormatError) as caught:
        read(tmp_path, one_event_space(offset_ps, duration_ps))
    assert str(caught.value) == (
        f"{tmp_path / 'mutants.xplane.pb'} at plane 0 ('/host:CPU') line 0 ('worker'): "
        "event times beyond int64 nanoseconds"
    )


def test_a_lone_negative_duration_after_the_line_start_is_read_as_0(tmp_path: Path) -> None:
    """The earliest time of a line is its first start plus the most negative duration: an event
    at 5000 ps lasting -1000 ps spans 4000..5000 ps, within the bounds."""
    trace = read(tmp_path, one_event_space(5000, -1000))
    assert trace.ts_ns.tolist() == [5]
    assert trace.dur_ns.tolist() == [0]
    assert "1 event(s) with a negative 'dur' read as 0 ns" in trace.warnings


def test_an_hlo_op_on_a_device_steps_line_is_a_step(tmp_path: Path) -> None:
    """Rule 1 comes first: an event of a device plane's "Steps" line is a step even when its own
    stats hold `hlo_op` (which alone would make it a kernel)."""
    space = XSpace()
    plane = space.planes.add(name="/device:GPU:0")
    plane.stat_metadata[1].name = "hlo_op"
    plane.event_metadata[1].name = "17"
    steps = plane.lines.add(id=1, name="Steps")
    steps.events.add(metadata_id=1, offset_ps=0, duration_ps=5000).stats.add(
        metadata_id=1, str_value="fusion.1"
    )
    stream = plane.lines.add(id=2, name="Stream #1")
    stream.events.add(metadata_id=1, offset_ps=1000, duration_ps=1000).stats.add(
        metadata_id=1, str_value="fusion.2"
    )
    trace = read(tmp_path, space)
    assert [EventKind(int(kind)) for kind in trace.kind] == [EventKind.STEP, EventKind.KERNEL]


WARNING = "Task Environment stat {!r} = {!r} is not a time; ignored"


@pytest.mark.parametrize(
    ("start", "stop", "expected_start", "expected_stop", "warning"),
    [
        # 2**62 ns is past every time irprof keeps: ignored (not a time), as a start or a stop.
        (2**62, 2**62 - 1, None, 2**62 - 1, WARNING.format("profile_start_time", str(2**62))),
        (2**61, 2**62, 2**61, None, WARNING.format("profile_stop_time", str(2**62))),
        # A 45-character string is shown by its first 40 characters.
        (
            5,
            "0123456789" * 4 + "abcde",
            5,
            None,
            WARNING.format("profile_stop_time", "0123456789" * 4),
        ),
    ],
)
def test_task_environment_times_from_2_62_ns_or_not_integers_are_ignored_with_a_warning(
    tmp_path: Path,
    start: int,
    stop: int | str,
    expected_start: int | None,
    expected_stop: int | None,
    warning: str,
) -> None:
    """Start and stop times are ns below 2**62; a value that is not is ignored (None), with a
    warning naming the stat and the value's first 40 characters."""
    space = XSpace()
    plane = space.planes.add(name="Task Environment")
    plane.stat_metadata[1].name = "profile_start_time"
    plane.stat_metadata[2].name = "profile_stop_time"
    plane.stats.add(metadata_id=1, int64_value=start)
    if isinstance(stop, str):
        plane.stats.add(metadata_id=2, str_value=stop)
    else:
        plane.stats.add(metadata_id=2, int64_value=stop)
    host = space.planes.add(name="/host:CPU")
    host.event_metadata[1].name = "a"
    host.lines.add(id=1, name="l", timestamp_ns=10).events.add(metadata_id=1, duration_ps=1000)
    trace = read(tmp_path, space)
    assert trace.metadata["profile_start_time_ns"] == expected_start
    assert trace.metadata["profile_stop_time_ns"] == expected_stop
    assert trace.warnings == (warning,)
