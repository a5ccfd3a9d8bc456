"""`irprof capture <framework> SCRIPT -o RUN`: one subcommand per registered framework."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import typer

from irprof.cli.typer_app import command_group
from irprof.frameworks import get_all_frameworks
from irprof.registry import load_reference


def register(app: typer.Typer) -> None:
    """Add the `capture` command group with each framework's subcommand."""
    capture_app = command_group(
        "Run a model script under its framework's profiler and write a run bundle."
    )
    frameworks = get_all_frameworks()
    for name in frameworks.in_order():
        add = cast(Callable[[typer.Typer], None], load_reference(frameworks.get(name).cli))
        add(capture_app)
    app.add_typer(capture_app, name="capture")
