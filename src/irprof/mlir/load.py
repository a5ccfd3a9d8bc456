"""Load `.mlir` text or `.mlirbc` bytecode into a module; print and write modules atomically."""

from __future__ import annotations

import io
from pathlib import Path

from iree.compiler import ir

from irprof.errors import MlirError
from irprof.fileio import write_text_atomic
from irprof.mlir.locations import downcast

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


def parse_module(
    source: str | bytes, context: ir.Context, *, source_name: str = "<text>"
) -> ir.Module:
    """Parse MLIR text or bytecode; raises MlirError with MLIR's diagnostics on failure."""
    if isinstance(source, bytes) and not source.startswith(BYTECODE_MAGIC):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MlirError(
                f"{source_name}: neither MLIR text (not UTF-8 at byte {exc.start}) nor MLIR "
                "bytecode (no 'ML\\xefR' header)"
            ) from exc
    if isinstance(source, str) and not source.strip():
        raise MlirError(f"{source_name}: empty file, expected an MLIR module")
    try:
        module = ir.Module.parse(source, context)
    except ir.MLIRError as exc:
        raise MlirError(
            f"{source_name}: not valid MLIR\n{_diagnostics_text(exc, source_name)}"
        ) from exc
    return module


def load_module(path_or_text: str | Path, context: ir.Context) -> ir.Module:
    """Load a module from a path (`.mlir` text or `.mlirbc` bytecode) or from MLIR text.

    A `Path`, or a `str` without a newline that names an existing file, is read from disk;
    any other string is parsed as MLIR text.
    """
    if isinstance(path_or_text, Path) or (
        "\n" not in path_or_text and Path(path_or_text).is_file()
    ):
        path = Path(path_or_text)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise MlirError(f"{path}: cannot read ({exc.strerror})") from exc
        return parse_module(data, context, source_name=str(path))
    return parse_module(path_or_text, context)


def print_module(module: ir.Module, *, debug_info: bool = True, generic: bool = False) -> str:
    """The module as text; `debug_info` prints `loc(...)`, `generic` the generic op form."""
    buffer = io.StringIO()
    module.operation.print(
        file=buffer,
        enable_debug_info=debug_info,
        print_generic_op_form=generic,
        assume_verified=True,
    )
    return buffer.getvalue()


def write_module(
    path: str | Path, module: ir.Module, *, debug_info: bool = True, generic: bool = False
) -> None:
    """Write the module's text to `path` atomically (no partial file on failure)."""
    write_text_atomic(path, print_module(module, debug_info=debug_info, generic=generic))


def verify_module(module: ir.Module, *, what: str = "module") -> None:
    """Run the verifier; raises MlirError with MLIR's diagnostics when it fails."""
    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        raise MlirError(f"{what}: verification failed\n{_diagnostics_text(exc, what)}") from exc
