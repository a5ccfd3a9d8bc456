"""Trace readers: one module per format, registered by name, chosen by looking at the bytes.

`read_trace(path)` is the entry point. Gzip is undone first (any format may be gzipped), then the
first readers whose `sniff` accepts the head of the data parse it. Every failure is a
`TraceFormatError` naming the file and what is wrong; an empty trace is an error too, since every
later stage would only report nonsense on it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from irprof.errors import TraceFormatError, UsageError
from irprof.fileio import read_bytes_maybe_gzip
from irprof.registry import Registry
from irprof.trace.model import Trace

SNIFF_BYTES = 4096

# Name -> (module, attribute) of the reader object; the order is the order `sniff` is tried in
# (irprof's own events.json before generic Chrome JSON, since both are JSON objects).
READER_MODULES = {
    "xplane": ("irprof.readers.xplane", "READER"),
    "events": ("irprof.readers.irprof_events", "EVENTS_READER"),
    "parquet": ("irprof.readers.irprof_events", "PARQUET_READER"),
    "chrome": ("irprof.readers.chrome", "READER"),
}

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

    def read(self, path: Path, data: bytes) -> Trace:
        """Parse the whole (decompressed) file; raise TraceFormatError on bad input."""
        ...


def _loader(module_name: str, attribute: str) -> Callable[[], TraceReader]:
    def load() -> TraceReader:
        reader: TraceReader = getattr(importlib.import_module(module_name), attribute)
        return reader

    return load


def get_all_readers() -> Registry[TraceReader]:
    """Registry of every trace reader, imported lazily on first use."""
    registry: Registry[TraceReader] = Registry("trace format")
    for name, (module_name, attribute) in READER_MODULES.items():
        registry.register(name, _loader(module_name, attribute))
    return registry


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


def detect_format(path: Path, data: bytes) -> TraceReader:
    """The reader whose `sniff` accepts `data`, or a TraceFormatError listing what was tried."""
    registry = get_all_readers()
    head = data[:SNIFF_BYTES]
    for name in READER_MODULES:
        reader = registry.get(name)
        if reader.sniff(head):
            return reader
    raise TraceFormatError(
        path,
        "unknown trace format: not an XPlane protobuf (*.xplane.pb), Chrome trace JSON "
        "or an irprof events.json/events.parquet "
        f"(known formats: {', '.join(registry.names())})",
    )


def read_trace(path: str | Path, format: str | None = None) -> Trace:
    """Read any supported trace file (gzip or not; a directory holding one) into a `Trace`."""
    source = resolve_trace_file(Path(path))
    try:
        data = read_bytes_maybe_gzip(source)
    except OSError as exc:
        raise TraceFormatError(source, f"cannot read: {exc.strerror or exc}") from exc
    if not data or data.isspace():
        raise TraceFormatError(source, "file is empty")
    if format is None:
        reader = detect_format(source, data)
    else:
        try:
            reader = get_all_readers().get(format)
        except UsageError as exc:
            raise UsageError(f"{source}: {exc}") from exc
    trace = reader.read(source, data)
    if len(trace) == 0:
        raise TraceFormatError(source, f"{reader.name} trace contains no events")
    return trace


__all__ = [
    "TraceReader",
    "detect_format",
    "get_all_readers",
    "read_trace",
    "resolve_trace_file",
]
