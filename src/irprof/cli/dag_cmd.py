"""`irprof dag TRACE|RUN -o dag.json [--graphml F] [--dot F] [--svg F] [--critical-path]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.api import trace_dag
from irprof.cli.outputs import check_outputs
from irprof.errors import UsageError
from irprof.event_dag.export import save_dag_json, save_graphml
from irprof.event_dag.model import DAG_MODES
from irprof.fileio import write_bytes_atomic
from irprof.readers import get_all_readers
from irprof.renderers.base import get_dag_renderers
from irprof.renderers.critical_path_table import critical_path_table


def dag(
    trace_path: Annotated[
        Path,
        typer.Argument(
            metavar="TRACE",
            help="Trace file (.xplane.pb, .json[.gz]), its dir, or a run bundle (its trace; "
            "when annotated, the critical path names IR ops).",
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="dag.json to write.")],
    graphml: Annotated[Path | None, typer.Option("--graphml", help="Also write GraphML.")] = None,
    dot: Annotated[Path | None, typer.Option("--dot", help="Also write Graphviz DOT.")] = None,
    svg: Annotated[
        Path | None, typer.Option("--svg", help="Also write an SVG (needs Graphviz `dot`).")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="causal (default) or levels (overlap layering).")
    ] = "causal",
    min_dur_ns: Annotated[
        int, typer.Option("--min-dur-ns", help="Leave out events shorter than this.")
    ] = 0,
    track: Annotated[
        str | None, typer.Option("--track", help="Keep tracks whose process/thread matches.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Keep events whose name matches (regex).")
    ] = None,
    max_svg_nodes: Annotated[
        int, typer.Option("--max-svg-nodes", help="Draw at most this many (longest) events.")
    ] = 2000,
    format_name: Annotated[
        str | None,
        typer.Option("--format", help="Reader to use instead of detecting it from the content."),
    ] = None,
    show_critical_path: Annotated[
        bool,
        typer.Option(
            "--critical-path", help="List a step's critical path and highlight it in DOT/SVG."
        ),
    ] = False,
    step: Annotated[
        int | None,
        typer.Option("--step", help="Step of the critical path (default: the longest)."),
    ] = None,
) -> None:
    """Build the event DAG of a trace and write dag.json (+ GraphML, DOT, SVG)."""
    if mode not in DAG_MODES:
        raise UsageError(f"--mode {mode!r}: expected one of {'|'.join(DAG_MODES)}")
    if min_dur_ns < 0 or max_svg_nodes < 1:
        raise UsageError("--min-dur-ns must be >= 0 and --max-svg-nodes >= 1")
    if format_name is not None and format_name not in get_all_readers():
        known = ", ".join(get_all_readers().names())
        raise UsageError(f"--format {format_name!r}: expected one of {known}")
    if step is not None and not show_critical_path:
        raise UsageError("--step chooses the step of --critical-path; pass both")
    check_outputs({"-o": output, "--graphml": graphml, "--dot": dot, "--svg": svg}, [trace_path])
    view = trace_dag(
        trace_path,
        mode,
        format=format_name,
        min_dur_ns=min_dur_ns,
        track=track,
        name=name,
        critical_path=show_critical_path,
        step=step,
    )
    event_dag, path = view.dag, view.critical_path
    highlight = path.nodes if path is not None else ()
    # Render everything before writing anything, so a failure leaves no partial set of files.
    drawn = {
        name: get_dag_renderers()
        .get(name)(max_nodes=max_svg_nodes, highlight=highlight)
        .render(event_dag)
        for name, wanted in (("svg", svg), ("dot", dot))
        if wanted is not None
    }
    svg_bytes, dot_bytes = drawn.get("svg"), drawn.get("dot")
    save_dag_json(event_dag, output)
    written = [output]
    if graphml is not None:
        save_graphml(event_dag, graphml)
        written.append(graphml)
    if dot is not None and dot_bytes is not None:
        write_bytes_atomic(dot, dot_bytes)
        written.append(dot)
    if svg is not None and svg_bytes is not None:
        write_bytes_atomic(svg, svg_bytes)
        written.append(svg)
    console = Console(highlight=False)
    console.print(
        f"{event_dag.mode} DAG: {len(event_dag):,} nodes, {event_dag.edge_count:,} edges, "
        f"{int(event_dag.level.max()) + 1} levels -> {', '.join(str(path) for path in written)}"
    )
    for note in event_dag.notes:
        console.print(f"[yellow]note:[/] {note}")
    if path is not None:
        console.print(critical_path_table(path, width=console.width))


def register(app: typer.Typer) -> None:
    """Add the `dag` command."""
    app.command("dag", no_args_is_help=True)(dag)
