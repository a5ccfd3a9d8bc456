"""`irprof` entry point: the Typer app built from command modules; only `main` exits."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

import typer
from rich.console import Console

from irprof import __version__
from irprof.cli.progress_display import stage_spinner
from irprof.cli.typer_app import command_group
from irprof.errors import IrprofError

# Each module defines `register(app: typer.Typer) -> None` (--help lists them in loop order).
COMMAND_MODULES = (
    "irprof.cli.capture_cmd",
    "irprof.cli.annotate_cmd",
    "irprof.cli.trace_cmd",
    "irprof.cli.sql_cmd",
    "irprof.cli.dag_cmd",
    "irprof.cli.opt_cmd",
    "irprof.cli.top_cmd",
    "irprof.cli.graph_cmd",
    "irprof.cli.report_cmd",
    "irprof.cli.export_cmd",
    "irprof.cli.diff_cmd",
    "irprof.cli.dataset_cmd",
    "irprof.cli.tune_cmd",
    "irprof.cli.demo_cmd",
)


def build_app() -> typer.Typer:
    """The Typer application with every command registered."""
    app = command_group(
        "Join ML profiler traces to the MLIR ops that produced them; annotate; report.",
        ordered=True,
    )

    @app.callback(invoke_without_command=True)
    def _root(
        version: bool = typer.Option(False, "--version", help="Print the version and exit."),
    ) -> None:
        if version:
            typer.echo(f"irprof {__version__}")
            raise typer.Exit(0)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(app)
    return app


def describe_os_error(exc: OSError) -> str:
    """`path: No space left on device` (both paths of a rename or link)."""
    words = os.strerror(exc.errno) if exc.errno else str(exc)
    paths = [str(name) for name in (exc.filename, exc.filename2) if name is not None]
    return f"{' -> '.join(paths)}: {words}" if paths else words


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on `argv`; returns the exit code (0 ok, 1 failure found, 2 bad input/usage)."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    app = build_app()
    try:
        with stage_spinner(force=bool(os.environ.get("IRPROF_PROGRESS"))):
            result = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    except IrprofError as exc:
        err.print(f"[bold red]irprof: error:[/] {exc}", markup=True)
        return exc.exit_code
    except OSError as exc:
        # The file system said no (no space, no permission, a read-only or vanished file)
        # somewhere no reader or writer named it: still the path and the errno's words, exit 2.
        err.print(f"irprof: error: {describe_os_error(exc)}", markup=False)
        return 2
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        err.print("irprof: aborted")
        return 130
    except typer.TyperException as exc:  # usage errors: Typer's bundled Click shows them
        show = getattr(exc, "show", None)
        if callable(show):
            show(file=sys.stderr)
        else:
            err.print(f"irprof: error: {exc}", markup=False)
        return 2
    return int(result) if isinstance(result, int) else 0


SIGTERM_EXIT = 128 + signal.SIGTERM


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as an exception: the `finally` blocks and context managers that remove temporary
    files run as they do on Ctrl-C, and the process then exits 143."""
    raise SystemExit(SIGTERM_EXIT)


def run() -> None:
    """Console-script entry: exit with `main`'s code (SIGTERM cleans up like SIGINT)."""
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
