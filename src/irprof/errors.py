"""The error hierarchy: the library raises these, only the CLI prints them and exits."""

from __future__ import annotations

from pathlib import Path


class IrprofError(Exception):
    """Root of every error irprof raises on purpose; the CLI maps it to exit code 2."""

    exit_code = 2


class UsageError(IrprofError):
    """The caller asked for something that cannot be done with these arguments."""


class TraceFormatError(IrprofError):
    """A trace file is unreadable: names the file, where it went wrong and what was expected."""

    def __init__(self, path: str | Path, problem: str, *, where: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.where = where
        place = f" at {where}" if where else ""
        super().__init__(f"{self.path}{place}: {problem}")


class MlirError(IrprofError):
    """MLIR text or bytecode that does not parse or verify; carries MLIR's own diagnostics."""


class PipelineError(IrprofError):
    """A pass pipeline string, pass name or pass option is wrong, or a pass failed."""


class CorrelationError(IrprofError):
    """Trace and IR do not belong together (for example near-zero coverage)."""


class BundleError(IrprofError):
    """A run bundle directory is missing a file or has a manifest that does not parse."""


class CaptureError(IrprofError):
    """Running the user's model under the profiler failed."""
