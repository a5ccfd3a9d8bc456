"""Typed msgspec decoding of Chrome trace JSON, one chunk of events at a time; exact times.

Every decoded field is a Python object, so a typed decode of millions of events is limited by
memory and by walking those objects. The event array is therefore split into chunks of about
`CHUNK_BYTES` at candidate boundaries (`},`), each decoded into `EventFields` structs (unknown keys
skipped without building anything, `args` kept as `msgspec.Raw`) and turned into columns before
the next: one scan of the text, structs walked while in cache, never all alive at once. A chunk
that decodes proves its boundaries (see `EventText._decode_chunk`). For the object form, the
array is found by its `traceEvents` key instead of a whole-file parse (`_locate_by_key`), checked
as described there. On the benchmark's 2M-event Kineto trace (whole `read_trace`, best runs on
the shared 2-core machine): 7.2 s with the former four whole-file passes, 3.8-4.5 s this way;
peak RSS 1.24 -> 1.27 GB, 0.46 GB of it the file itself.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.errors import TraceFormatError
from irprof.readers.chrome.exact import float_ns, int_ns

I64 = npt.NDArray[np.int64]

WHITESPACE = b" \t\r\n\xef\xbb\xbf"
_LEADING_WHITESPACE = re.compile(b"[" + re.escape(WHITESPACE) + b"]*")


def first_text_byte(data: bytes | memoryview) -> bytes:
    """The first byte after leading whitespace and a BOM (b"" when none), found without the
    copy of a whole file that `data.lstrip()` makes."""
    match = _LEADING_WHITESPACE.match(data)
    start = match.end() if match else 0
    return bytes(data[start : start + 1])


_ZERO = msgspec.Raw(b"0")


class EventFields(msgspec.Struct, gc=False):
    """First pass: every field but the arguments; `ts` and `dur` as their decimal text, turned
    into exact integer ns by `chrome_exact` (no float step, no Python object per value).
    Fields in Kineto's key order: msgspec looks for the next key at the next field first."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = _ZERO
    dur: msgspec.Raw = _ZERO
    args: msgspec.Raw = msgspec.Raw()
    id: int | str | None = None
    bp: str = ""
    id2: msgspec.Raw = msgspec.Raw()  # async events' scoped id ({"local": ...} or "global")


class IntEventFields(msgspec.Struct, gc=False):
    """`EventFields` with `ts`/`dur` as JSON integers (what Kineto writes, epoch microseconds):
    an int is exact at any size, so its ns are `value * 1000` with no text step."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: int = 0
    dur: int = 0
    args: msgspec.Raw = msgspec.Raw()
    id: int | str | None = None
    bp: str = ""
    id2: msgspec.Raw = msgspec.Raw()  # async events' scoped id ({"local": ...} or "global")


class NumberEventFields(msgspec.Struct, gc=False):
    """`EventFields` with `ts`/`dur` as numbers, for relative times with fractions: used only
    where `chrome_exact.float_ns` proves the float gives the same ns as the text."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: int | float = 0
    dur: int | float = 0
    args: msgspec.Raw = msgspec.Raw()
    id: int | str | None = None
    bp: str = ""
    id2: msgspec.Raw = msgspec.Raw()  # async events' scoped id ({"local": ...} or "global")


AnyEventFields = EventFields | IntEventFields | NumberEventFields

decode_top = msgspec.json.Decoder(
    dict[str, msgspec.Raw] | list[msgspec.Raw] | str | float | bool | None
)
decode_fields = msgspec.json.Decoder(list[EventFields])
# The chunk decoders from the fastest to the most general (see `EventText.timed_chunks`).
DECODE_LEVELS: tuple[msgspec.json.Decoder[Any], ...] = (
    msgspec.json.Decoder(list[IntEventFields]),
    msgspec.json.Decoder(list[NumberEventFields]),
    decode_fields,
)
TEXT_LEVEL = len(DECODE_LEVELS) - 1
decode_any = msgspec.json.Decoder()

T = TypeVar("T")

# Events decoded per chunk: small enough that the chunk's structs stay in cache while their
# fields become columns (walking millions of structs after one big decode is memory-bound).
CHUNK_BYTES = 1 << 18
# msgspec decodes nested JSON recursively and raises RecursionError past about this depth.
MAX_JSON_DEPTH = 1000
# A possible boundary between two array elements: the end of an object and the next comma.
TRACE_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
EVENT_END = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*")


@dataclass(frozen=True)
class EventText:
    """Where the event array is: its JSON text and the top-level fields beside it."""

    path: Path
    events: bytes | msgspec.Raw | memoryview  # a view into the input, not a copy
    fields: dict[str, Any]
    # True when the array's span was found without parsing the whole file (`locate_events`):
    # an array that then fails to decode raises `SpanMismatch`, never a format error.
    speculative: bool = False

    def event_fields(self) -> Iterator[list[EventFields]]:
        """First pass, in chunks of consecutive events (see `_decode_chunk` for how it splits)."""
        view = memoryview(self.events)
        body = _array_body(view)
        if body is None:
            yield self._decode(decode_fields)  # not an array: the whole decode says why
            return
        start, stop = body
        index = 0
        while start < stop:
            try:
                decoded, next_start, _ = self._decode_chunk(view, start, stop, TEXT_LEVEL)
            except RecursionError:
                raise self._too_deep(view, start, stop, index) from None
            index += len(decoded.events)
            start = next_start
            yield cast(list[EventFields], decoded.events)  # the text level's struct

    def timed_chunks(self) -> Iterator[tuple[list[AnyEventFields], I64 | None, I64 | None]]:
        """Like `event_fields`, with each chunk's exact `ts` and `dur` ns when they come from
        numbers (None: the events hold the values' text, for `NanosecondColumn.add`).

        A chunk is decoded with `IntEventFields` while the trace's times are integers, else
        with `NumberEventFields` while every float is proven exact (`float_ns`), else as text;
        a chunk that fails a level is decoded again at the next, which then stays the level
        for the rest of the file (a trace keeps one way of writing its times).

        Nothing here refers to a chunk once the next is being built: a consumer that drops its
        `events` (and with them, through their `Raw` args, the chunk's text) before asking for
        the next has one chunk alive at a time, so that the next chunk's text and structs reuse
        the memory just freed instead of growing the heap by a chunk (fewer page faults).
        """
        view = memoryview(self.events)
        body = _array_body(view)
        if body is None:
            yield [*self._decode(decode_fields)], None, None  # not an array: this says why
            return
        start, stop = body
        index, level = 0, 0
        while start < stop:
            try:
                decoded, next_start, chunk = self._decode_chunk(view, start, stop, level)
                while True:
                    level = decoded.level
                    times = _chunk_ns(decoded.events, level)
                    if times is not None:
                        break
                    level += 1  # not provably exact as numbers: decode that chunk again
                    decoded = _Decoded(DECODE_LEVELS[level].decode(chunk), level)
            except RecursionError:
                raise self._too_deep(view, start, stop, index) from None
            index += len(decoded.events)
            start = next_start
            events = decoded.events
            del decoded, chunk  # the consumer drops `events`, and so the chunk, before the next
            yield events, *times
            del events

    def _too_deep(self, view: memoryview, start: int, stop: int, index: int) -> TraceFormatError:
        """The error naming the event nested too deeply for the decoder (found one by one)."""
        while start < stop:
            cursor = start
            while True:
                found = EVENT_END.search(view, cursor, stop)
                end, resume = (stop, stop) if found is None else (found.start() + 1, found.end())
                try:
                    decode_fields.decode(b"".join((b"[", view[start:end], b"]")))
                    break
                except RecursionError:
                    return TraceFormatError(
                        self.path,
                        f"nested deeper than the {MAX_JSON_DEPTH}-odd levels JSON is decoded to "
                        "(an event object or its args); flatten it or drop the event",
                        where=f"traceEvents[{index}]",
                    )
                except msgspec.DecodeError:
                    if end == stop:
                        break
                    cursor = resume
            start, index = resume, index + 1
        return TraceFormatError(
            self.path, f"JSON nested deeper than {MAX_JSON_DEPTH}-odd levels", where="traceEvents"
        )

    def _decode_chunk(
        self, view: memoryview, start: int, stop: int, level: int
    ) -> tuple[_Decoded, int, bytes]:
        """Events from `start` (an element boundary) to a boundary found near CHUNK_BYTES on.

        A candidate boundary is a `}` followed by a `,`. One inside a string or a nested object
        always makes the chunk invalid JSON (the string or object is left open before the `]`
        we add), so a chunk that decodes ends at a true boundary; a failed one is retried up to
        a later candidate, the distance doubling, until the array's end, where a failure is the
        document's own and the whole decode reports it. A value the decoder of `level` does not
        take (a float `ts` for `IntEventFields`) moves that chunk on to the next level.
        Returns the events (and the level that decoded them), where the next chunk starts,
        and the chunk's text.
        """
        reach = CHUNK_BYTES
        while True:
            found = EVENT_END.search(view, start + reach, stop) if start + reach < stop else None
            if found is None or found.end() >= stop:  # none, or a trailing comma: keep it in
                end, resume = stop, stop
            else:
                end, resume = found.start() + 1, found.end()
            chunk = b"".join((b"[", view[start:end], b"]"))
            try:
                return _Decoded(_decode_at(chunk, level), level), resume, chunk
            except _LevelRefused as refused:
                return _Decoded(refused.events, refused.level), resume, chunk
            except msgspec.DecodeError:
                if end == stop:
                    if self.speculative:
                        raise SpanMismatch(self.path) from None
                    self._decode(decode_fields)
                    raise TraceFormatError(self.path, "not a Chrome trace event list") from None
            reach = max(2 * reach, end - start + 1)

    def _decode(self, decoder: msgspec.json.Decoder[list[T]]) -> list[T]:
        try:
            return decoder.decode(self.events)
        except msgspec.ValidationError as exc:
            raise validation_error(self.path, exc) from exc
        except msgspec.DecodeError as exc:
            raise TraceFormatError(self.path, f"not valid JSON: {exc}") from exc


@dataclass(frozen=True)
class _Decoded:
    events: list[AnyEventFields]
    level: int


class _LevelRefused(Exception):
    """A chunk decoded at a later level than asked (a value the earlier ones do not take)."""

    def __init__(self, events: list[AnyEventFields], level: int) -> None:
        super().__init__(level)
        self.events, self.level = events, level


def _decode_at(chunk: bytes, level: int) -> list[AnyEventFields]:
    """`chunk` decoded at `level`, or `_LevelRefused` with it decoded at a later one. A
    `ValidationError` (the wrong type) comes from a chunk that is valid JSON, so its
    boundaries hold: only a syntax error reaches the caller as a `DecodeError`."""
    first = level
    while True:
        try:
            events: list[AnyEventFields] = DECODE_LEVELS[level].decode(chunk)
        except msgspec.ValidationError:
            if level == TEXT_LEVEL:
                raise
            level += 1
            continue
        if level == first:
            return events
        raise _LevelRefused(events, level)


def _chunk_ns(events: list[AnyEventFields], level: int) -> tuple[I64 | None, I64 | None] | None:
    """The chunk's exact (ts, dur) ns from numbers (None, None at the text level), or None
    when the numbers do not prove them (`int_ns`, `float_ns`)."""
    if level == TEXT_LEVEL:
        return None, None
    convert = int_ns if level == 0 else float_ns
    ts = convert(map(_ts, events), len(events))
    if ts is None:
        return None
    dur = convert(map(_dur, events), len(events))
    return None if dur is None else (ts, dur)


_ts, _dur = attrgetter("ts"), attrgetter("dur")


_VALIDATION_PLACE = re.compile(r"^(?P<problem>.*) - at `\$\[(?P<index>\d+)\]\.?(?P<field>[^`]*)`$")


def validation_error(
    path: Path, exc: msgspec.ValidationError, first_index: int = 0
) -> TraceFormatError:
    """msgspec's "Expected `float`, got `str` - at `$[5].ts`" as the event index and field
    (`first_index`: the index in `traceEvents` of the decoded list's first event)."""
    found = _VALIDATION_PLACE.match(str(exc))
    if found is None:
        return TraceFormatError(path, f"not a Chrome trace event list: {exc}")
    field = found["field"]
    index = int(found["index"]) + first_index
    where = f"traceEvents[{index}]" + (f" field {field!r}" if field else "")
    return TraceFormatError(
        path, f"{found['problem']} (see the Chrome trace event format)", where=where
    )


class SpanMismatch(Exception):
    """A speculatively located event array did not decode: locate it exactly and read again."""


def locate_events(path: Path, data: bytes, *, exact: bool = False) -> EventText:
    """The event array of an object-form or bare-array-form trace.

    Unless `exact`, the array is first looked for without parsing the file (`_locate_by_key`);
    otherwise, or when that fails, a first decode of the whole document finds and validates it.
    """
    if first_text_byte(data) == b"[":
        return _locate_array(path, data)
    guessed = None if exact else _locate_by_key(path, data)
    if guessed is not None:
        return guessed
    try:
        top = decode_top.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(path, f"not valid JSON: {exc}") from exc
    if not isinstance(top, dict) or "traceEvents" not in top:
        keys = ", ".join(sorted(top)[:8]) if isinstance(top, dict) else ""
        raise TraceFormatError(
            path, f"JSON object is not a Chrome trace: no 'traceEvents' (keys: {keys or 'none'})"
        )
    events = top.pop("traceEvents")
    _refuse_duplicate_key(path, data, events)
    fields = {key: decode_any.decode(value) for key, value in top.items()}
    return EventText(path, events, fields)


def duplicate_events_error(path: Path) -> TraceFormatError:
    """The one error for an object with two top-level `traceEvents` keys, streamed or not."""
    return TraceFormatError(
        path,
        "duplicate top-level key 'traceEvents': a trace has one event array; "
        "keep one of them (JSON parsers disagree on which one counts)",
        where="traceEvents",
    )


def _refuse_duplicate_key(path: Path, data: bytes, kept: msgspec.Raw) -> None:
    """Refuse a second top-level `traceEvents`: the decode kept the last one (at `kept`, a
    view into `data`); the first top-level key's array must be that same one."""
    if data.count(b'"traceEvents"') < 2:
        return
    kept_at = (
        np.frombuffer(kept, dtype=np.uint8).ctypes.data
        - np.frombuffer(data, dtype=np.uint8).ctypes.data
    )
    marker = b'"irprof-events-' + uuid.uuid4().hex.encode() + b'"'
    for found in TRACE_EVENTS_KEY.finditer(data):
        start = found.end() - 1
        try:
            top = decode_top.decode(data[:start] + marker + b"}")
        except msgspec.DecodeError:
            continue  # the key is nested in an earlier value, not the object's own
        if isinstance(top, dict) and bytes(top.get("traceEvents", b"")) == marker:
            if start != kept_at:
                raise duplicate_events_error(path)
            return


def _locate_by_key(path: Path, data: bytes) -> EventText | None:
    """The `traceEvents` array found by its key and the last `]`, checked without a full parse.

    The text before the array and after that `]` is decoded with a unique marker put in the
    array's place; the guess stands only when the marker is the document's top-level
    `traceEvents`. The array itself is then checked by decoding it (a failure raises
    `SpanMismatch`, and the reader starts again from an exact parse), so a wrong guess costs
    time, never a wrong trace. Saves a whole-file scan: Kineto puts only small fields after it.
    """
    key = TRACE_EVENTS_KEY.search(data)
    stop = data.rfind(b"]")
    if key is None or stop < key.end():
        return None
    start = key.end() - 1
    marker = b'"irprof-events-' + uuid.uuid4().hex.encode() + b'"'
    try:
        top = decode_top.decode(data[:start] + marker + data[stop + 1 :])
    except msgspec.DecodeError:
        return None
    if not isinstance(top, dict) or bytes(top.pop("traceEvents", b"")) != marker:
        return None
    fields = {key: decode_any.decode(value) for key, value in top.items()}
    return EventText(path, memoryview(data)[start : stop + 1], fields, speculative=True)


def _locate_array(path: Path, data: bytes) -> EventText:
    """The bare-array form may legally lack its closing bracket (a trace written as it streamed)."""
    stop = len(data)
    while stop and data[stop - 1] in WHITESPACE:
        stop -= 1
    if data[stop - 1 : stop] == b"]":
        return EventText(path, data, {})
    return EventText(path, data[:stop].rstrip(b",") + b"]", {})


def _array_body(view: memoryview) -> tuple[int, int] | None:
    """Byte span between the brackets of a JSON array, or None when the text is not one."""
    start, stop = 0, len(view)
    while start < stop and view[start] in WHITESPACE:
        start += 1
    while stop > start and view[stop - 1] in WHITESPACE:
        stop -= 1
    if stop - start < 2 or view[start] != ord("[") or view[stop - 1] != ord("]"):
        return None
    body_start = start + 1
    while body_start < stop - 1 and view[body_start] in WHITESPACE:
        body_start += 1
    return body_start, stop - 1
