"""Keep the process alive through MLIR's parser: a cheap pre-scan and a parse on a big stack.

The bindings' parser recurses once per nesting level and runs on the calling thread's stack, so
5,000 nested `module {` segfault the interpreter (exit 139, no message); it also reads past the
end of a `dialect_resources` blob whose string is cut off at end of file, and it takes cubic time
on long decimal integers (20,000 digits: 3.6 s; 100,000: minutes). `prescan_mlir` refuses those
inputs with an error naming the file, line and column before MLIR sees them; `call_with_stack`
runs the parse on a thread whose stack is sized for the nesting the pre-scan allowed.

Measured on a 100k-op module (8.7 MB, parse 1.3 s on a 2-core VM): the pre-scan costs
0.08-0.11 s (0.13-0.23 s when strings went through a regular expression), the parse thread
~1 ms. A child process that parses first would cost a fresh interpreter with the bindings
(~0.5 s) plus a second parse, more than doubling the load, so it is not used; the pre-scan
plus the stack are what make crashes impossible for the shapes the parser recurses on.

Bytecode is different: its reader trusts section sizes and indexes (one changed byte of a valid
file segfaults it; another aborts in "LLVM ERROR: SmallVector unable to grow"), and there is no
text to pre-scan. `probe_bytecode` therefore parses bytecode once in a child process first and
turns a crash there into an MlirError; bytecode files are small next to text, so the ~0.5 s of
a fresh interpreter is paid only on them.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from irprof.errors import MlirError

T = TypeVar("T")

# MLIR string literals never span lines (the lexer rejects a newline in a string), so a string is
# `"` ... `"` on one line; `//` comments run to the end of the line.
_STRING_OR_COMMENT = re.compile(rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*')
_BRACKETS = b"([{<)]}>"
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in _BRACKETS)
# `->`, `>=`, `<=` are not brackets: removed from the text before everything but brackets is
# (after, `dense<-1>` would read `<->` and lose its `>` to a false arrow).
_NOT_NESTING = (b"->", b">=", b"<=")
_DEPTH_STEP = bytes(
    1 if chr(byte) in "([{<" else 255 if chr(byte) in ")]}>" else 0 for byte in range(256)
)
_DIGIT_MARK = bytes(ord("0") if chr(byte).isdigit() else ord(" ") for byte in range(256))
# Stack bytes per nesting level: 20,000 nested generic ops (40,000 brackets) overflow 64 MiB,
# i.e. >1.6 KiB per bracket; 4x that leaves room for the costliest constructs.
STACK_BYTES_PER_LEVEL = 8 * 1024
MIN_STACK_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ParseLimits:
    """Input bounds the MLIR loader enforces before parsing (raise them on the command line)."""

    max_nesting: int = 1000  # brackets, braces, parens and angles open at once
    max_digits: int = 1000  # digits of one number literal (parse time is cubic in it)
    max_bytes: int = 512 * 1024 * 1024  # file size; memory is ~11x the file size

    @property
    def stack_bytes(self) -> int:
        """Stack for the parse thread, sized for `max_nesting` levels."""
        return max(MIN_STACK_BYTES, self.max_nesting * STACK_BYTES_PER_LEVEL)


DEFAULT_LIMITS = ParseLimits()


def _line_col(data: bytes, offset: int) -> str:
    """1-based `line:col` of a byte offset (columns in bytes, as MLIR's diagnostics count)."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"{line}:{column}"


def without_strings_and_comments(data: bytes) -> bytes:
    """`data` with its string literals and `//` comments removed.

    Printed modules rarely hold an escape or a comment; then every `"` opens or closes a string
    that ends on its line, and the text between pairs of quotes is what the regular expression
    would remove: one `split` and two joins instead of a regex match per string (0.06 s against
    0.13-0.20 s on a 100k-op module). Any other text (an escape, a comment, a string cut by a
    newline) goes through the regular expression.
    """
    if b"\\" not in data and b"//" not in data:
        pieces = data.split(b'"')
        # An odd number of pieces: the quotes pair up; no newline in a string: each is one line.
        if len(pieces) % 2 == 1 and b"\n" not in b"".join(pieces[1::2]):
            return b"".join(pieces[0::2])
    return _STRING_OR_COMMENT.sub(b"", data)


def _masked(data: bytes) -> bytes:
    """`data` with strings and comments blanked to spaces, same length (failure path only)."""
    return _STRING_OR_COMMENT.sub(lambda match: b" " * (match.end() - match.start()), data)


def _deepest_offset(masked: bytes, limit: int) -> int:
    """Offset of the first bracket that opens level `limit + 1` in same-length masked text."""
    text = masked
    for pair in _NOT_NESTING:
        text = text.replace(pair, b"  ")
    steps = np.frombuffer(text.translate(_DEPTH_STEP), dtype=np.int8)
    depth = _clipped_depth(steps)
    return int(np.argmax(depth > limit))


def _clipped_depth(steps: np.ndarray) -> np.ndarray:
    """Nesting depth after each step; a stray closer cannot take it below zero."""
    running = np.cumsum(steps, dtype=np.int64)
    return running - np.minimum(np.minimum.accumulate(running), 0)


def prescan_mlir(data: bytes, source_name: str, limits: ParseLimits = DEFAULT_LIMITS) -> None:
    """Refuse MLIR text the parser would crash on or take minutes over; MlirError names the spot."""
    if len(data) > limits.max_bytes:
        raise MlirError(
            f"{source_name}: {len(data) / 2**20:.0f} MiB of MLIR is over the limit of "
            f"{limits.max_bytes / 2**20:.0f} MiB (loading takes ~11x the file size in memory); "
            "`irprof opt` and `irprof graph` raise it with --max-mlir-mb"
        )
    nul = data.find(b"\0")
    if nul >= 0:
        # MLIR's lexer treats NUL as the end of the buffer and would silently drop the rest.
        raise MlirError(
            f"{source_name}:{_line_col(data, nul)}: NUL byte in MLIR text (the parser would "
            "silently ignore everything after it); the file is corrupt or not MLIR text"
        )
    stripped = without_strings_and_comments(data)
    if b'"' in stripped:
        offset = _masked(data).find(b'"')
        raise MlirError(
            f"{source_name}:{_line_col(data, offset)}: unterminated string literal (a file cut "
            "off inside a string or a dense_resource blob?)"
        )
    run = b"0" * (limits.max_digits + 1)
    if run in stripped.translate(_DIGIT_MARK):
        offset = _masked(data).translate(_DIGIT_MARK).find(run)
        raise MlirError(
            f"{source_name}:{_line_col(data, offset)}: a number with more than "
            f"{limits.max_digits} digits (parsing it takes time cubic in its length); "
            "`irprof opt` and `irprof graph` raise the limit with --max-mlir-digits"
        )
    for pair in _NOT_NESTING:
        stripped = stripped.replace(pair, b"")
    brackets = stripped.translate(None, _NOT_BRACKETS)
    steps = np.frombuffer(brackets.translate(_DEPTH_STEP), dtype=np.int8)
    if steps.size and int(_clipped_depth(steps).max()) > limits.max_nesting:
        offset = _deepest_offset(_masked(data), limits.max_nesting)
        raise MlirError(
            f"{source_name}:{_line_col(data, offset)}: nesting deeper than "
            f"{limits.max_nesting} levels of brackets/braces (the MLIR parser recurses per level "
            "and would overflow its stack); `irprof opt` and `irprof graph` raise the limit with "
            "--max-mlir-nesting"
        )


def call_with_stack(function: Callable[[], T], stack_bytes: int) -> T:
    """Run `function` on a new thread with `stack_bytes` of stack; return or raise its outcome."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(function())
        except BaseException as exc:  # re-raised on the calling thread below
            failure.append(exc)

    # threading.stack_size is process-wide and only read when a thread starts: set it for this
    # one start and put it back at once.
    previous = threading.stack_size(stack_bytes)
    try:
        thread = threading.Thread(target=target, name="irprof-mlir-parse", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


# Exit codes of the bytecode probe's child: parsed, refused by MLIR (the parent parses again
# for the diagnostics), or another exception from the bindings (its text on stderr).
PROBE_PARSED, PROBE_INVALID, PROBE_FAILED = 0, 10, 11
PROBE_TIMEOUT_S = 600
_PROBE_CHILD = (
    "import sys\n"
    "from irprof.mlir.safe_parse import bytecode_probe_child\n"
    "sys.exit(bytecode_probe_child())\n"
)


def bytecode_probe_child() -> int:
    """In the child: parse the bytecode on stdin; the exit code says how it went."""
    from iree.compiler import ir

    from irprof.mlir.context import make_context

    data = sys.stdin.buffer.read()
    try:
        ir.Module.parse(data, make_context())
    except ir.MLIRError:
        return PROBE_INVALID
    except Exception as exc:  # the bindings raise RuntimeError on some corrupt strings
        sys.stderr.write(f"{type(exc).__name__}: {exc}")
        return PROBE_FAILED
    return PROBE_PARSED


def probe_bytecode(data: bytes, source_name: str) -> None:
    """Parse MLIR bytecode in a child process first: a crash of the parser there (a signal, an
    LLVM fatal error) or an exception from the bindings is an MlirError here, not the end of
    this process. Returns when the child parsed it or MLIR refused it with diagnostics."""
    try:
        child = subprocess.run(
            [sys.executable, "-c", _PROBE_CHILD],
            input=data,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise MlirError(
            f"{source_name}: the MLIR bytecode parser did not finish in {PROBE_TIMEOUT_S} s; "
            "the file is corrupt or hostile"
        ) from exc
    if child.returncode in (PROBE_PARSED, PROBE_INVALID):
        return
    said = child.stderr.decode("utf-8", "replace").strip().splitlines()
    last = f": {said[-1][:200]}" if said else ""
    if child.returncode == PROBE_FAILED:
        raise MlirError(f"{source_name}: not valid MLIR bytecode{last}")
    if child.returncode < 0:
        how = f"was killed by {signal.Signals(-child.returncode).name}"
    else:
        how = f"exited with status {child.returncode}"
    raise MlirError(
        f"{source_name}: the MLIR bytecode parser crashed on this file (it {how}{last}); "
        "the file is corrupt or hostile: regenerate it, or pass the MLIR text"
    )
