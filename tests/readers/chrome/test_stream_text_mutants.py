"""The streamed event text, chunk by chunk: indexes, errors, and files whose array key the
stream cannot find by its text.

Written from the mutants of `readers/chrome/stream_text.py` the first tests let through: the
event a type error names, the last events of a bare array without its `]`, and an object whose
`traceEvents` key is written with an escape (read whole, as the in-memory reader does).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from irprof.errors import TraceFormatError
from irprof.readers.chrome import stream_text
from irprof.readers.chrome.stream_text import EventChunk, EventStream, _Blocks

BOM = b"\xef\xbb\xbf"
REPLACED = "\ufffd".encode()


def event(name: str, ts: int, **fields: Any) -> str:
    return json.dumps({"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1, **fields})


def chunks(path: Path, text: str, **sizes: int) -> tuple[EventStream, list[EventChunk]]:
    path.write_text(text)
    stream = EventStream(path, **sizes)
    return stream, list(stream)


def refused(path: Path, text: str, **sizes: int) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as caught:
        chunks(path, text, **sizes)
    return caught.value


@pytest.mark.parametrize("chunk_bytes", [1, 1 << 18])
def test_a_type_error_names_the_event_in_the_whole_array(tmp_path: Path, chunk_bytes: int) -> None:
    events = [event("a", 0), event("b", 1), event("c", 2).replace('"c"', "5"), event("d", 3)]
    path = tmp_path / "t.json"
    error = refused(path, '{"traceEvents": [' + ", ".join(events) + "]}", chunk_bytes=chunk_bytes)
    assert error.path == str(path)
    assert error.where == "traceEvents[2] field 'name'"
    assert error.problem == "Expected `str`, got `int` (see the Chrome trace event format)"


def test_an_escaped_traceevents_key_is_found_by_reading_the_file_whole(tmp_path: Path) -> None:
    text = '{"x": 1, "trace\\u0045vents": [' + event("a", 0) + ", " + event("b", 1) + "]}"
    assert json.loads(text)["traceEvents"][1]["name"] == "b"
    stream, found = chunks(tmp_path / "t.json", text, chunk_bytes=1)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a"], ["b"]]
    assert [chunk.first_index for chunk in found] == [0, 1]
    assert stream.fields == {"x": 1}


@pytest.mark.parametrize(
    "tail", ["", ",", ", \n", "\n", "]", "]\n", " ]\r\n ", "]\ufeff\n", ",\ufeff"]
)
def test_a_bare_array_with_or_without_its_bracket_gives_every_event_and_its_index(
    tmp_path: Path, tail: str
) -> None:
    text = "[" + ", ".join(event(name, ts) for ts, name in enumerate("abc")) + tail
    _, found = chunks(tmp_path / "t.json", text, chunk_bytes=1)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a"], ["b"], ["c"]]
    assert [chunk.first_index for chunk in found] == [0, 1, 2]
    assert json.loads(found[2].text) == [json.loads(event("c", 2))]


def test_a_broken_last_event_of_a_bare_array_names_its_index(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = "[" + event("a", 0) + ", " + event("b", 1) + ', {"name": '
    error = refused(path, text, chunk_bytes=1)
    assert error.path == str(path)
    assert error.where == "traceEvents[2]"
    assert error.problem == "not a Chrome trace event list"


@pytest.mark.parametrize(
    "text", ['{"traceEvents": [ \ufeff\n], "x": 1}', "[\ufeff,", "[ \ufeff ]\n", "[]"]
)
def test_arrays_of_blanks_and_byte_order_marks_have_no_events(tmp_path: Path, text: str) -> None:
    """As in memory, U+FEFF counts as a blank around the events (`decode.WHITESPACE`)."""
    stream, found = chunks(tmp_path / "t.json", text, chunk_bytes=1)
    assert found == []
    assert stream.fields == ({"x": 1} if text.startswith("{") else {})


def test_the_last_events_of_an_object_keep_their_index(tmp_path: Path) -> None:
    text = '{"traceEvents": [' + ", ".join(event(n, ts) for ts, n in enumerate("abc")) + "]}"
    _, found = chunks(tmp_path / "t.json", text, chunk_bytes=1)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a"], ["b"], ["c"]]
    assert [chunk.first_index for chunk in found] == [0, 1, 2]


@pytest.mark.parametrize("last", ["5", "[]", "{}x"])
def test_a_short_last_element_that_is_no_event_is_refused(tmp_path: Path, last: str) -> None:
    error = refused(
        tmp_path / "t.json", '{"traceEvents": [' + event("a", 0) + ", " + last + "]}", chunk_bytes=1
    )
    assert error.where is not None and error.where.startswith("traceEvents[1]")


def test_brackets_in_the_last_events_and_after_the_array_are_told_apart(tmp_path: Path) -> None:
    """The array's `]` is the last one whose suffix closes the object: not the `]` in a string
    after it, nor those of lists inside the events."""
    events = [event("a", 0, args={"l": [1, [2]]}), event("b", 1, args={"m": [3]})]
    text = '{"traceEvents": [' + ", ".join(events) + '], "x": "]", "y": [4]}'
    stream, found = chunks(tmp_path / "t.json", text)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a", "b"]]
    assert stream.fields == {"x": "]", "y": [4]}


@pytest.mark.parametrize("chunk_bytes", [1, 1 << 18])
def test_an_object_left_open_after_its_array_is_refused(tmp_path: Path, chunk_bytes: int) -> None:
    path = tmp_path / "t.json"
    text = '{"traceEvents": [' + event("a", 0) + ", " + event("b", 1) + "]"
    error = refused(path, text, chunk_bytes=chunk_bytes)
    assert error.path == str(path)
    assert error.problem == "not valid JSON: the event array or the object around it is malformed"
    assert error.where == (
        "traceEvents[1] or after" if chunk_bytes == 1 else "traceEvents[0] or after"
    )


def blocks_of(tmp_path: Path, data: bytes, block_bytes: int) -> tuple[list[bytes], int]:
    path = tmp_path / "blocks.json"
    path.write_bytes(data)
    with path.open("rb") as handle:
        blocks = _Blocks(path, handle, block_bytes)
        found = []
        while block := blocks.read():
            found.append(block)
    return found, blocks.replaced


def test_blocks_are_at_most_the_block_size_and_only_the_first_drops_a_bom(
    tmp_path: Path,
) -> None:
    found, replaced = blocks_of(tmp_path, BOM + b"abc" + BOM + b"def" + b"g" * 7, 6)
    assert found == [b"abc", BOM + b"def", b"gggggg", b"g"]
    assert replaced == 0


def test_a_sequence_cut_by_a_block_end_and_left_unfinished_is_replaced(tmp_path: Path) -> None:
    """`\\xc3` starts a two-byte sequence; ASCII after it, or the end of the file, ends it."""
    found, replaced = blocks_of(tmp_path, b"ab\xc3cd", 3)
    assert b"".join(found) == b"ab" + REPLACED + b"cd"
    assert replaced == 1
    found, replaced = blocks_of(tmp_path, b"abc\xc3", 8)
    assert b"".join(found) == b"abc" + REPLACED
    assert replaced == 1


def test_replacement_characters_already_in_the_file_are_not_counted(tmp_path: Path) -> None:
    found, replaced = blocks_of(tmp_path, REPLACED + b"a\xffb" + REPLACED, 64)
    assert b"".join(found) == REPLACED + b"a" + REPLACED + b"b" + REPLACED
    assert replaced == 1


def test_a_corrupt_gzip_stream_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    whole = gzip.compress(("[" + event("a", 0) + "]").encode())
    path.write_bytes(whole[:-12] + b"\x00" * 12)
    with pytest.raises(TraceFormatError) as caught:
        list(EventStream(path))
    assert caught.value.path == str(path)
    assert caught.value.problem.startswith("gzip stream is truncated or corrupt (")


def test_a_streamed_duplicate_event_array_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = '{"traceEvents": [' + event("a", 0) + '], "traceEvents": [' + event("b", 1) + "]}"
    error = refused(path, text)
    assert error.path == str(path)
    assert error.where == "traceEvents"
    assert error.problem.startswith("duplicate top-level key 'traceEvents'")


def test_a_missing_file_cannot_be_read(tmp_path: Path) -> None:
    path = tmp_path / "missing.json"
    with pytest.raises(TraceFormatError) as caught:
        list(EventStream(path))
    assert caught.value.path == str(path)
    assert caught.value.problem == "cannot read: No such file or directory"


def test_a_too_deep_streamed_event_names_where_it_is(tmp_path: Path) -> None:
    deep = event("c", 2, args={"x": 0}).replace("0}", "[" * 1500 + "]" * 1500 + "}")
    path = tmp_path / "t.json"
    error = refused(
        path, "[" + ", ".join([event("a", 0), event("b", 1), deep]) + "]", chunk_bytes=1
    )
    assert error.path == str(path)
    assert error.where == "traceEvents[2] or after"
    assert error.problem == (
        "nested deeper than the 1000-odd levels JSON is decoded to "
        "(an event object or its args); flatten it or drop the event"
    )


def test_a_segment_of_exactly_the_limit_streams(tmp_path: Path) -> None:
    """The text after `[` is the pending segment before the end of the file is seen."""
    text = "[" + event("a", 0) + ", " + event("b", 1) + "]"
    _, found = chunks(tmp_path / "t.json", text, max_segment_bytes=len(text) - 1)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a", "b"]]


def test_many_small_segments_stream_under_a_small_limit(tmp_path: Path) -> None:
    text = "[" + ", ".join(event(f"e{index}", index) for index in range(20)) + "]"
    _, found = chunks(
        tmp_path / "t.json", text, chunk_bytes=1, block_bytes=64, max_segment_bytes=160
    )
    assert [item.name for chunk in found for item in chunk.events] == [f"e{i}" for i in range(20)]


def test_an_event_larger_than_the_limit_is_refused_naming_where(tmp_path: Path) -> None:
    big = event("c", 2, args={"s": "x" * 1000})
    path = tmp_path / "t.json"
    text = "[" + ", ".join([event("a", 0), event("b", 1), big, event("d", 3)]) + "]"
    error = refused(path, text, chunk_bytes=1, block_bytes=16, max_segment_bytes=300)
    assert error.path == str(path)
    assert error.where == "traceEvents[2] or after"
    assert error.problem == (
        "no event boundary ('},') within 300 bytes: an event or a run of whitespace this large "
        "cannot be streamed in bounded memory "
        "(irprof.readers.chrome.stream_text.MAX_SEGMENT_BYTES)"
    )


def test_a_bare_array_whose_events_hold_lists_starts_at_its_own_bracket(tmp_path: Path) -> None:
    events = [event("a", 0, args={"l": [1, [2]]}), event("b", 1)]
    _, found = chunks(tmp_path / "t.json", "[" + ", ".join(events) + "]", chunk_bytes=1)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a"], ["b"]]


@pytest.mark.parametrize("text", ["", " \n\t "])
def test_an_empty_file_gets_the_in_memory_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.json"
    error = refused(path, text)
    assert error.path == str(path)
    assert error.problem.startswith("not valid JSON: ")
    assert len(error.problem) > len("not valid JSON: ")


@pytest.mark.parametrize(("text", "block_bytes"), [("5", 1 << 20), ('"' + "x" * 100 + '"', 8)])
def test_a_file_that_is_no_object_or_array_is_refused_at_once(
    tmp_path: Path, text: str, block_bytes: int
) -> None:
    path = tmp_path / "t.json"
    error = refused(path, text, block_bytes=block_bytes)
    assert error.path == str(path)
    assert error.problem == "not valid JSON: expected an object or an array"


def test_a_boundary_at_the_very_end_of_the_text_is_not_taken(tmp_path: Path) -> None:
    """A `},` that ends the text read so far may be a trailing comma: the events before it wait
    for the end of the file (here an object cut after its second event)."""
    path = tmp_path / "t.json"
    error = refused(
        path, '{"traceEvents": [' + event("a", 0) + ", " + event("b", 1) + ", ", chunk_bytes=1
    )
    assert error.where == "traceEvents[1] or after"


def test_a_streamed_key_nested_before_the_top_level_one_is_passed_over(tmp_path: Path) -> None:
    text = '{"meta": {"traceEvents": [1]}, "traceEvents": [' + event("a", 0) + "]}"
    stream, found = chunks(tmp_path / "t.json", text)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a"]]
    assert stream.fields == {"meta": {"traceEvents": [1]}}


def test_a_small_object_without_events_gets_the_in_memory_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    error = refused(path, '{"x": 1}')
    assert error.path == str(path)
    assert error.problem == "JSON object is not a Chrome trace: no 'traceEvents' (keys: x)"


def test_the_events_key_must_start_within_the_head_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the limit the stream gives up; a file of exactly the limit is still read whole."""
    monkeypatch.setattr(stream_text, "MAX_HEAD_BYTES", 2 << 20)
    path = tmp_path / "t.json"
    long = '{"x": "' + "a" * (3 << 20) + '"}'
    error = refused(path, long, block_bytes=1 << 20)
    assert error.path == str(path)
    assert error.problem == (
        "no top-level 'traceEvents' array within the first 2 MB; "
        "streaming needs it near the start: convert with --in-memory"
    )
    exact = '{"x": "' + "a" * ((2 << 20) - 9) + '"}'
    assert len(exact) == 2 << 20
    error = refused(path, exact, block_bytes=1 << 20)
    assert error.problem == "JSON object is not a Chrome trace: no 'traceEvents' (keys: x)"


def test_a_key_split_by_a_block_end_is_found_in_the_next_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 16-byte blocks cut `"traceEvents"`; the search goes back over the end it had."""
    monkeypatch.setattr(stream_text, "MAX_HEAD_BYTES", 20)
    text = '{"a": 1, "traceEvents": [' + event("a", 0) + "]}"
    stream, found = chunks(tmp_path / "t.json", text, block_bytes=16)
    assert [[item.name for item in chunk.events] for chunk in found] == [["a"]]
    assert stream.fields == {"a": 1}
