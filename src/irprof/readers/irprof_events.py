"""irprof's own saved forms read back as traces: `events.json` and `events.parquet`."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from irprof.errors import TraceFormatError
from irprof.readers.trace_bytes import TraceBytes
from irprof.trace.io import EVENTS_FORMAT, load_events_json, load_parquet
from irprof.trace.model import Trace

PARQUET_MAGIC = b"PAR1"
# The writer puts the format tag first; any JSON whitespace around it is still the format.
_EVENTS_HEAD = re.compile(rb'\s*\{\s*"format"\s*:\s*"' + re.escape(EVENTS_FORMAT.encode()) + rb'"')


@dataclass(frozen=True)
class EventsJsonReader:
    """`irprof trace convert -o events.json` output."""

    name: str = "events"

    def sniff(self, head: bytes) -> bool:
        """The format tag comes first (the writer puts it there)."""
        return _EVENTS_HEAD.match(head) is not None

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Load the unified JSON (the file is re-read; gzip is handled there too)."""
        return load_events_json(path)


@dataclass(frozen=True)
class ParquetReader:
    """`irprof trace convert -o events.parquet` output."""

    name: str = "parquet"

    def sniff(self, head: bytes) -> bool:
        """Parquet files start with the PAR1 magic."""
        return head.startswith(PARQUET_MAGIC)

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Load the Parquet file; a gzipped one is unpacked to a temporary file first."""
        with path.open("rb") as handle:
            if handle.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC:
                return load_parquet(path)
        with tempfile.NamedTemporaryFile() as unpacked:
            unpacked.write(data.data)
            unpacked.flush()
            try:
                return load_parquet(unpacked.name)
            except TraceFormatError as exc:  # named after the user's file, not the copy
                raise TraceFormatError(path, f"{exc.problem} (gzipped)", where=exc.where) from exc


EVENTS_READER = EventsJsonReader()
PARQUET_READER = ParquetReader()
