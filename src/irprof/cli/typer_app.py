"""Typer apps with plain, conventional help: `-n, --limit INTEGER`, flags without a type, text
rewrapped to the terminal's width, commands listed in the order of the loop they serve."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

# The loop in order: capture a run, read traces, annotate, transform, show, compare, use.
COMMAND_ORDER = (
    "capture",
    "trace",
    "annotate",
    "opt",
    "top",
    "graph",
    "report",
    "export",
    "diff",
    "dag",
    "sql",
    "dataset",
    "tune",
    "demo",
)


class LoopOrderGroup(TyperGroup):
    """A command group listing its commands in `COMMAND_ORDER` (others after, in their order)."""

    def list_commands(self, ctx: Any) -> list[str]:  # typer's own vendored click.Context
        names: Sequence[str] = super().list_commands(ctx)
        rank = {name: index for index, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda name: rank.get(name, len(rank)))


def command_group(help_text: str, *, ordered: bool = False) -> typer.Typer:
    """A Typer app for `irprof` or one of its command groups, with click's plain help."""
    return typer.Typer(
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        cls=LoopOrderGroup if ordered else TyperGroup,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
