"""`irprof capture <framework> SCRIPT -o RUN`: one subcommand per framework."""

from __future__ import annotations

import importlib

import typer

# Each module defines `register(capture_app: typer.Typer) -> None` adding one subcommand.
FRAMEWORK_CLI_MODULES = (
    "irprof.cli.capture_tf",
    "irprof.cli.capture_jax",
    "irprof.cli.capture_torch",
)


def register(app: typer.Typer) -> None:
    """Add the `capture` command group."""
    capture_app = typer.Typer(
        help="Run a model script under its framework's profiler and write a run bundle.",
        no_args_is_help=True,
    )
    for module_name in FRAMEWORK_CLI_MODULES:
        importlib.import_module(module_name).register(capture_app)
    app.add_typer(capture_app, name="capture")
