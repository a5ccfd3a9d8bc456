"""`irprof dag TRACE -o dag.json [--graphml F] [--dot F] [--svg F]`: the event DAG."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.errors import UsageError
from irprof.event_dag.export import save_dag_json, save_graphml
from irprof.event_dag.model import DAG_MODES, DagFilter, build_event_dag
from irprof.fileio import write_bytes_atomic
from irprof.readers import get_all_readers, read_trace
from irprof.renderers.dag_dot import DagDotRenderer
from irprof.renderers.dag_svg import DagSvgRenderer


def dag(
    trace_path: Annotated[
        Path,
        typer.Argument(metavar="TRACE", help="Trace file (.xplane.pb, .json[.gz]) or its dir."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="dag.json to write.")],
    graphml: Annotated[Path | None, typer.Option("--graphml", help="Also write GraphML.")] = None,
    dot: Annotated[Path | None, typer.Option("--dot", help="Also write Graphviz DOT.")] = None,
    svg: Annotated[
        Path | None, typer.Option("--svg", help="Also write an SVG (needs Graphviz `dot`).")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="causal (default) or levels (the thesis's layering).")
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
) -> None:
    """Build the event DAG of a trace and write dag.json (+ GraphML, DOT, SVG)."""
    if mode not in DAG_MODES:
        raise UsageError(f"--mode {mode!r}: expected one of {'|'.join(DAG_MODES)}")
    if min_dur_ns < 0 or max_svg_nodes < 1:
        raise UsageError("--min-dur-ns must be >= 0 and --max-svg-nodes >= 1")
    if format_name is not None and format_name not in get_all_readers():
        known = ", ".join(get_all_readers().names())
        raise UsageError(f"--format {format_name!r}: expected one of {known}")
    trace = read_trace(trace_path, format_name)
    event_dag = build_event_dag(trace, mode, DagFilter(min_dur_ns, track, name))
    if len(event_dag) == 0:
        raise UsageError(f"{trace_path}: no event passes the filters; nothing to write")
    # Render everything before writing anything, so a failure leaves no partial set of files.
    svg_bytes = DagSvgRenderer(max_nodes=max_svg_nodes).render(event_dag) if svg else None
    dot_bytes = DagDotRenderer(max_nodes=max_svg_nodes).render(event_dag) if dot else None
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


def register(app: typer.Typer) -> None:
    """Add the `dag` command."""
    app.command("dag", no_args_is_help=True)(dag)
