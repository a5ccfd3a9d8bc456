"""Atomic output and transparent gzip input: a failed command never leaves a partial file.

Every output is written to a temporary file beside it and renamed into place; `OutputStage`
commits several outputs together (every temporary first, then every rename). A write that fails
(full disk, read-only folder, no permission) is an `IrprofError` naming the path and the errno's
words. `refuse_overwriting_inputs` keeps an output off the files a command reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import types
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, cast

from irprof.errors import IrprofError, TraceFormatError, UsageError

inflate_library: types.ModuleType
INFLATE_ERRORS: tuple[type[Exception], ...]  # with EOFError: a truncated stream
try:  # ISA-L's inflate: the same streams and API as zlib's, about 2x faster on trace JSON
    from isal import isal_zlib

    # Its stub types the error class as an instance.
    inflate_library, INFLATE_ERRORS = isal_zlib, (EOFError, zlib.error, cast(type, isal_zlib.error))
except ImportError:  # pragma: no cover - the standard library's zlib then
    inflate_library, INFLATE_ERRORS = zlib, (EOFError, zlib.error)

GZIP_MAGIC = b"\x1f\x8b"
MAX_JOURNAL_BYTES = 1 << 20
STAGE_MARK = ".irprof-stage-"


def read_bytes_maybe_gzip(path: str | Path) -> bytes:
    """The file's bytes, decompressed when it is gzip; truncation is a TraceFormatError."""
    return gunzip_if_gzip(Path(path).read_bytes(), path)


# Most bytes a gzip input may inflate to in memory: a 4 MB file of zeros inflates to 4 GB. The
# streamed `irprof trace convert` reads bigger traces; `read_trace(max_bytes=)` raises the bound.
MAX_DECOMPRESSED_BYTES = 2 << 30


def gunzip_if_gzip(raw: bytes, path: str | Path, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """`raw` (the bytes of `path`), decompressed when it is gzip, member after member, never
    past `limit` bytes: more is a TraceFormatError instead of a MemoryError or the OOM killer."""
    if not raw.startswith(GZIP_MAGIC):
        return raw
    parts: list[bytes] = []  # one piece per member, usually: joined only when there are more
    size = 0
    pending = raw
    try:
        while pending:
            inflater = inflate_library.decompressobj(wbits=31)  # one gzip member
            while pending and not inflater.eof:
                parts.append(inflater.decompress(pending, limit + 1 - size))
                size += len(parts[-1])
                if size > limit:
                    raise TraceFormatError(
                        path,
                        f"gzip data inflates to more than {limit:,} bytes "
                        "(irprof.fileio.MAX_DECOMPRESSED_BYTES, the in-memory limit); "
                        "read it with the streamed `irprof trace convert` instead",
                    )
                pending = inflater.unconsumed_tail
            if not inflater.eof:
                raise EOFError("compressed data ended before the end-of-stream marker")
            pending = inflater.unused_data.lstrip(b"\x00")  # padding, as gzip allows
    except INFLATE_ERRORS as exc:
        raise TraceFormatError(path, f"gzip stream is truncated or corrupt ({exc})") from exc
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _kind_of(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _file_problem(found: os.stat_result, limit_bytes: int) -> str | None:
    if not stat.S_ISREG(found.st_mode):
        return f"is {_kind_of(found.st_mode)}, not a regular file"
    if found.st_size > limit_bytes:
        return f"is {found.st_size:,} bytes, more than the limit of {limit_bytes:,}"
    return None


def input_file_problem(path: str | Path, limit_bytes: int) -> str | None:
    """What makes `path` unfit to read as an input file (missing, a device, FIFO or directory,
    larger than `limit_bytes`), or None when it is a regular file within the limit."""
    try:
        found = os.stat(path)
    except OSError as exc:
        return f"cannot be read ({os.strerror(exc.errno or 0)})"
    return _file_problem(found, limit_bytes)


def read_input_file(path: str | Path, limit_bytes: int) -> bytes:
    """The bytes of the regular file `path`, checked on the open descriptor (a FIFO is opened
    without blocking) before anything is read; any problem is an IrprofError naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise IrprofError(f"{path}: cannot be read ({os.strerror(exc.errno or 0)})") from exc
    with os.fdopen(fd, "rb") as handle:
        problem = _file_problem(os.fstat(fd), limit_bytes)
        if problem is not None:
            raise IrprofError(f"{path}: {problem}")
        try:
            data = handle.read(limit_bytes + 1)
        except OSError as exc:
            raise IrprofError(f"{path}: cannot be read ({os.strerror(exc.errno or 0)})") from exc
    if len(data) > limit_bytes:
        raise IrprofError(f"{path}: grew past the limit of {limit_bytes:,} bytes while read")
    return data


def write_error(path: str | Path, exc: OSError) -> IrprofError:
    """`exc`, raised while writing the output `path`, as an error naming the path and the
    errno's words (`No space left on device`, `Permission denied`, ...)."""
    words = os.strerror(exc.errno) if exc.errno else str(exc)
    return IrprofError(
        f"{path}: cannot write the output ({words}); nothing was written there. Free space, "
        "fix the folder's permissions, or choose another path"
    )


def _is_output_failure(exc: OSError, temporary: str) -> bool:
    """Whether an OSError raised while the caller filled the temporary file came from writing
    it (no file name, or the temporary's), not from reading some input on the way."""
    return exc.filename in (None, temporary)


def _write_handle(handle: IO[bytes], data: bytes) -> None:
    """The one place whole outputs are written (a test injects disk faults here)."""
    handle.write(data)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def make_parent_folder(path: str | Path) -> None:
    """Create the folder that will hold the output `path` (an error names it and the errno)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(target, exc) from exc


@contextlib.contextmanager
def atomic_write(path: str | Path) -> Iterator[IO[bytes]]:
    """Binary handle on a temporary file beside `path`, renamed into place only on success."""
    target = Path(path)
    make_parent_folder(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise write_error(target, exc) from exc
    try:
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
            # mkstemp makes the file 0600; outputs are ordinary files, so honour the umask.
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        except OSError as exc:
            if _is_output_failure(exc, tmp):
                raise write_error(target, exc) from exc
            raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_write(path) as handle:
        _write_handle(handle, data)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


class OutputStage:
    """Outputs committed together: write each to `stage.path(target)` (temporaries beside the
    targets), then `commit()` renames them all; `discard()` (always call it, e.g. in `finally`)
    removes whatever was not committed, so a failure leaves every target as it was."""

    def __init__(self) -> None:
        self._token = uuid.uuid4().hex[:12]
        self._staged: dict[Path, Path] = {}
        self._made_folders: list[Path] = []

    def path(self, target: str | Path) -> Path:
        """Where to write `target`'s new content until the commit."""
        final = Path(target)
        folders = (final.parent, *final.parent.parents)
        missing = [folder for folder in folders if not folder.exists()]
        self._made_folders.extend(folder for folder in missing if folder not in self._made_folders)
        # Named so that no reader's pattern (`*.mlir`, `opprofile*.json`) matches a leftover.
        staged = final.parent / f".{final.name}{STAGE_MARK}{self._token}"
        self._staged[final] = staged
        return staged

    def commit(self, journal: Path | None = None) -> None:
        """Rename every staged file onto its target (all were written: a missing one is a bug).

        With `journal`, the renames are first listed in that file (atomically), and it is removed
        once all are done: a process killed between two renames leaves the journal, from which
        `finish_commit` completes them (readers refuse a folder whose journal is pending)."""
        for final, staged in self._staged.items():
            if not staged.is_file():
                raise IrprofError(f"{final}: its staged output {staged} was never written")
        if journal is not None:
            pairs = [
                [os.path.relpath(staged, journal.parent), os.path.relpath(final, journal.parent)]
                for final, staged in self._staged.items()
            ]
            write_bytes_atomic(journal, json.dumps(pairs).encode())
        for final, staged in list(self._staged.items()):
            try:
                os.replace(staged, final)
            except OSError as exc:
                raise write_error(final, exc) from exc
            del self._staged[final]
        self._made_folders.clear()
        if journal is not None:
            os.unlink(journal)

    def discard(self) -> None:
        """Remove the staged files not committed, and the folders made only for them."""
        for staged in self._staged.values():
            with contextlib.suppress(OSError):
                os.unlink(staged)
        self._staged.clear()
        for folder in self._made_folders:  # deepest first: parents were listed after children
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._made_folders.clear()


def finish_commit(journal: Path) -> int:
    """Complete the renames an interrupted `OutputStage.commit` listed in `journal` (those whose
    staged file is still there), then remove the journal; returns how many were completed. A
    journal naming a path outside its folder, or not a list of pairs, is refused."""
    folder = journal.parent
    try:
        pairs = json.loads(journal.read_bytes()[:MAX_JOURNAL_BYTES])
    except (OSError, ValueError) as exc:
        raise IrprofError(f"{journal}: unreadable commit journal ({exc}); remove it") from exc
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        for pair in pairs
    ):
        raise IrprofError(f"{journal}: not a commit journal (a list of [staged, target] pairs)")
    done = 0
    for staged_name, final_name in pairs:
        staged, final = folder / staged_name, folder / final_name
        for path in (staged, final):
            if os.path.isabs(staged_name) or not _inside(path, folder):
                raise IrprofError(f"{journal}: names {path}, outside {folder}; remove it")
        if staged.is_file() and not staged.is_symlink():
            os.replace(staged, final)
            done += 1
    os.unlink(journal)
    return done


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` (not resolved through a final link) stays inside `folder`."""
    parent = os.path.realpath(path.parent)
    root = os.path.realpath(folder)
    return parent == root or parent.startswith(root + os.sep)


def files_under(folder: Path) -> list[Path]:
    """Every file below `folder` (links are listed, never followed into other folders)."""
    return [
        Path(where) / name
        for where, _, names in os.walk(folder, followlinks=False)
        for name in names
    ]


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino


def refuse_overwriting_inputs(
    outputs: Mapping[str, str | Path | None], inputs: Iterable[str | Path]
) -> None:
    """Refuse (UsageError naming both paths) an output, given as {option: path}, that is or
    resolves to one of the files `inputs` (through symlinks, `..` or a hard link), or a folder
    output that holds one of them."""
    wanted = {option: Path(path) for option, path in outputs.items() if path is not None}
    if not wanted:
        return
    protected = [
        (Path(path), Path(os.path.realpath(path)), _identity(Path(path))) for path in inputs
    ]
    for option, output in wanted.items():
        resolved = Path(os.path.realpath(output))
        identity = _identity(output)
        for given, real, input_identity in protected:
            same = real == resolved or (identity is not None and identity == input_identity)
            if same or real.is_relative_to(resolved):
                what = "is" if same else "holds"
                raise UsageError(
                    f"{option} {output}: {what} the input {given}; writing there would destroy "
                    "what this command reads. Choose another output path"
                )
