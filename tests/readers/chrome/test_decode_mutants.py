"""The Chrome decoder's errors and its chunked first pass, exactly.

Written from the mutants of `readers/chrome/decode.py` the first tests let through (most of them
in functions no selected test ran): the event a type error or a too-deep nesting is reported at,
the duplicate `traceEvents` key, and `EventText.event_fields` over chunks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.chrome import decode as chrome_decode
from irprof.readers.chrome.decode import EventText, duplicate_events_error, validation_error

DEPTH = 1500  # past msgspec's ~1000 levels


def event(name: str, ts: int, **fields: Any) -> str:
    return json.dumps({"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1, **fields})


def deep(name: str, ts: int) -> str:
    """An event whose args hold lists nested DEPTH deep (no `}` inside)."""
    return event(name, ts, args={"x": 0}).replace("0}", "[" * DEPTH + "]" * DEPTH + "}")


def refused(path: Path, text: str) -> TraceFormatError:
    path.write_text(text)
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    return caught.value


def test_a_type_error_names_its_event_and_field() -> None:
    error = msgspec.ValidationError("Expected `str`, got `int` - at `$[5].name`")
    found = validation_error(Path("t.json"), error)
    assert found.where == "traceEvents[5] field 'name'"
    assert found.problem == "Expected `str`, got `int` (see the Chrome trace event format)"
    assert found.path == "t.json"


def test_a_type_error_in_a_later_chunk_counts_from_its_first_index() -> None:
    error = msgspec.ValidationError("Expected `object`, got `array` - at `$[12]`")
    found = validation_error(Path("t.json"), error, first_index=30)
    assert found.where == "traceEvents[42]"
    assert found.problem == "Expected `object`, got `array` (see the Chrome trace event format)"


def test_a_type_error_without_a_place_is_a_whole_list_error() -> None:
    error = msgspec.ValidationError("Expected `array`, got `object`")
    found = validation_error(Path("t.json"), error)
    assert found.where is None
    assert found.problem == "not a Chrome trace event list: Expected `array`, got `object`"


def test_a_read_trace_type_error_names_the_event_in_the_whole_array(tmp_path: Path) -> None:
    events = [event("a", 0), event("b", 1), event("c", 2).replace('"c"', "5")]
    error = refused(tmp_path / "t.json", '{"traceEvents": [' + ", ".join(events) + "]}")
    assert error.where == "traceEvents[2] field 'name'"
    assert error.problem.startswith("Expected `str`, got `int`")


def test_two_top_level_event_arrays_are_refused(tmp_path: Path) -> None:
    text = '{"traceEvents": [' + event("a", 0) + '], "traceEvents": [' + event("b", 1) + "]}"
    error = refused(tmp_path / "t.json", text)
    assert error.path == str(tmp_path / "t.json")
    assert error.where == "traceEvents"
    assert error.problem == (
        "duplicate top-level key 'traceEvents': a trace has one event array; "
        "keep one of them (JSON parsers disagree on which one counts)"
    )
    assert str(duplicate_events_error(Path("x.json"))).startswith("x.json at traceEvents: ")


def test_a_traceevents_key_nested_in_an_earlier_field_is_not_a_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(
        '{"meta": {"traceEvents": [1]}, "traceEvents": [' + event("a", 0) + ", " + event("b", 3)
        + "]}"
    )  # fmt: skip
    trace = read_trace(path)
    assert trace.names() == ["a", "b"]
    assert trace.metadata["trace_fields"] == {"meta": {"traceEvents": [1]}}


def test_a_duplicate_after_a_nested_traceevents_key_is_refused(tmp_path: Path) -> None:
    text = (
        '{"meta": {"traceEvents": [1]}, "traceEvents": [' + event("a", 0)
        + '], "traceEvents": [' + event("b", 1) + "]}"
    )  # fmt: skip
    assert refused(tmp_path / "t.json", text).where == "traceEvents"


@pytest.mark.parametrize(
    "tail", ["]", "]\n", "] \n\t ", "", "\n", ",", ", \n", ",\n\n\n", " ,\r\n"]
)
def test_a_bare_array_may_end_in_whitespace_or_lack_its_bracket(tmp_path: Path, tail: str) -> None:
    path = tmp_path / "t.json"
    path.write_text("[" + event("a", 0) + ", " + event("b", 5) + tail)
    trace = read_trace(path)
    assert trace.names() == ["a", "b"]
    assert trace.ts_ns.tolist() == [0, 5000]
    assert trace.metadata["trace_fields"] == {}


def test_an_unclosed_bare_array_names_its_file_in_errors(tmp_path: Path) -> None:
    error = refused(
        tmp_path / "t.json", "[" + event("a", 0) + ", " + event("b", 5).replace('"b"', "5")
    )
    assert error.path == str(tmp_path / "t.json")
    assert error.where == "traceEvents[1] field 'name'"


@pytest.mark.parametrize("chunk_bytes", [1, 1 << 18])
def test_a_too_deep_event_is_named_by_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    """The first event holds `},` inside it (false boundaries); in one chunk or in many."""
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", chunk_bytes)
    nested = {"o": {"p": 1}, "q": {"r": {"s": 2}}, "t": 3}
    events = [event("a", 0, args=nested), event("b", 1), event("c", 2), event("d", 3)]
    events += [deep("e", 4), event("f", 5, args=nested)]
    path = tmp_path / "t.json"
    error = refused(path, '{"traceEvents": [' + ", ".join(events) + "]}")
    assert error.where == "traceEvents[4]"
    assert error.path == str(path)
    assert error.problem == (
        "nested deeper than the 1000-odd levels JSON is decoded to "
        "(an event object or its args); flatten it or drop the event"
    )


def test_a_too_deep_last_event_is_named_by_its_index(tmp_path: Path) -> None:
    events = [event("a", 0), event("b", 1), deep("c", 2)]
    error = refused(tmp_path / "t.json", "[" + ", ".join(events) + "]")
    assert error.where == "traceEvents[2]"


def text_of(*events: str) -> EventText:
    return EventText(Path("t.json"), ("[" + ", ".join(events) + "]").encode(), {})


def test_event_fields_yields_every_event_once_in_order_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = [event(name, ts, args={"o": {"p": ts}}) for ts, name in enumerate("abcde")]
    whole = [[item.name for item in chunk] for chunk in text_of(*events).event_fields()]
    assert whole == [["a", "b", "c", "d", "e"]]
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1)
    chunks = list(text_of(*events).event_fields())
    assert [[item.name for item in chunk] for chunk in chunks] == [[n] for n in "abcde"]
    assert [bytes(chunk[0].ts) for chunk in chunks] == [b"0", b"1", b"2", b"3", b"4"]
    assert bytes(chunks[2][0].args) == b'{"o": {"p": 2}}'


def test_event_fields_of_an_empty_array_yields_nothing() -> None:
    assert list(EventText(Path("t.json"), b" [ ] ", {}).event_fields()) == []


def test_event_fields_of_a_non_array_says_what_it_is() -> None:
    with pytest.raises(TraceFormatError) as caught:
        list(EventText(Path("t.json"), b'{"a": 1}', {}).event_fields())
    assert caught.value.problem == "not a Chrome trace event list: Expected `array`, got `object`"
    assert caught.value.path == "t.json"


def test_event_fields_names_a_too_deep_event_after_earlier_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1)
    chunks = text_of(event("a", 0), event("b", 1), event("c", 2), deep("d", 3)).event_fields()
    assert [item.name for item in next(chunks)] == ["a"]
    with pytest.raises(TraceFormatError) as caught:
        list(chunks)
    assert caught.value.where == "traceEvents[3]"


def test_event_arrays_that_are_not_arrays_are_refused(tmp_path: Path) -> None:
    error = refused(tmp_path / "t.json", '{"traceEvents": {"a": 1}}')
    assert error.problem == "not a Chrome trace event list: Expected `array`, got `object`"


def test_an_object_without_a_top_level_event_array_is_not_a_trace(tmp_path: Path) -> None:
    """Also when an array of events is nested under another key."""
    assert refused(tmp_path / "a.json", '{"foo": 1}').problem == (
        "JSON object is not a Chrome trace: no 'traceEvents' (keys: foo)"
    )
    nested = '{"m": {"traceEvents": [' + event("a", 0) + "]}}"
    assert refused(tmp_path / "b.json", nested).problem == (
        "JSON object is not a Chrome trace: no 'traceEvents' (keys: m)"
    )


def test_fields_beside_the_event_array_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"schemaVersion": 1, "traceEvents": [' + event("a", 0) + '], "x": {"y": 2}}')
    assert read_trace(path).metadata["trace_fields"] == {"schemaVersion": 1, "x": {"y": 2}}


@pytest.mark.parametrize("chunk_bytes", [1, 1 << 18])
def test_a_trailing_comma_in_the_event_array_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", chunk_bytes)
    text = '{"traceEvents": [' + event("a", 0) + ", " + event("b", 1) + ", ]}"
    assert refused(tmp_path / "t.json", text).path == str(tmp_path / "t.json")


def test_a_time_that_is_not_a_number_after_float_chunks_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks move from integer to float times, then one event's `ts` is a string."""
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1)
    events = [event("a", 0), event("b", 1).replace('"ts": 1', '"ts": 1.5'), event("c", 2)]
    events.append(event("d", 3).replace('"ts": 3', '"ts": "3"'))
    error = refused(tmp_path / "t.json", "[" + ", ".join(events) + "]")
    assert error.where == "traceEvents[3] field 'ts'"


def test_an_exact_float_start_with_a_tie_duration_reads_both_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.5 us is exact as a float; 0.5015 us is 501.5 ns, a tie the float lands below (in the
    first chunk, and after a chunk of integer times)."""
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1)
    tie = event("c", 3).replace('"ts": 3', '"ts": 1.5').replace('"dur": 1', '"dur": 0.5015')
    events = [tie, event("a", 0), event("b", 2).replace('"dur": 1', '"dur": 2.25')]
    path = tmp_path / "t.json"
    for order in (events, events[1:] + events[:1]):
        path.write_text("[" + ", ".join(order) + "]")
        trace = read_trace(path)
        assert trace.names() == ["a", "c", "b"]
        assert trace.ts_ns.tolist() == [0, 1500, 2000]
        assert trace.dur_ns.tolist() == [1000, 502, 2250]


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ('{"foo": 1}', "foo"),
        ('{"foo": 1, "bar": 2}', "bar, foo"),
        ("{" + ", ".join(f'"{key}": 0' for key in "ihgfedcba") + "}", "a, b, c, d, e, f, g, h"),
        ("{}", "none"),
    ],
)
def test_json_that_is_not_a_trace_object_names_its_first_keys(
    tmp_path: Path, text: str, keys: str
) -> None:
    path = tmp_path / "t.json"
    error = refused(path, text)
    assert error.path == str(path)
    assert error.problem == f"JSON object is not a Chrome trace: no 'traceEvents' (keys: {keys})"


@pytest.mark.parametrize("text", [b'"xy"', b"1", b"null"])
def test_a_json_value_that_is_no_object_has_no_keys(text: bytes) -> None:
    with pytest.raises(TraceFormatError) as caught:
        chrome_decode.locate_events(Path("t.json"), text)
    assert (
        caught.value.problem == "JSON object is not a Chrome trace: no 'traceEvents' (keys: none)"
    )


def test_an_object_that_is_not_json_is_refused_as_such(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    error = refused(path, '{"a": 1')
    assert error.path == str(path)
    assert error.problem.startswith("not valid JSON: ")
    assert len(error.problem) > len("not valid JSON: ")


def test_a_type_error_found_after_the_fast_locate_fails_names_the_file(tmp_path: Path) -> None:
    """A `]` after the array makes the fast locate guess too far; the exact parse then finds
    the array, and its type error still names the file and the event."""
    path = tmp_path / "t.json"
    error = refused(path, '{"traceEvents": [{"name": 5}], "x": [1]}')
    assert error.path == str(path)
    assert error.where == "traceEvents[0] field 'name'"


@pytest.mark.parametrize("text", [b"", b"  ", b"[", b" \n[1"])
def test_event_fields_of_text_that_is_no_array_raise(text: bytes) -> None:
    with pytest.raises(TraceFormatError):
        list(EventText(Path("t.json"), text, {}).event_fields())


@pytest.mark.parametrize("text", [b"[]", b"\n\t [ ]", b"[\n\n]\r\n"])
def test_event_fields_of_an_empty_array_has_no_chunk(text: bytes) -> None:
    assert list(EventText(Path("t.json"), text, {}).event_fields()) == []
