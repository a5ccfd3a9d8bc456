"""The registered passes as a terminal table (`irprof opt --list-passes`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from irprof.passes.base import describe_options
from irprof.registry import Registry


def pass_table(registry: Registry[type[Any]]) -> Table:
    """One row per registered irprof pass: name, options, summary."""
    table = Table(title="irprof passes (mix with any native pass of the bindings)")
    table.add_column("pass")
    table.add_column("options")
    table.add_column("what it does")
    for name in registry.names():
        cls = registry.get(name)
        table.add_row(name, describe_options(cls), cls.summary)
    return table
