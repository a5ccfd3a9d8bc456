"""The event array of a Chrome trace file, decoded chunk by chunk as the file streams in.

`chrome_decode` finds chunk boundaries in a file held in memory; this does the same over a
window of the file (gzip or not) that slides forward block by block, so that memory holds one
block and one chunk's structs whatever the file's size. The rules are the in-memory reader's:

- a BOM is dropped and invalid UTF-8 replaced by U+FFFD (counted in `notes`);
- the object form's `traceEvents` array is found by its key; the text before it is checked by
  decoding it with a marker in the array's place (`{..."traceEvents": "<marker>"}`), so a key
  nested in another object or a string is never taken for it;
- a chunk ends at a candidate `},` and stands only if it decodes (see
  `EventText._decode_chunk`); a type error names the event's index in the whole array;
- the array's end is only known at the end of the file: the last `]` whose suffix closes the
  top-level object (decoded with the marker again) and whose body decodes. The fields of the
  whole object (Kineto writes `baseTimeNanoseconds` after the array) are in `fields` then.
"""

from __future__ import annotations

import codecs
import gzip
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgspec

from irprof.errors import TraceFormatError
from irprof.fileio import GZIP_MAGIC, INFLATE_ERRORS
from irprof.readers.chrome.checks import REPLACEMENT
from irprof.readers.chrome.decode import (
    CHUNK_BYTES,
    EVENT_END,
    MAX_JSON_DEPTH,
    TRACE_EVENTS_KEY,
    WHITESPACE,
    EventFields,
    EventText,
    decode_any,
    decode_fields,
    decode_top,
    duplicate_events_error,
    first_text_byte,
    locate_events,
    validation_error,
)

_GzipFile: type[gzip.GzipFile]
try:  # ISA-L's gzip reader: the same format, about twice zlib's inflate speed
    from isal.igzip import IGzipFile as _GzipFile
except ImportError:  # pragma: no cover - the standard library's then
    _GzipFile = gzip.GzipFile
_READ_ERRORS: tuple[type[Exception], ...] = (OSError, *INFLATE_ERRORS)

BLOCK_BYTES = 8 << 20  # read (and decompress) the file this much at a time
MAX_HEAD_BYTES = 64 << 20  # the `traceEvents` key must start within this much of the file
# Most text held between two event boundaries (`},`): one event, or a run of whitespace, this
# large is refused, so that memory stays one segment's worth whatever the input.
MAX_SEGMENT_BYTES = 256 << 20
_REPLACEMENT_BYTES = REPLACEMENT.encode("utf-8")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class EventChunk:
    """Consecutive events of the array: the decoded structs and their JSON text."""

    events: list[EventFields]
    text: bytes  # `[` + the events' text + `]`: its size counts toward a segment
    first_index: int  # index in `traceEvents` of the first event


class _Blocks:
    """The file's bytes block by block: gunzipped, BOM dropped, invalid UTF-8 replaced."""

    def __init__(self, path: Path, handle: IO[bytes], block_bytes: int) -> None:
        self.path = path
        self.block_bytes = block_bytes
        magic = handle.read(2)
        handle.seek(0)
        self.handle: IO[bytes] | gzip.GzipFile = (
            _GzipFile(fileobj=handle, mode="rb") if magic == GZIP_MAGIC else handle
        )
        self.first = True
        self.decoder: codecs.IncrementalDecoder | None = None
        self.replaced = 0

    def read(self) -> bytes:
        """The next block (b"" at the end of the file)."""
        try:
            block = self.handle.read(self.block_bytes)
        except _READ_ERRORS as exc:
            raise TraceFormatError(
                self.path, f"gzip stream is truncated or corrupt ({exc})"
            ) from exc
        if self.first:
            self.first = False
            block = block.removeprefix(_BOM)
        if self.decoder is None and block.isascii():
            return block
        if self.decoder is None:  # from the first non-ASCII block on, through one decoder
            self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        repaired = self.decoder.decode(block, final=not block).encode("utf-8")
        self.replaced += repaired.count(_REPLACEMENT_BYTES) - block.count(_REPLACEMENT_BYTES)
        return repaired


class EventStream:
    """Iterate over `EventChunk`s of a Chrome trace file; `fields` and `notes` after the end."""

    def __init__(
        self,
        path: Path,
        *,
        chunk_bytes: int = CHUNK_BYTES,
        block_bytes: int = BLOCK_BYTES,
        max_segment_bytes: int = MAX_SEGMENT_BYTES,
    ) -> None:
        self.path = path
        self.chunk_bytes = chunk_bytes
        self.block_bytes = block_bytes
        self.max_segment_bytes = max_segment_bytes
        self.fields: dict[str, Any] = {}
        self.notes: list[str] = []
        self._marker = b'"irprof-events-' + uuid.uuid4().hex.encode() + b'"'
        self._buffer = b""
        self._pos = 0
        self._eof = False
        self._index = 0
        self._prefix: bytes | None = None  # the object form's text before the array's `[`

    def __iter__(self) -> Iterator[EventChunk]:
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise TraceFormatError(self.path, f"cannot read: {exc.strerror or exc}") from exc
        with handle:
            blocks = _Blocks(self.path, handle, self.block_bytes)
            try:
                yield from self._chunks(blocks)
            except RecursionError:
                raise TraceFormatError(
                    self.path,
                    f"nested deeper than the {MAX_JSON_DEPTH}-odd levels JSON is decoded to "
                    "(an event object or its args); flatten it or drop the event",
                    where=f"traceEvents[{self._index}] or after",
                ) from None
            if blocks.replaced:
                self.notes.append(f"{blocks.replaced} invalid UTF-8 sequence(s) replaced by U+FFFD")

    def _fill(self, blocks: _Blocks) -> None:
        if len(self._buffer) - self._pos > self.max_segment_bytes:
            raise TraceFormatError(
                self.path,
                f"no event boundary ('}},') within {self.max_segment_bytes:,} bytes: an event "
                "or a run of whitespace this large cannot be streamed in bounded memory "
                "(irprof.readers.chrome.stream_text.MAX_SEGMENT_BYTES)",
                where=f"traceEvents[{self._index}] or after",
            )
        block = blocks.read()
        if not block:
            self._eof = True
            return
        self._buffer = self._buffer[self._pos :] + block
        self._pos = 0

    def _chunks(self, blocks: _Blocks) -> Iterator[EventChunk]:
        self._locate(blocks)
        reach = self.chunk_bytes
        while True:
            buffer, start = self._buffer, self._pos
            if start + reach >= len(buffer) and not self._eof:
                self._fill(blocks)
                continue
            found = EVENT_END.search(buffer, start + reach) if start + reach < len(buffer) else None
            if found is None or found.end() >= len(buffer):
                if not self._eof:
                    self._fill(blocks)
                    continue
                yield from self._finish(buffer[start:])
                return
            end = found.start() + 1
            events = self._decode(b"".join((b"[", buffer[start:end], b"]")))
            if events is None:  # a false boundary: retry up to a later one
                reach = max(2 * reach, end - start + 1)
                continue
            yield EventChunk(events, b"".join((b"[", buffer[start:end], b"]")), self._index)
            self._index += len(events)
            self._pos = found.end()
            reach = self.chunk_bytes

    def _decode(self, text: bytes) -> list[EventFields] | None:
        """The events of `text`, None when it is not valid JSON; a type error is raised."""
        try:
            return decode_fields.decode(text)
        except msgspec.ValidationError as exc:
            raise validation_error(self.path, exc, self._index) from exc
        except msgspec.DecodeError:
            return None

    def _locate(self, blocks: _Blocks) -> None:
        """Move to the first event: after `[` of a bare array, or of the object's array."""
        while True:
            first = first_text_byte(self._buffer)
            if first or self._eof:
                break
            self._fill(blocks)
        if first == b"[":
            self._pos = self._buffer.index(b"[") + 1
            return
        if first != b"{":
            if self._eof:  # the whole file: the in-memory reader's error says what it is
                self._whole(locate_events(self.path, self._buffer, exact=True))
                return
            raise TraceFormatError(self.path, "not valid JSON: expected an object or an array")
        searched = 0
        while True:
            found = TRACE_EVENTS_KEY.search(self._buffer, searched)
            if found is not None:
                prefix = self._buffer[: found.end() - 1]
                if self._top_fields(prefix, b"}") is not None:
                    self._prefix, self._pos = prefix, found.end()
                    return
                searched = found.start() + 1
                continue
            if self._eof:
                self._whole(locate_events(self.path, self._buffer, exact=True))
                return
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise TraceFormatError(
                    self.path,
                    f"no top-level 'traceEvents' array within the first {MAX_HEAD_BYTES >> 20} MB;"
                    " streaming needs it near the start: convert with --in-memory",
                )
            searched = max(0, len(self._buffer) - 64)
            self._fill(blocks)

    def _whole(self, located: EventText) -> None:
        """The whole (small) file is read and the exact parse located its array: go on as with
        a bare array of that text, the object's fields already known."""
        self.fields = dict(located.fields)
        self._buffer = bytes(located.events).strip(WHITESPACE)
        self._pos, self._prefix = 1, None

    def _top_fields(self, prefix: bytes, suffix: bytes) -> dict[str, Any] | None:
        """The object's other fields when `prefix` + array + `suffix` is an object whose
        top-level `traceEvents` is that array; None otherwise."""
        try:
            top = decode_top.decode(prefix + self._marker + suffix)
        except msgspec.DecodeError:
            return None
        if not isinstance(top, dict) or "traceEvents" not in top:
            return None
        if bytes(top.pop("traceEvents")) != self._marker:
            # A valid object whose last top-level `traceEvents` is not the array streamed:
            # `suffix` holds a second one.
            raise duplicate_events_error(self.path)
        return {key: decode_any.decode(value) for key, value in top.items()}

    def _finish(self, rest: bytes) -> Iterator[EventChunk]:
        """The last events: `rest` holds them, the array's `]` and the object's end."""
        if self._prefix is None:  # bare array; its closing bracket may be missing
            stripped = rest.rstrip(WHITESPACE)
            body = stripped[:-1] if stripped.endswith(b"]") else stripped.rstrip(b",")
            yield from self._last(body)
            return
        close = rest.rfind(b"]")
        while close >= 0:
            fields = self._top_fields(self._prefix, rest[close + 1 :])
            if fields is not None:
                text = b"".join((b"[", rest[:close], b"]"))
                if not text[1:-1].strip(WHITESPACE):
                    self.fields = fields
                    return
                events = self._decode(text)
                if events is not None:
                    self.fields = fields
                    yield EventChunk(events, text, self._index)
                    self._index += len(events)
                    return
            close = rest.rfind(b"]", 0, close)
        raise TraceFormatError(
            self.path,
            "not valid JSON: the event array or the object around it is malformed",
            where=f"traceEvents[{self._index}] or after",
        )

    def _last(self, body: bytes) -> Iterator[EventChunk]:
        if not body.strip(WHITESPACE):
            return
        text = b"".join((b"[", body, b"]"))
        events = self._decode(text)
        if events is None:
            raise TraceFormatError(
                self.path, "not a Chrome trace event list", where=f"traceEvents[{self._index}]"
            )
        yield EventChunk(events, text, self._index)
        self._index += len(events)
