"""`irprof demo`: capture, annotate, DAG, report and hotspots on a bundled example, in one go."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from irprof.analyses.machine_peaks import resolve_peaks
from irprof.api import capture_model
from irprof.bundle import RunBundle
from irprof.coverage import Coverage
from irprof.errors import UsageError
from irprof.event_dag.export import save_dag_json
from irprof.fileio import write_bytes_atomic
from irprof.frameworks import get_all_frameworks
from irprof.renderers.dag_svg import DagSvgRenderer
from irprof.renderers.hotspot_table import hotspot_rich_table

REPO_ROOT = Path(__file__).resolve().parents[3]
DAG_SVG_NODES = 400


def _example_path(relative: str) -> Path:
    """The bundled example, looked up in the working directory first, then beside the package."""
    for root in (Path.cwd(), REPO_ROOT):
        candidate = root / relative
        if candidate.is_file():
            return candidate
    raise UsageError(f"{relative}: bundled example not found; run `irprof demo` from the checkout")


def _fresh_output(out: Path) -> None:
    """Replace an earlier demo bundle; never delete a directory irprof did not write."""
    if not out.exists():
        return
    if not RunBundle(out).is_bundle():
        raise UsageError(f"{out}: exists and is not a run bundle; choose another -o")
    shutil.rmtree(out)


def coverage_line(coverage: Coverage) -> str:
    """One line per level: time and op coverage, and the largest unmatched event if any."""
    line = (
        f"level {coverage.level}: {coverage.time_coverage:.1%} of "
        f"{coverage.profiled_ns / 1e6:,.3f} ms profiled op time attributed, "
        f"{coverage.ops_nontrivial_annotated}/{coverage.ops_nontrivial} non-trivial ops annotated"
    )
    if coverage.ops_untimed:
        line += (
            f" (+{coverage.ops_untimed} seen running with no time of their own, each listed "
            "with why)"
        )
    if coverage.unmatched_events:
        worst = coverage.unmatched_events[0]
        line += (
            f"; largest unmatched: {worst.name} ({worst.total_ns / 1e6:,.3f} ms, {worst.reason})"
        )
    return line


def demo(
    framework: Annotated[
        str, typer.Option("--framework", "-f", help="Stack to demonstrate (see `irprof capture`).")
    ] = "tf",
    output: Annotated[Path, typer.Option("-o", "--output", help="Run bundle to write.")] = Path(
        "demo-run"
    ),
    top: Annotated[int, typer.Option("-n", "--top", help="Hot ops to list.")] = 10,
) -> None:
    """Run the whole loop on the framework's bundled example and say where every output is."""
    if top < 1:
        raise UsageError(f"-n {top}: must be at least 1")
    console = Console(highlight=False)
    chosen = get_all_frameworks().get(framework)
    script = _example_path(chosen.example)
    _fresh_output(output)

    console.rule(f"[bold]1/4 capture[/] {chosen.example} under the {framework} profiler")
    run = capture_model(framework, script, output, **chosen.demo_options)
    shown = RunBundle(output)  # paths as the user wrote them, for the messages
    manifest = run.manifest()
    console.print(f"IR levels: {', '.join(manifest.ir_levels)}; trace: {manifest.trace_files[0]}")

    console.rule("[bold]2/4 correlate and annotate[/]")
    levels = run.annotatable_levels()
    for level in levels:
        outcome = run.annotate(level)
        console.print(coverage_line(outcome.coverage), markup=False)
    console.print(f"full coverage reports: irprof annotate {shown.root} --level LEVEL")

    console.rule("[bold]3/4 event DAG and report[/]")
    event_dag = run.dag("causal").dag
    save_dag_json(event_dag, run.dag_path)
    dag_svg = run.root / "dag.svg"
    write_bytes_atomic(dag_svg, DagSvgRenderer(max_nodes=DAG_SVG_NODES).render(event_dag))
    # The roofline's roofs, as `irprof report` draws them: this machine's peaks (cached).
    run.report(peaks=resolve_peaks(None, None, None))

    console.rule(f"[bold]4/4 hottest ops[/] (level {levels[0]})")
    view = run.top_view(levels[0], limit=top)
    console.print(
        hotspot_rich_table(
            view.table, view.profiled, script=view.script, title=view.script, width=console.width
        )
    )

    console.rule("[bold]outputs[/]")
    outputs = [
        ("run bundle", shown.root),
        *((f"annotated {level} IR", shown.annotated_path(level)) for level in levels),
        *((f"{level} per-op profile", shown.opprofile_level_path(level)) for level in levels),
        ("coverage", shown.coverage_path),
        ("event DAG (JSON)", shown.dag_path),
        ("event DAG (SVG)", shown.root / "dag.svg"),
        ("HTML report", shown.report_path),
    ]
    width = max(len(label) for label, _ in outputs)
    for label, path in outputs:
        console.print(f"{label:>{width}}: {path}", markup=False)
    console.print("next:")
    for command in (
        f"irprof top {shown.root} --by scope",
        f"irprof graph {shown.annotated_path(levels[0])} -o graph.svg",
        f"irprof export {shown.root} --to perfetto -o trace.pftrace  (open in ui.perfetto.dev)",
        f"irprof opt {shown.annotated_path(levels[0])} "
        "--pass-pipeline='builtin.module(irprof-strip, canonicalize)'",
    ):
        console.print(f"  {command}", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the `demo` command."""
    app.command("demo")(demo)
