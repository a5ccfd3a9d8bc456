"""Writing a trace's Parquet form row group by row group, for traces too big to hold at once.

The file is the one `save_parquet` writes (`load_parquet` and every command read it back): the
same columns, and the header (strings, tracks, flows, metadata, warnings) in the footer's
key-value metadata, added at `finish` because a streaming converter knows the flows and warnings
only once it has seen the whole trace. Each `write` becomes row groups of its own with a name
dictionary of just the names it uses, so no batch keeps the whole string table alive in a page.
Output goes to a handle from `fileio.atomic_write`: a failure never leaves a partial file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

import msgspec
import numpy as np
import numpy.typing as npt

from irprof.trace.io import KIND_LABELS, PARQUET_METADATA_KEY, events_table
from irprof.trace.model import Flows

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

# zstd as `save_parquet` uses; level 1 compresses Kineto args ~4x at several times level 3's speed
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 1
ENCODE_SLICE = 1 << 16  # flow ids encoded per slice when the header is written


def _events_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("ts_ns", pa.int64()),
            ("dur_ns", pa.int64()),
            ("track", pa.int32()),
            ("name", pa.dictionary(pa.int32(), pa.string())),
            ("kind", pa.dictionary(pa.int8(), pa.string())),
            ("args", pa.large_string()),
        ]
    )


def _json_integers(values: npt.NDArray[Any]) -> bytes:
    """`values` as comma-separated JSON integers, a slice at a time."""
    return b",".join(
        msgspec.json.encode(values[start : start + ENCODE_SLICE].tolist())[1:-1]
        for start in range(0, len(values), ENCODE_SLICE)
        if len(values[start : start + ENCODE_SLICE])
    )


class ParquetTraceWriter:
    """Appends event batches to a Parquet trace; `finish` adds the header and closes it."""

    def __init__(self, handle: IO[bytes], strings: Sequence[str]) -> None:
        import pyarrow.parquet as pq

        self.strings = list(strings)
        self.rows = 0
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
            handle,
            _events_schema(),
            compression=COMPRESSION,
            compression_level=COMPRESSION_LEVEL,
        )

    def write(
        self,
        ts_ns: npt.NDArray[np.int64],
        dur_ns: npt.NDArray[np.int64],
        track: npt.NDArray[np.int32],
        name: npt.NDArray[np.int64],
        kind: npt.NDArray[np.int8],
        args: pa.Array,
    ) -> None:
        """Append events: `name` are codes into the writer's `strings`, `args` a large-string
        array (null for no arguments), all in the trace's final row order."""
        if self._writer is None:
            raise ValueError("ParquetTraceWriter.write after finish")
        if len(ts_ns) == 0:
            return
        used, codes = np.unique(name, return_inverse=True)
        table = events_table(
            ts_ns,
            dur_ns,
            track,
            codes.astype(np.int32).reshape(-1),
            [self.strings[index] for index in used.tolist()],
            kind,
            args,
        )
        self._writer.write_table(table)
        self.rows += len(ts_ns)

    def finish(self, header: dict[str, Any], flows: Flows | None = None) -> None:
        """Store `header` (from `trace_header`, with this writer's strings) and close the file.
        `flows`, when given, replace the header's (encoded a slice at a time: millions of
        flows never become Python lists)."""
        if self._writer is None:
            raise ValueError("ParquetTraceWriter.finish called twice")
        if header.get("strings") != self.strings or header.get("kind_labels") != KIND_LABELS:
            raise ValueError("header strings or kind labels differ from the written columns")
        encoded = msgspec.json.encode({key: value for key, value in header.items()
                                       if flows is None or key != "flows"})  # fmt: skip
        if flows is not None:
            arrays = (("src", flows.src), ("dst", flows.dst), ("flow_id", flows.flow_id))
            lists = b",".join(
                b'"%s":[%s]' % (key.encode(), _json_integers(values)) for key, values in arrays
            )
            encoded = encoded[:-1] + b',"flows":{' + lists + b"}}"
        self._writer.add_key_value_metadata({PARQUET_METADATA_KEY: encoded})
        self._writer.close()
        self._writer = None

    def abort(self) -> None:
        """Close without a header (the caller's atomic write then discards the file)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
