"""Load `.mlir` text or `.mlirbc` bytecode into a module; print and write modules atomically."""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from irprof.errors import MlirError
from irprof.fileio import write_bytes_atomic
from irprof.mlir.locations import downcast
from irprof.mlir.safe_parse import (
    DEFAULT_LIMITS,
    ParseLimits,
    call_with_stack,
    prescan_mlir,
    probe_bytecode,
)

# MLIR bytecode files start with "ML\xefR".
BYTECODE_MAGIC = b"ML\xefR"


def _diagnostics_text(exc: ir.MLIRError, source_name: str) -> str:
    """MLIR's own diagnostics, one per line, with `file:line:col` of the input."""
    lines = []
    for diag in exc.error_diagnostics:
        where = _diag_where(diag.location, source_name)
        lines.append(f"{where}: error: {diag.message}")
        for note in diag.notes:
            lines.append(f"  {_diag_where(note.location, source_name)}: note: {note.message}")
    return "\n".join(lines) if lines else str(exc.message)


def _diag_where(location: ir.Location, source_name: str) -> str:
    """`file:line:col` of a diagnostic; the parser names string inputs `-`, we name the file."""
    location = downcast(location)
    if isinstance(location, ir.FileLineColLoc):
        name = source_name if location.filename in ("-", "") else location.filename
        return f"{name}:{location.start_line}:{location.start_col}"
    return f"{source_name}:{location}"


def _check_source(
    source: str | bytes, source_name: str, limits: ParseLimits = DEFAULT_LIMITS
) -> None:
    """Reject inputs that are not MLIR, or that would crash or stall the parser (see safe_parse):
    text is pre-scanned, bytecode parsed in a child process first."""
    if isinstance(source, bytes):
        if source.startswith(BYTECODE_MAGIC):
            if len(source) > limits.max_bytes:
                raise MlirError(
                    f"{source_name}: {len(source) / 2**20:.0f} MiB of MLIR bytecode is over the "
                    f"limit of {limits.max_bytes / 2**20:.0f} MiB; `irprof opt` and `irprof graph` "
                    "raise it with --max-mlir-mb"
                )
            probe_bytecode(source, source_name)
            return
        try:
            source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MlirError(
                f"{source_name}: neither MLIR text (not UTF-8 at byte {exc.start}) nor MLIR "
                "bytecode (no 'ML\\xefR' header)"
            ) from exc
        data = source
    else:
        data = source.encode("utf-8")
    if not data.strip():
        raise MlirError(f"{source_name}: empty input, expected an MLIR module")
    prescan_mlir(data, source_name, limits)


def parse_module(
    source: str | bytes,
    context: ir.Context,
    *,
    source_name: str = "<text>",
    limits: ParseLimits = DEFAULT_LIMITS,
) -> ir.Module:
    """Parse MLIR text or bytecode; raises MlirError with MLIR's diagnostics on failure."""
    _check_source(source, source_name, limits)
    return _parse_checked(source, context, source_name, limits)


def _parse_checked(
    source: str | bytes, context: ir.Context, source_name: str, limits: ParseLimits
) -> ir.Module:
    """Parse a source `_check_source` accepted, on a stack sized for its nesting."""
    try:
        return call_with_stack(lambda: ir.Module.parse(source, context), limits.stack_bytes)
    except ir.MLIRError as exc:
        raise MlirError(
            f"{source_name}: not valid MLIR\n{_diagnostics_text(exc, source_name)}"
        ) from exc
    except RuntimeError as exc:  # the bindings on corrupt bytecode ("str conversion error")
        raise MlirError(f"{source_name}: not valid MLIR bytecode: {exc}") from exc


def _names_a_file(text: str) -> bool:
    """A one-line string that is an existing file or ends like an MLIR file name."""
    if "\n" in text:
        return False
    try:
        is_file = Path(text).is_file()
    except OSError:  # a one-line module longer than a file name may be (ENAMETOOLONG)
        is_file = False
    return is_file or text.endswith((".mlir", ".mlirbc"))


def load_module(
    path_or_text: str | Path,
    context: ir.Context,
    *,
    limits: ParseLimits = DEFAULT_LIMITS,
    data: bytes | None = None,
) -> ir.Module:
    """Load a module from a path (`.mlir` text or `.mlirbc` bytecode) or from MLIR text.

    A `Path`, or a `str` without a newline that names an existing file, is read from disk (ops
    without a location then get `file:line:col` of this path, as with mlir-opt); any other
    string is parsed as MLIR text. `limits` bound size, nesting and number length (safe_parse).
    `data`: the file's bytes when the caller already read them (they are checked, not re-read).
    """
    if isinstance(path_or_text, str) and not _names_a_file(path_or_text):
        return parse_module(path_or_text, context, limits=limits)
    path = Path(path_or_text)
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise MlirError(f"{path}: cannot read ({exc.strerror})") from exc
    _check_source(data, str(path), limits)
    if data.startswith(BYTECODE_MAGIC):  # the very bytes the child parsed, not a re-read
        return _parse_checked(data, context, str(path), limits)
    try:
        # parseFile (not parse of `data`) so ops without a location get this file's name, as
        # with mlir-opt; the bindings have no way to name a buffer. So MLIR reads the file once
        # more, after the checks above ran on `data`.
        return call_with_stack(lambda: ir.Module.parseFile(str(path), context), limits.stack_bytes)
    except ir.MLIRError as exc:
        raise MlirError(f"{path}: not valid MLIR\n{_diagnostics_text(exc, str(path))}") from exc
    except RuntimeError as exc:  # the bindings on corrupt bytecode ("str conversion error")
        raise MlirError(f"{path}: not valid MLIR bytecode: {exc}") from exc


def print_module_bytes(
    module: ir.Module, *, debug_info: bool = True, generic: bool = False
) -> bytes:
    """The module's text as UTF-8 bytes, in one piece.

    `get_asm(binary=True)` returns one buffer; printing into a Python file object instead makes
    the bindings call `write` for every token (millions of calls on a large module), ~30% slower.
    """
    printed: bytes = module.operation.get_asm(
        binary=True,
        enable_debug_info=debug_info,
        print_generic_op_form=generic,
        assume_verified=True,
    )
    return printed


def print_module(module: ir.Module, *, debug_info: bool = True, generic: bool = False) -> str:
    """The module as text; `debug_info` prints `loc(...)`, `generic` the generic op form."""
    return print_module_bytes(module, debug_info=debug_info, generic=generic).decode("utf-8")


def write_module(
    path: str | Path, module: ir.Module, *, debug_info: bool = True, generic: bool = False
) -> None:
    """Write the module's text to `path` atomically (no partial file on failure)."""
    write_bytes_atomic(path, print_module_bytes(module, debug_info=debug_info, generic=generic))


def verify_module(module: ir.Module, *, what: str = "module") -> None:
    """Run the verifier; raises MlirError with MLIR's diagnostics when it fails."""
    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        raise MlirError(f"{what}: verification failed\n{_diagnostics_text(exc, what)}") from exc
