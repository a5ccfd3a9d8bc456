"""`irprof tune RUN [-o DIR]`: measured code-generation choices for an IREE run's hot dispatches."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from irprof.api import tune as tune_api
from irprof.errors import UsageError


def _ms(ns: Any) -> str:
    return f"{float(ns) / 1e6:.3f}" if ns else "-"


def _speedup(entry: dict[str, Any]) -> str:
    if "speedup" not in entry:
        return "-"
    low, high = entry.get("interval", [entry["speedup"], entry["speedup"]])
    return f"{entry['speedup']:.3f}x [{low:.2f}, {high:.2f}]"


def tune(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="IREE run bundle (`capture iree`).")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Folder to write (default RUN/tuned).")
    ] = None,
    dispatches: Annotated[
        int, typer.Option("--dispatches", help="Tune at most this many hottest dispatches.")
    ] = 3,
    rounds: Annotated[
        int, typer.Option("--rounds", help="Alternating baseline/candidate rounds.")
    ] = 3,
    runs: Annotated[int, typer.Option("--runs", help="Calls per round.")] = 10,
    margin: Annotated[
        float, typer.Option("--margin", help="A winner is faster by more than this every round.")
    ] = 0.03,
    no_global: Annotated[
        bool, typer.Option("--no-global", help="Per-dispatch choices only (no global flags).")
    ] = False,
    try_config: Annotated[
        list[str] | None,
        typer.Option(
            "--try",
            metavar="LOWERING_CONFIG",
            help="Also try this #iree_cpu.lowering_config<...> on each hot dispatch.",
        ),
    ] = None,
) -> None:
    """Try code-generation choices on the dispatches holding most measured time, keep the
    measured winners (outputs equal to the default's), and write the tuned IR, the tuning
    record, the tuning spec and an MLGO training log."""
    from irprof.frameworks.iree.tune import TuneOptions

    if dispatches < 1 or rounds < 1 or runs < 1 or margin < 0:
        raise UsageError("--dispatches, --rounds and --runs must be positive, --margin >= 0")
    console = Console(highlight=False, stderr=True)
    options = TuneOptions(
        max_dispatches=dispatches,
        rounds=rounds,
        runs=runs,
        margin=margin,
        global_flags=not no_global,
        extra_configs=tuple(try_config or ()),
    )
    result = tune_api(run, output, options=options, say=lambda line: console.print(line))
    record = result.record
    table = Table(title="per dispatch (IREE HAL profile, medians)")
    for column in ("dispatch", "share", "default ms", "tuned ms", "speedup [interval]", "choice"):
        table.add_column(column)
    for decision in record["dispatches"]:
        chosen = decision.get("chosen") or {}
        lost = decision.get("superseded") or decision.get("dropped") or {}
        best = (
            chosen
            or lost
            or max(
                (c for c in decision["candidates"] if "speedup" in c),
                key=lambda c: c["speedup"],
                default={},
            )
        )
        if chosen:
            choice = chosen["id"]
        elif lost:
            how = "superseded by global flags" if "superseded" in decision else "dropped"
            choice = f"default ({lost['id']} {how})"
        else:
            choice = "default" + (f" ({decision['why']})" if decision.get("why") else "")
        table.add_row(
            decision["dispatch"],
            f"{decision['share']:.0%}",
            _ms(decision.get("default_ns")),
            _ms(chosen.get("tuned_ns") if chosen else decision.get("default_ns")),
            _speedup(chosen) if chosen else f"best {_speedup(best)}",
            choice,
        )
    Console(highlight=False).print(table)
    for entry in record["global"]:
        console.print(f"global {entry['id']}: {entry['status']} {_speedup(entry)}", markup=False)
    e2e = record["end_to_end"]
    for tried in e2e.get("tried", ()):
        console.print(
            f"end to end, {tried['what']}: default {_ms(tried['baseline_ns'])} ms, tuned "
            f"{_ms(tried['candidate_ns'])} ms, {_speedup(tried)}",
            markup=False,
        )
    if e2e.get("changed"):
        console.print(f"kept: {e2e['chosen']}", markup=False)
    else:
        console.print(
            e2e.get("reverted") or "no candidate won: IREE's default is kept", markup=False
        )
    for name, path in result.files.items():
        console.print(f"{name} -> {path}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the `tune` command."""
    app.command("tune", no_args_is_help=True)(tune)
