"""The bytes of one trace file, handed to the reader that parses them so it can free them early.

A reader needs a file's text only until it has built its columns from it; a large file's text
kept alive beside those columns is most of the read's peak memory. CPython frees the bytes the
moment nothing refers to them, which a reader cannot arrange while its callers still hold their
own references. So the callers hand the bytes over in a `TraceBytes` and keep none themselves,
and the reader calls `release()` once it no longer reads them.
"""

from __future__ import annotations


class TraceBytes:
    """A trace file's (decompressed) bytes, owned by the reader they are handed to.

    `release` frees them only when the box is `releasable`: a reader tried before another (two
    formats' sniffs can accept the same head) must leave them for the next one.
    """

    __slots__ = ("_data", "releasable")

    def __init__(self, data: bytes, *, releasable: bool = True) -> None:
        self._data: bytes | None = data
        self.releasable = releasable

    @property
    def data(self) -> bytes:
        """The bytes; reading them after a `release` that freed them is a programming error."""
        if self._data is None:
            raise RuntimeError("trace bytes read after the reader released them")
        return self._data

    def release(self) -> None:
        """Drop this box's reference to the bytes, if it is releasable."""
        if self.releasable:
            self._data = None


def handed_over(data: bytes | TraceBytes) -> TraceBytes:
    """`data` as a `TraceBytes` (plain bytes from a caller that keeps its own reference: the box
    then frees nothing early, which is harmless)."""
    return data if isinstance(data, TraceBytes) else TraceBytes(data)
