"""XPlane reader rules, one by one, on stats, metadata and XSpaces built in code: stat values,
event kinds, the sniff's bounds, picosecond rounding, unknown metadata, empty lines, flows across
lines, task environment and HLO programs, and the errors that name the file."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from irprof.errors import TraceFormatError
from irprof.readers import SNIFF_BYTES
from irprof.readers.trace_bytes import TraceBytes
from irprof.readers.xplane import (
    READER,
    classify_event,
    looks_like_xspace,
    read_xplane,
    stat_int,
    stat_value,
    stats_dict,
)
from irprof.readers.xplane_proto.profile_options_pb2 import ProfileOptions
from irprof.readers.xplane_proto.xplane_pb2 import XPlane, XSpace, XStat
from irprof.trace.model import EventKind, Trace

START_NS = 1_795_000_000_000_000_000
HOST, DEVICE = "/host:CPU", "/device:GPU:0"


def read(tmp_path: Path, space: XSpace) -> Trace:
    path = tmp_path / "rules.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return read_xplane(path, path.read_bytes())


def environment(space: XSpace, start_ns: int = START_NS) -> XPlane:
    plane = space.planes.add(name="Task Environment")
    plane.stat_metadata[1].name = "profile_start_time"
    plane.stats.add(metadata_id=1, uint64_value=start_ns)
    return plane


def host_plane(space: XSpace, name: str = HOST) -> XPlane:
    plane = space.planes.add(name=name)
    for key, stat in enumerate(("_p", "_pt", "_c", "_ct", "step_num", "hlo_op", "kind"), start=1):
        plane.stat_metadata[key].name = stat
    return plane


def names_in_order(trace: Trace) -> list[str]:
    return trace.names()


# Stat values and names.


def test_stat_values_of_every_kind() -> None:
    """Numbers and strings as they are, refs by the stat metadata's name ("" when undefined),
    bytes base64 (ASCII text), and a stat with no value as ""."""
    names = {3: "cpu"}
    assert stat_value(XStat(metadata_id=1, int64_value=-4), names) == -4
    assert stat_value(XStat(metadata_id=1, uint64_value=4), names) == 4
    assert stat_value(XStat(metadata_id=1, double_value=0.5), names) == 0.5
    assert stat_value(XStat(metadata_id=1, str_value="s"), names) == "s"
    assert stat_value(XStat(metadata_id=1, ref_value=3), names) == "cpu"
    assert stat_value(XStat(metadata_id=1, ref_value=9), names) == ""
    encoded = stat_value(XStat(metadata_id=1, bytes_value=b"\x00\xff"), names)
    assert encoded == base64.b64encode(b"\x00\xff").decode() and isinstance(encoded, str)
    assert stat_value(XStat(metadata_id=1), names) == ""


def test_stats_naming_undefined_metadata_are_named_by_their_id() -> None:
    """A stat whose metadata id the plane does not define keeps the id as its name."""
    stats = [XStat(metadata_id=9, int64_value=1), XStat(metadata_id=3, str_value="x")]
    assert stats_dict(stats, {3: "kind"}) == {"9": 1, "kind": "x"}


# Kinds.


@pytest.mark.parametrize(
    ("plane", "line", "name", "display", "stats", "dur", "kind"),
    [
        (HOST, "l", "train", "", {"step_num": 1}, 5, EventKind.STEP),
        (DEVICE, "Steps", "42", "", {}, 5, EventKind.STEP),
        (HOST, "Steps", "42", "", {}, 5, EventKind.RUNTIME),  # a Steps line off a device
        (DEVICE, "Stream #7", "gemm", "", {}, 5, EventKind.KERNEL),
        (HOST, "l", "fusion.1", "", {"hlo_op": "fusion.1"}, 5, EventKind.KERNEL),
        (HOST, "l", "dense/MatMul:MatMul", "MatMul", {}, 5, EventKind.FRAMEWORK_OP),
        (HOST, "l", ":MatMul", "MatMul", {}, 5, EventKind.RUNTIME),  # no node name before ':'
        (HOST, "l", "MatMul", "", {}, 5, EventKind.RUNTIME),  # no display name
        (HOST, "l", "$train.py:3 step", "", {}, 5, EventKind.PYTHON),
        (HOST, "l", "marker", "", {}, 0, EventKind.INSTANT),
        (HOST, "l", "ExecutorState::Process", "", {}, 5, EventKind.RUNTIME),
    ],
)
def test_event_kinds_follow_the_rules_in_order(
    plane: str, line: str, name: str, display: str, stats: dict[str, int], dur: int,
    kind: EventKind,
) -> None:  # fmt: skip
    """step_num or a device's Steps line, hlo_op, "<node>:<type>", "$" frames, device events,
    zero duration, the rest: the first rule that matches decides."""
    assert classify_event(plane, line, name, display, stats, dur) == kind


# The sniff.


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@pytest.mark.parametrize(
    ("head", "accepted"),
    [
        (b"\x0a\x00", True),  # one empty plane: the smallest XSpace with a plane
        (b"\x0a\x00\x0a\x02\x08\x01", True),  # an empty plane, then a plane with its id
        (b"", False),
        (b"\x0a", False),
        (b'\x0a{"traceEvents": []}', False),  # text: no control byte outside \t\n\r
        (b"\x12\x80\x80\x80", False),  # a length cut short
        (b"\x12\x02ab", True),  # errors: "ab", ending exactly at the end of the file
        (b"\x12\x05ab", False),  # a length past the end of the file
        (b"\x0a\x02\x08\x01", True),  # a plane starting with its id
        (b"\x0a\x02\x07\x01", False),  # a plane starting with no XPlane field
        (b"\x0a\x01\x07", False),  # a one-byte plane that is no XPlane field
        (b"\x0a\x80\x01" + b"\x08" * 7, False),  # length 128 (a 0x80 byte continues)
        (b"\x0a" + varint(300) + b"\x12" + b"x" * 299, True),  # two-byte length, exactly fits
        (b"\x0a" + varint(300) + b"\x12" + b"x" * 276, False),  # two-byte length, cut
        (b"\x0a" + varint(20_000) + b"\x12" + b"x" * 3743, False),  # three-byte length, cut
    ],
)
def test_sniff_bounds(head: bytes, accepted: bool) -> None:
    """An XSpace field tag, then a varint length inside the file, then an XPlane field."""
    assert looks_like_xspace(head) is accepted


def test_sniff_window_does_not_demand_the_whole_plane() -> None:
    """A head of the full sniff window is a prefix of a larger file: a long plane is fine."""
    head = (b"\x0a" + varint(10**6) + b"\x08\x01" + b"\x12\x01x" * SNIFF_BYTES)[:SNIFF_BYTES]
    assert looks_like_xspace(head)


# Errors name the file and the problem.


def test_corrupt_and_empty_spaces_are_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.xplane.pb"
    with pytest.raises(TraceFormatError, match=r"bad\.xplane\.pb: corrupt XPlane protobuf"):
        read_xplane(path, b"\x0a\x05\x08")
    with pytest.raises(TraceFormatError, match=r"bad\.xplane\.pb: XSpace protobuf holds no planes"):
        read_xplane(path, XSpace(hostnames=["h"]).SerializeToString())


def test_bad_event_times_name_the_file_plane_and_line(tmp_path: Path) -> None:
    space = XSpace()
    environment(space)
    plane = host_plane(space)
    plane.event_metadata[1].name = "scope"
    line = plane.lines.add(id=3, name="worker")
    # offset + duration in picoseconds wraps int64
    line.events.add(metadata_id=1, offset_ps=5 * 10**18, duration_ps=5 * 10**18)
    with pytest.raises(TraceFormatError) as caught:
        read(tmp_path, space)
    assert str(caught.value) == (
        f"{tmp_path / 'rules.xplane.pb'} at plane 1 ('/host:CPU') line 0 ('worker'): "
        "event times beyond int64 nanoseconds"
    )


def test_corrupt_profile_options_are_refused_naming_the_file(tmp_path: Path) -> None:
    space = XSpace()
    env = environment(space)
    env.stat_metadata[2].name = "profile_options"
    env.stats.add(metadata_id=2, bytes_value=b"\x0a\xff")
    with pytest.raises(TraceFormatError, match=r"rules\.xplane\.pb: corrupt profile_options"):
        read(tmp_path, space)


# Times.


def test_event_ends_round_half_up_from_picoseconds(tmp_path: Path) -> None:
    """Start and end are each rounded to the nearest ns (half up): 1499 ps lasts 1 ns, 1500 ps 2."""
    space = XSpace()
    environment(space)
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    plane.event_metadata[2].name = "b"
    line = plane.lines.add(id=1, name="l")
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=1499)
    line.events.add(metadata_id=2, offset_ps=10_000, duration_ps=1500)
    trace = read(tmp_path, space)
    assert trace.dur_ns.tolist() == [1, 2]
    assert (trace.ts_ns - START_NS).tolist() == [0, 10]


def test_an_odd_start_time_halves_exactly(tmp_path: Path) -> None:
    """The relative/absolute boundary is half the start time in integers: a line timestamp equal
    to start // 2 is absolute even when the start is odd."""
    odd = 2_000_001  # small enough for a float of half of it to keep the .5
    space = XSpace()
    environment(space, odd)
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    plane.lines.add(id=1, name="l", timestamp_ns=odd // 2).events.add(metadata_id=1, duration_ps=1)
    assert read(tmp_path, space).ts_ns.tolist() == [odd // 2]


def test_a_device_steps_line_holds_steps(tmp_path: Path) -> None:
    """On a device plane the "Steps" line's events are steps without any step_num stat."""
    space = XSpace()
    environment(space)
    plane = host_plane(space, DEVICE)
    plane.event_metadata[1].name = "17"
    plane.lines.add(id=1, name="Steps").events.add(metadata_id=1, duration_ps=5000)
    plane.lines.add(id=2, name="Stream #1").events.add(metadata_id=1, duration_ps=1000)
    assert read(tmp_path, space).kind.tolist() == [EventKind.STEP, EventKind.KERNEL]


def test_the_last_representable_end_is_read(tmp_path: Path) -> None:
    """|line timestamp| + last end + 1 ns must stay below 2**62: one ns below is read."""
    space = XSpace()
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    line = plane.lines.add(id=1, name="l", timestamp_ns=2**62 - 3)
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=1000)
    assert read(tmp_path, space).dur_ns.tolist() == [1]


# Metadata, lines and flows.


def test_events_of_undefined_metadata_are_named_so_with_or_without_stats(tmp_path: Path) -> None:
    space = XSpace()
    environment(space)
    plane = host_plane(space)
    line = plane.lines.add(id=1, name="l")
    line.events.add(metadata_id=77, offset_ps=0, duration_ps=1000)
    line.events.add(metadata_id=78, offset_ps=5000, duration_ps=1000).stats.add(
        metadata_id=7, str_value="x"
    )
    trace = read(tmp_path, space)
    assert names_in_order(trace) == ["<unknown metadata>", "<unknown metadata>"]
    assert [trace.args(0), trace.args(1)] == [{}, {"kind": "x"}]


def test_metadata_args_reach_events_without_stats_and_events_without_args_have_none(
    tmp_path: Path,
) -> None:
    """A TF op's metadata gives every event of it `tf_op_name`/`tf_op_type`/`display_name` and
    the metadata's own stats (refs resolved); an event whose metadata has no args stores none."""
    space = XSpace()
    environment(space)
    plane = host_plane(space)
    plane.stat_metadata[20].name = "Eigen"
    op = plane.event_metadata[1]
    op.name, op.display_name = "dense/MatMul:MatMul", "MatMul"
    op.stats.add(metadata_id=7, ref_value=20)
    plane.event_metadata[2].name = "plain"
    line = plane.lines.add(id=1, name="l")
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=1000)
    line.events.add(metadata_id=2, offset_ps=5000, duration_ps=1000)
    trace = read(tmp_path, space)
    assert trace.args(0) == {
        "kind": "Eigen",
        "display_name": "MatMul",
        "tf_op_name": "dense/MatMul",
        "tf_op_type": "MatMul",
    }
    assert trace.kind.tolist()[0] == EventKind.FRAMEWORK_OP
    assert int(trace.args_offsets[2] - trace.args_offsets[1]) == 0  # "plain": no bytes at all


def test_empty_lines_are_tracks_and_do_not_stop_the_plane(tmp_path: Path) -> None:
    """A line without events is still a track (labelled by its display name when it has one),
    and the lines after it are read."""
    space = XSpace()
    environment(space)
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    plane.lines.add(id=4, name="raw", display_name="Shown")
    plane.lines.add(id=5, name="busy").events.add(metadata_id=1, duration_ps=1000)
    trace = read(tmp_path, space)
    labels = {
        (int(trace.tracks.pid[index]), int(trace.tracks.tid[index])): trace.tracks.label(index)
        for index in range(len(trace.tracks.pid))
    }
    assert labels == {(1, 4): "/host:CPU/Shown", (1, 5): "/host:CPU/busy"}
    assert names_in_order(trace) == ["a"]


def test_flows_pair_producers_and_consumers_across_lines_and_metadata(tmp_path: Path) -> None:
    """A producer context in an event's metadata (`_p`/`_pt` on XEventMetadata) pairs with a
    consumer on a later line; rows count across lines, and an event with stats of its own on a
    line of flow metadata keeps them."""
    space = XSpace()
    environment(space)
    plane = host_plane(space)
    producer = plane.event_metadata[1]
    producer.name = "Record"
    producer.stats.add(metadata_id=1, uint64_value=99)
    producer.stats.add(metadata_id=2, int64_value=4)
    for key, name in ((2, "first"), (3, "StartRegion"), (4, "other")):
        plane.event_metadata[key].name = name
    first = plane.lines.add(id=1, name="one")
    first.events.add(metadata_id=2, offset_ps=0, duration_ps=1000)
    first.events.add(metadata_id=2, offset_ps=2_000, duration_ps=1000)
    middle = plane.lines.add(id=2, name="two")
    middle.events.add(metadata_id=4, offset_ps=3_000, duration_ps=1000).stats.add(
        metadata_id=7, str_value="own"
    )
    middle.events.add(metadata_id=1, offset_ps=4_000, duration_ps=1000)
    middle.events.add(metadata_id=4, offset_ps=5_000, duration_ps=1000)
    last = plane.lines.add(id=3, name="three")
    consumer = last.events.add(metadata_id=3, offset_ps=9_000, duration_ps=1000)
    consumer.stats.add(metadata_id=3, uint64_value=99)
    consumer.stats.add(metadata_id=4, int64_value=4)
    trace = read(tmp_path, space)
    names = names_in_order(trace)
    pairs = zip(trace.flows.src.tolist(), trace.flows.dst.tolist(), strict=True)
    assert [(names[src], names[dst]) for src, dst in pairs] == [("Record", "StartRegion")]
    assert trace.flows.flow_id.tolist() == [99]
    assert trace.args(names.index("other")) == {"kind": "own"}


# Task environment, plane stats and HLO programs.


def test_task_environment_options_and_run_metadata(tmp_path: Path) -> None:
    """Start/stop times, the profile options with every field (defaults too), other stats by name
    (undefined ids by number, bytes as base64, refs by name), options not repeated among them."""
    space = XSpace(hostnames=["vm"])
    env = environment(space)
    stat_names = ((2, "profile_stop_time"), (3, "profile_options"), (4, "blob"), (5, "host"))
    for key, name in stat_names:
        env.stat_metadata[key].name = name
    env.stat_metadata[6].name = "vm7"
    env.stats.add(metadata_id=2, uint64_value=START_NS + 5)
    env.stats.add(
        metadata_id=3, bytes_value=ProfileOptions(host_tracer_level=2).SerializeToString()
    )
    env.stats.add(metadata_id=4, bytes_value=b"\x01")
    env.stats.add(metadata_id=5, ref_value=6)
    env.stats.add(metadata_id=9, str_value="x")
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    plane.lines.add(id=1, name="l").events.add(metadata_id=1, duration_ps=1000)
    path = tmp_path / "rules.xplane.pb"
    path.write_bytes(space.SerializeToString())
    metadata = READER.read(path, TraceBytes(path.read_bytes())).metadata
    assert metadata["source"] == str(path) and metadata["format"] == "xplane"
    assert metadata["profile_start_time_ns"] == START_NS
    assert metadata["profile_stop_time_ns"] == START_NS + 5
    assert metadata["profile_options"]["host_tracer_level"] == 2
    assert metadata["profile_options"]["python_tracer_level"] == 0  # a default, still shown
    assert metadata["task_environment"] == {
        "profile_start_time": START_NS,
        "profile_stop_time": START_NS + 5,
        "blob": base64.b64encode(b"\x01").decode(),
        "host": "vm7",
        "9": "x",
    }
    assert metadata["hostnames"] == ["vm"]


def test_without_a_task_environment_times_and_options_are_unknown(tmp_path: Path) -> None:
    space = XSpace()
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    plane.lines.add(id=1, name="l", timestamp_ns=1000).events.add(metadata_id=1, duration_ps=1000)
    trace = read(tmp_path, space)
    assert trace.metadata["profile_start_time_ns"] is None
    assert trace.metadata["profile_stop_time_ns"] is None
    assert trace.metadata["profile_options"] == {}
    assert trace.metadata["task_environment"] == {}
    assert trace.ts_ns.tolist() == [1000]  # not shifted: there is no start to add


def test_hlo_programs_from_the_metadata_plane(tmp_path: Path) -> None:
    """Every event metadata with an "Hlo Proto" stat is a program: id from `program_id` (-1 when
    absent), the "(N)" suffix dropped from its name, sorted by id; the others are not programs."""
    space = XSpace()
    environment(space)
    meta = space.planes.add(name="/host:metadata")
    meta.stat_metadata[1].name, meta.stat_metadata[2].name = "Hlo Proto", "program_id"
    for key, name, program_id, proto in (
        (1, "jit_step(7)", 7, b"step"),
        (2, "jit_init(3)", 3, b"init"),
        (3, "no_id", None, b"bare"),
        (4, "not_a_program", 9, None),
    ):
        entry = meta.event_metadata[key]
        entry.name = name
        if proto is not None:
            entry.stats.add(metadata_id=1, bytes_value=proto)
        if program_id is not None:
            entry.stats.add(metadata_id=2, int64_value=program_id)
    plane = host_plane(space)
    plane.event_metadata[1].name = "a"
    plane.lines.add(id=1, name="l").events.add(metadata_id=1, duration_ps=1000)
    programs = read(tmp_path, space).hlo_programs
    assert [(p.program_id, p.name, p.proto) for p in programs] == [
        (-1, "no_id", b"bare"),
        (3, "jit_init", b"init"),
        (7, "jit_step", b"step"),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(5.0, 5), (-3.0, -3), (5.5, None), (float("nan"), None), (float("inf"), None),
     (2.0**63, None), (-(2.0**63), -(2**63)), ("5", None), (True, None)],
)  # fmt: skip
def test_an_integral_float_stat_is_read_as_its_integer(value: object, expected: int | None) -> None:
    """Some writers store ids and times as doubles: an integral one is the integer, as an int."""
    got = stat_int(value)
    assert got == expected and (got is None or type(got) is int)
