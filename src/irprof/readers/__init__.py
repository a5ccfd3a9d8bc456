"""Trace readers: one module per format, registered by name, chosen by looking at the bytes.

`read_trace(path)` is the entry point. Gzip is undone first (any format may be gzipped), then the
first readers whose `sniff` accepts the head of the data parse it. Every failure is a
`TraceFormatError` naming the file and what is wrong; an empty trace is an error too, since every
later stage would only report nonsense on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from irprof.errors import TraceFormatError, UsageError
from irprof.fileio import MAX_DECOMPRESSED_BYTES, gunzip_if_gzip
from irprof.progress import stage
from irprof.readers.trace_bytes import TraceBytes
from irprof.registry import Registry
from irprof.trace.model import Trace

SNIFF_BYTES = 4096


# When `read_trace` is given a directory (a profiler log dir or a bundle's trace/), the file
# patterns tried in order; the richer format wins when a profiler wrote both.
DIRECTORY_PATTERNS = ("*.xplane.pb", "*.trace.json.gz", "*.pt.trace.json", "*.json.gz", "*.json")


class TraceReader(Protocol):
    """A trace format: recognises its bytes and turns them into a `Trace`."""

    @property
    def name(self) -> str:
        """Registry name of the format."""
        ...

    def sniff(self, head: bytes) -> bool:
        """Whether `head` (the first bytes, decompressed) looks like this format."""
        ...

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Parse the whole (decompressed) file; raise TraceFormatError on bad input. A reader
        may `data.release()` the bytes once it no longer reads them."""
        ...


# Registration order is the order `sniff` is tried in (irprof's own events.json before generic
# Chrome JSON, since both are JSON objects; ONNX Runtime's profile, a Chrome trace, before it).
_READERS: Registry[TraceReader] = Registry("trace format")
_READERS.register("xplane", "irprof.readers.xplane:READER")
_READERS.register("events", "irprof.readers.irprof_events:EVENTS_READER")
_READERS.register("parquet", "irprof.readers.irprof_events:PARQUET_READER")
_READERS.register("iree-profile", "irprof.readers.iree_profile:READER")
_READERS.register("onnxruntime", "irprof.readers.onnxruntime:READER")
_READERS.register("chrome", "irprof.readers.chrome.reader:READER")


def get_all_readers() -> Registry[TraceReader]:
    """Registry of every trace reader, imported lazily on first use."""
    return _READERS


def resolve_trace_file(path: Path) -> Path:
    """`path` itself, or the one trace file inside a directory (xplane preferred over JSON)."""
    if not path.exists():
        raise TraceFormatError(path, "no such file or directory")
    if not path.is_dir():
        return path
    for pattern in DIRECTORY_PATTERNS:
        found = sorted(candidate for candidate in path.rglob(pattern) if candidate.is_file())
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            listing = ", ".join(str(candidate.relative_to(path)) for candidate in found[:5])
            raise TraceFormatError(
                path, f"holds {len(found)} {pattern} files ({listing}); pass one of them"
            )
    raise TraceFormatError(path, "directory holds no trace file (*.xplane.pb or *.json[.gz])")


def detect_formats(path: Path, data: bytes) -> list[TraceReader]:
    """Every reader whose `sniff` accepts `data`, in registration order; an error when none does."""
    registry = get_all_readers()
    head = data[:SNIFF_BYTES]
    accepted = [registry.get(name) for name in registry.in_order()]
    accepted = [reader for reader in accepted if reader.sniff(head)]
    if accepted:
        return accepted
    raise TraceFormatError(
        path,
        "unknown trace format: not an XPlane protobuf (*.xplane.pb), Chrome trace JSON "
        "or an irprof events.json/events.parquet "
        f"(known formats: {', '.join(registry.names())}); pass --format to choose one",
    )


def detect_format(path: Path, data: bytes) -> TraceReader:
    """The first reader whose `sniff` accepts `data`, or a TraceFormatError listing the formats."""
    return detect_formats(path, data)[0]


def _read_with_fallback(
    source: Path, data: TraceBytes, readers: list[TraceReader]
) -> tuple[TraceReader, Trace]:
    """The first reader that parses `data`, and its Trace.

    A sniff looks at a few bytes, so two formats can accept the same head (a JSON file that
    starts with a newline begins with XSpace's first tag byte). When every candidate fails, the
    first one's error is raised, since it is the most specific match, with the others' problems
    appended so that nothing that was tried is hidden. Only the last candidate may release
    the bytes.
    """
    failures: list[tuple[str, TraceFormatError]] = []
    for reader in readers:
        data.releasable = reader is readers[-1]
        try:
            return reader, reader.read(source, data)
        except TraceFormatError as exc:
            failures.append((reader.name, exc))
    first_name, first = failures[0]
    if len(failures) == 1:
        raise first
    others = "; ".join(f"as {name}: {exc.problem}" for name, exc in failures[1:])
    raise TraceFormatError(
        source, f"{first.problem} (read as {first_name}; also tried {others})", where=first.where
    ) from first


def read_trace(
    path: str | Path, format: str | None = None, *, max_bytes: int = MAX_DECOMPRESSED_BYTES
) -> Trace:
    """Read any supported trace file (gzip or not; a directory holding one) into a `Trace`;
    gzip data inflating past `max_bytes` is refused (the streamed `trace convert` reads it)."""
    source = resolve_trace_file(Path(path))
    with stage(f"reading {source.name}"):
        # No local holds the bytes: `read_trace_bytes` hands them to the reader to free.
        return read_trace_bytes(source, _read_file(source), format, max_bytes=max_bytes)


def _read_file(source: Path) -> bytes:
    try:
        return source.read_bytes()
    except OSError as exc:
        raise TraceFormatError(source, f"cannot read: {exc.strerror or exc}") from exc


def read_trace_bytes(
    source: Path,
    raw: bytes,
    format: str | None = None,
    *,
    max_bytes: int = MAX_DECOMPRESSED_BYTES,
) -> Trace:
    """Parse `raw`, the bytes already read from the trace file `source` (gzip or not).

    Pass them without keeping a reference (`read_trace_bytes(path, path.read_bytes())`) and the
    reader frees them as soon as it no longer needs them.
    """
    data = TraceBytes(gunzip_if_gzip(raw, source, max_bytes))
    del raw  # from here on `data` is the only reference (to the file's bytes when not gzip)
    if not data.data or data.data.isspace():
        raise TraceFormatError(source, "file is empty")
    if format is None:
        readers = detect_formats(source, data.data)
    else:
        try:
            readers = [get_all_readers().get(format)]
        except UsageError as exc:
            raise UsageError(f"{source}: {exc}") from exc
    reader, trace = _read_with_fallback(source, data, readers)
    if len(trace) == 0:
        why = f" ({'; '.join(trace.warnings)})" if trace.warnings else ""
        raise TraceFormatError(source, f"{reader.name} trace contains no events{why}")
    return trace


__all__ = [
    "TraceBytes",
    "TraceReader",
    "detect_format",
    "detect_formats",
    "get_all_readers",
    "read_trace",
    "read_trace_bytes",
    "resolve_trace_file",
]
