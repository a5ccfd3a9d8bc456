"""`readers/chrome/reader.py`: unknown phases, tracks of many threads, the errors and warnings
that name the file, a byte-order mark, invalid UTF-8, the exact parse after a wrong guess of
the event array's end, and nesting too deep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from irprof.errors import TraceFormatError
from irprof.readers.chrome.reader import READER, _Parts, read_chrome
from irprof.readers.trace_bytes import TraceBytes
from irprof.trace.model import Trace

PATH = Path("dir/t.json")


def _event(**fields: Any) -> dict[str, Any]:
    return {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2} | fields


def _read(events: list[dict[str, Any]], **top: Any) -> Trace:
    return read_chrome(PATH, json.dumps({"traceEvents": events} | top).encode())


def test_events_of_an_unknown_phase_are_left_out() -> None:
    """A sample (P) or an object snapshot (O) is not a slice: only the X event is read."""
    trace = _read([_event(), _event(ph="P", name="s", ts=2), _event(ph="O", name="o", id="0x1")])
    assert trace.names() == ["a"] and len(trace) == 1


@pytest.mark.parametrize("tids", [(1,), (1, 2, 3)])
def test_every_pid_and_tid_pair_keeps_its_own_track(tids: tuple[int, ...]) -> None:
    """3 processes x 1 or 3 threads: each event on its own (pid, tid)."""
    events = [
        _event(pid=pid, tid=tid, name=f"{pid}.{tid}", ts=10 * pid + tid)
        for pid in (1, 2, 3)
        for tid in tids
    ]
    trace = _read(events)
    tracks = trace.tracks
    read = {
        trace.strings[name]: (tracks.pid[track], tracks.tid[track])
        for name, track in zip(trace.name.tolist(), trace.track.tolist(), strict=True)
    }
    assert read == {f"{pid}.{tid}": (pid, tid) for pid in (1, 2, 3) for tid in tids}


def test_the_source_is_the_path_read() -> None:
    assert _read([_event()]).metadata["source"] == str(PATH)


@pytest.mark.parametrize(
    ("top", "where"),
    [
        ({"baseTimeNanoseconds": "soon"}, "top-level field 'baseTimeNanoseconds'"),
        ({"baseTimeNanoseconds": 2**62 - 10}, "traceEvents[0] field 'ts'"),
    ],
)
def test_a_bad_base_time_or_a_time_beyond_it_names_the_file(
    top: dict[str, Any], where: str
) -> None:
    with pytest.raises(TraceFormatError) as raised:
        _read([_event()], **top)
    assert str(raised.value).startswith(f"{PATH} at {where}: ")


def test_a_negative_duration_is_read_as_zero_with_a_warning() -> None:
    trace = _read([_event(), _event(ts=3, dur=-5)])
    assert trace.dur_ns.tolist() == [2000, 0]
    assert trace.warnings == ("1 event(s) with a negative 'dur' read as 0 ns",)


def test_a_byte_order_mark_is_skipped() -> None:
    data = b"\xef\xbb\xbf" + json.dumps({"traceEvents": [_event()]}).encode()
    trace = read_chrome(PATH, data)
    assert trace.names() == ["a"] and trace.warnings == ()


def test_invalid_utf8_is_replaced_and_counted_once_per_sequence() -> None:
    data = json.dumps({"traceEvents": [_event(name="aQb"), _event(ts=4)]}).encode()
    trace = read_chrome(PATH, data.replace(b"Q", b"\xff"))
    assert trace.names() == ["a\ufffdb", "a"]
    assert trace.warnings == ("1 invalid UTF-8 sequence(s) replaced by U+FFFD",)


def test_an_array_after_the_events_is_read_by_the_exact_parse() -> None:
    """The last `]` closes `meta`, not `traceEvents`: the quick guess fails and the exact parse
    reads the events and the field, with the warnings of the text (negative duration)."""
    data = json.dumps({"traceEvents": [_event(), _event(ts=3, dur=-1)], "meta": [1, 2]})
    trace = read_chrome(PATH, data.encode())
    assert trace.names() == ["a", "a"] and trace.dur_ns.tolist() == [2000, 0]
    assert trace.metadata["trace_fields"] == {"meta": [1, 2]}
    assert trace.metadata["source"] == str(PATH)
    assert trace.warnings == ("1 event(s) with a negative 'dur' read as 0 ns",)


def test_an_exact_parse_keeps_the_utf8_warning() -> None:
    data = json.dumps({"traceEvents": [_event(name="Q")], "meta": [1]}).encode()
    trace = read_chrome(PATH, data.replace(b"Q", b"\xff"))
    assert trace.warnings == ("1 invalid UTF-8 sequence(s) replaced by U+FFFD",)


def test_nesting_too_deep_is_an_error_naming_the_file() -> None:
    data = b'{"traceEvents": [], "x": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    with pytest.raises(TraceFormatError) as raised:
        read_chrome(PATH, data)
    assert str(raised.value) == f"{PATH}: JSON nested deeper than 1000-odd levels; flatten it"


def test_a_bad_event_after_a_wrong_guess_names_the_file() -> None:
    """The exact parse reports a bad field as the quick one does: file, event and field."""
    data = json.dumps({"traceEvents": [_event(ts="soon")], "meta": [1]}).encode()
    with pytest.raises(TraceFormatError) as raised:
        read_chrome(PATH, data)
    assert str(raised.value).startswith(f"{PATH} at traceEvents[0] field 'ts'")


def test_a_trace_without_flow_events_has_no_flows() -> None:
    trace = _read([_event()])
    assert len(trace.flows) == 0


def test_a_flow_event_without_a_slice_to_bind_is_counted() -> None:
    """The start binds to the slice enclosing it; the end, on a thread without slices, does not."""
    flow = {"cat": "c", "name": "f", "id": 7}
    trace = _read(
        [_event(dur=10), flow | {"ph": "s", "pid": 1, "tid": 1, "ts": 2},
         flow | {"ph": "f", "pid": 9, "tid": 9, "ts": 5}]
    )  # fmt: skip
    assert trace.warnings == ("1 flow event(s) found no slice to bind to",)


def test_the_base_time_is_added_and_recorded() -> None:
    trace = _read([_event()], baseTimeNanoseconds=5_000)
    assert trace.ts_ns.tolist() == [6_000]
    assert trace.metadata["base_time_ns"] == 5_000
    assert _read([_event()]).metadata["base_time_ns"] is None


def test_a_bad_duration_names_the_file_and_the_event() -> None:
    with pytest.raises(TraceFormatError) as raised:
        _read([_event(), _event(dur="long")])
    assert str(raised.value).startswith(f"{PATH} at traceEvents[1] field 'dur'")


def test_flows_keep_their_numeric_ids() -> None:
    """Two flows of integer ids, each from a slice to the slice enclosing its end on another
    thread."""
    flow = {"cat": "c", "name": "f", "pid": 1, "bp": "e"}
    flows = [
        flow | {"id": flow_id, "ph": phase, "tid": tid, "ts": ts}
        for flow_id, (start, end) in ((41, (2, 12)), (7, (3, 13)))
        for phase, tid, ts in (("s", 1, start), ("f", 2, end))
    ]
    trace = _read([_event(dur=10), _event(tid=2, ts=11, dur=10), *flows])
    assert sorted(trace.flows.flow_id.tolist()) == [7, 41]
    assert trace.warnings == ()


def test_parts_are_joined_back_to_back() -> None:
    """The streaming converter reads a chunk's raw args through `getvalue`."""
    parts = _Parts()
    for part in (b'{"a":1}', b"", b'{"b":2}'):
        parts.write(part)
    assert parts.getvalue() == b'{"a":1}{"b":2}'


@pytest.mark.parametrize(
    ("head", "accepted"),
    [(b' \t\r\n{"traceEvents"', True), (b"\n[", True), (b"\x0b{}", False), (b"\x0c[]", False)],
)
def test_chrome_json_starts_after_json_whitespace_only(head: bytes, accepted: bool) -> None:
    assert READER.sniff(head) is accepted


def test_the_reader_reads_the_path_it_is_given() -> None:
    data = json.dumps({"traceEvents": [_event()]}).encode()
    assert READER.read(PATH, TraceBytes(data)).metadata["source"] == str(PATH)


def test_a_flow_without_an_id_is_flow_zero() -> None:
    flow = {"cat": "c", "name": "f", "pid": 1, "bp": "e"}
    trace = _read(
        [_event(dur=10), _event(tid=2, ts=11, dur=10),
         flow | {"ph": "s", "tid": 1, "ts": 2}, flow | {"ph": "f", "tid": 2, "ts": 12}]
    )  # fmt: skip
    assert trace.flows.flow_id.tolist() == [0]


def test_integer_flow_ids_stay_integers_when_a_later_chunk_has_text_ids() -> None:
    """The events are decoded in chunks of ~256 KB: the first chunk's ids are all integers, a
    later one's are text; the integer id is still the flow's id."""
    flow = {"cat": "c", "name": "f", "pid": 1, "bp": "e"}
    filler = [_event(tid=3, ts=100 + n, dur=1, name="x" * 40) for n in range(8000)]
    trace = _read(
        [_event(dur=10), _event(tid=2, ts=11, dur=10),
         flow | {"ph": "s", "tid": 1, "ts": 2, "id": 9},
         flow | {"ph": "f", "tid": 2, "ts": 12, "id": 9}, *filler,
         flow | {"ph": "s", "tid": 1, "ts": 3, "id": "0x1"},
         flow | {"ph": "f", "tid": 2, "ts": 13, "id": "0x1"}]
    )  # fmt: skip
    assert 9 in trace.flows.flow_id.tolist() and len(trace.flows) == 2


def test_a_lone_flow_event_is_read_without_a_flow() -> None:
    flow = {"cat": "c", "name": "f", "pid": 1, "tid": 1, "ts": 2, "id": 5, "ph": "s"}
    trace = _read([_event(dur=10), flow])
    assert len(trace.flows) == 0 and trace.names() == ["a"]


def test_metadata_keeps_small_top_level_fields_but_the_time_fields() -> None:
    """`trace_fields` holds top-level fields of at most 4096 bytes of JSON, not the unit and the
    base time, which have their own keys."""
    fits, too_big = "x" * 4094, "x" * 4095  # 4096 and 4097 bytes with their quotes
    trace = _read(
        [_event()], displayTimeUnit="ns", baseTimeNanoseconds=0, fits=fits, too_big=too_big
    )
    metadata = trace.metadata
    assert metadata["format"] == "chrome" and metadata["display_time_unit"] == "ns"
    assert metadata["trace_fields"] == {"fits": fits}
