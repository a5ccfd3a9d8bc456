"""Atomic output and transparent gzip input: a failed command never leaves a partial file."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from irprof.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes_maybe_gzip(path: str | Path) -> bytes:
    """The file's bytes, decompressed when it is gzip; truncation is a TraceFormatError."""
    return gunzip_if_gzip(Path(path).read_bytes(), path)


def gunzip_if_gzip(raw: bytes, path: str | Path) -> bytes:
    """`raw` (the bytes of `path`), decompressed when it is gzip."""
    if not raw.startswith(GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error) as exc:
        raise TraceFormatError(path, f"gzip stream is truncated or corrupt ({exc})") from exc


@contextlib.contextmanager
def atomic_write(path: str | Path) -> Iterator[IO[bytes]]:
    """Binary handle on a temporary file beside `path`, renamed into place only on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        # mkstemp makes the file 0600; outputs are ordinary files, so honour the umask instead.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_write(path) as handle:
        handle.write(data)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))
