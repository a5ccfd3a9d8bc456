"""`irprof top RUN`: the hottest ops of an annotated run in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.annotated_levels import load_annotated_level, model_script
from irprof.analyses.hotspots import GROUP_BYS, hotspots
from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.renderers.hotspot_table import hotspot_rich_table
from irprof.run_annotate import bundle_framework


def top(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Annotated run bundle.")],
    limit: Annotated[int, typer.Option("-n", "--limit", help="Rows to show.")] = 20,
    by: Annotated[str, typer.Option("--by", help="Group rows by op | type | scope.")] = "op",
    level: Annotated[
        str | None, typer.Option("--level", help="Annotated IR level (default: first).")
    ] = None,
    expand_groups: Annotated[
        bool,
        typer.Option(
            "--expand-groups", help="By op: list each op of a fused/decomposed event (estimated)."
        ),
    ] = False,
) -> None:
    """Show the ops (or op kinds, or name scopes) that took the most time."""
    if by not in GROUP_BYS:
        raise UsageError(f"--by {by!r}: expected one of {'|'.join(GROUP_BYS)}")
    bundle = RunBundle(run)
    manifest = bundle.manifest()
    bundle_framework(bundle)  # a bundle of an unknown stack is not a run irprof wrote
    loaded = load_annotated_level(bundle, level)
    table = hotspots(
        loaded.profiled.ops,
        by=by,
        limit=limit,
        profiled_ns=loaded.profiled.profiled_ns,
        expand_groups=expand_groups,
    )
    script = model_script(bundle, manifest)
    title = f"{manifest.framework} · {script} · level {loaded.level} · by {by}"
    Console(highlight=False).print(
        hotspot_rich_table(table, loaded.profiled, script=script, title=title)
    )


def register(app: typer.Typer) -> None:
    """Add the `top` command."""
    app.command("top", no_args_is_help=True)(top)
