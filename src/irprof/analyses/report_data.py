"""Everything the HTML report shows, gathered from a run bundle as plain data."""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from iree.compiler import ir

from irprof.analyses.annotated_level import (
    AnnotatedLevel,
    load_annotated_level,
)
from irprof.analyses.hotspots import GroupBy, HotspotTable, hotspots
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.op_graph import OpGraph, OpGraphOptions, build_op_graph
from irprof.analyses.roofline import Roofline, roofline
from irprof.analyses.run_diff import RunDiff, diff_runs, load_diff_side
from irprof.analyses.scope_tree import ScopeTree, scope_tree
from irprof.analyses.step_stats import (
    NoiseVerdict,
    Stat,
    StepSamples,
    TimeBasis,
    bundle_step_samples,
    noise_verdict,
    step_totals,
)
from irprof.bundle import Manifest, RunBundle
from irprof.coverage import Coverage
from irprof.errors import BundleError, IrprofError, UsageError
from irprof.event_dag import EventDag, build_event_dag

IR_TEXT_LIMIT = 4000  # characters of one op's IR shown in the report
# Characters of location an op's IR keeps (a `file:line:col`, a name and a frame or two); a
# longer chain (TF records ~60 frames per op) is in the op panel's frames, not repeated here.
IR_LOCATION_LIMIT = 240
IR_TEXT_OPS = 3000  # ops whose IR text is embedded (annotated first, then unannotated)
# Installed code, as opposed to the user's own files (the rule of `ProfiledOp.user_source`).
LIBRARY_PARTS = ("site-packages/", "dist-packages/", "/lib/python3")


@dataclass(frozen=True)
class CompactLocation:
    """An op's call-site frames, innermost first, and those that are the user's own code."""

    frames: tuple[str, ...]  # `file:line:col`, innermost first
    user_frames: tuple[str, ...]  # the subset outside `<sys.path>/`, `<frozen ...>`, packages


def is_user_frame(frame: str) -> bool:
    """Whether a `file:line:col` frame is in the user's files, not an import root or package."""
    return not frame.startswith("<") and not any(part in frame for part in LIBRARY_PARTS)


def compact_location(chain: tuple[str, ...]) -> CompactLocation:
    """`ProfiledOp.chain` (innermost first) with its user frames."""
    return CompactLocation(chain, tuple(f for f in chain if is_user_frame(f)))


@dataclass(frozen=True)
class UnannotatedOp:
    """A non-trivial op without a profile and why (from coverage.json when it says)."""

    op_index: int
    op_name: str
    name: str  # runtime name, qualified by its call for private-function ops
    location: str  # innermost source, or the call site for those ops
    reason: str


@dataclass(frozen=True)
class LevelReport:
    """One annotated IR level: its tables, graph, coverage and op texts."""

    annotated: AnnotatedLevel
    by_op: HotspotTable  # a fused kernel or decomposed call is one row (its measured time)
    by_op_expanded: HotspotTable  # every op its own row; shares of a group are estimates
    by_type: HotspotTable
    by_scope: HotspotTable
    graph: OpGraph | None
    coverage: Coverage | None
    unannotated: tuple[UnannotatedOp, ...]
    ir_texts: dict[int, str]
    roofline: Roofline | None = None  # the rows of `by_op` on this machine's roofline
    scopes: ScopeTree | None = None
    diff: RunDiff | None = None  # against the other run, when the report has one
    noise: NoiseVerdict | None = None  # how noisy the steps were (the tables' `noise` too)


@dataclass(frozen=True)
class ReportData:
    """The whole report: run facts, per-level views and the event DAG if present."""

    bundle: str
    manifest: Manifest
    levels: tuple[LevelReport, ...]
    coverages: dict[str, Coverage]
    dag: dict[str, Any] | None  # RUN/dag.json as written by `irprof dag`, when present
    event_dag: EventDag | None  # built from the bundle's trace
    dag_note: str  # why there is no event DAG, or what it was built from
    peaks: MachinePeaks | None = None  # the roofs of the roofline (None: rates without roofs)
    against: str = ""  # the run this one is compared with ("" without a diff)


def _op_text(op: ir.Operation, state: ir.AsmState) -> str:
    """One op's IR with its location when short; a function or loop as its header (it would
    print its whole body).

    Printed with one `AsmState` for the module: `get_asm` numbers the values of the whole
    enclosing function and verifies the op at each call (0.75 ms an op on ResNet50's TF level,
    9 of the report's 20 s), the shared state makes it 0.013 ms for the same text.
    """
    if op.regions:
        text = str(op.get_asm(large_elements_limit=16, assume_verified=True, skip_regions=True))
        return text.split("{", 1)[0].rstrip() + " { ... }"
    buffer = io.StringIO()
    op.print(state=state, file=buffer)
    text = buffer.getvalue()
    if len(text) > 4 * IR_TEXT_LIMIT:  # a large elements attribute, elided as `get_asm` would
        text = str(op.get_asm(large_elements_limit=16, assume_verified=True))
    # A location chain can fill the limit and the page (TF records ~60 frames per op, the
    # report's largest part on ResNet50): the op's operands, attributes and types matter more,
    # and its frames are in the op panel.
    location = str(op.location)
    if len(location) <= IR_LOCATION_LIMIT and len(text) + 1 + len(location) <= IR_TEXT_LIMIT:
        text = f"{text} {location}"
    return text


def _ir_texts(module: ir.Module, wanted: set[int]) -> dict[int, str]:
    """IR text (with the annotation, and its location when short) of the ops at the `wanted`
    walk indices."""
    texts: dict[int, str] = {}
    counter = -1
    state = ir.AsmState(module.operation)

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal counter
        if counter in wanted:
            text = _op_text(op, state)
            texts[counter] = text if len(text) <= IR_TEXT_LIMIT else text[:IR_TEXT_LIMIT] + " ..."
        counter += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return texts


def _unannotated(level: AnnotatedLevel, coverage: Coverage | None) -> tuple[UnannotatedOp, ...]:
    reasons: dict[tuple[str, str], str] = {}
    if coverage is not None:
        reasons = {(op.op_name, op.location): op.reason for op in coverage.unmatched_ops}
    fallback = "no profiled event carries this op's name or source position"
    return tuple(
        UnannotatedOp(
            op_index=op.index,
            op_name=op.op_name,
            # Named and placed like `irprof top` (private-function ops through their call).
            name=op.qualified_name if op.runtime_name or op.call_sites else "",
            location=(op.site_source if op.call_chain else op.source) or op.location,
            reason=reasons.get((op.op_name, op.location))
            or reasons.get((op.op_name, op.source))
            or fallback,
        )
        for op in level.profiled.ops
        if op.profile is None and not op.trivial
    )


def _level_report(
    level: AnnotatedLevel,
    coverage: Coverage | None,
    graph_options: OpGraphOptions,
    peaks: MachinePeaks | None,
    ranking: _Ranking,
) -> LevelReport:
    ops = level.profiled.ops
    profiled_ns = level.profiled.profiled_ns
    unannotated = _unannotated(level, coverage)
    graph = build_op_graph(level.module, level.profiled, graph_options) if ops else None
    wanted = [op.index for op in ops if op.profile is not None]
    wanted += [op.op_index for op in unannotated]
    if graph is not None:
        wanted += [n.op_index for n in graph.nodes if n.op_index is not None]
    noise = noise_verdict(step_totals(ranking.samples), ranking.noise)

    def table(by: GroupBy, expand_groups: bool = False) -> HotspotTable:
        ranked = hotspots(
            ops,
            by=by,
            profiled_ns=profiled_ns,
            expand_groups=expand_groups,
            samples=ranking.samples.values,
            stat=ranking.stat,
            typical=ranking.samples.typical,
        )
        return dataclasses.replace(ranked, noise=noise, oncpu_note=ranking.samples.oncpu_note)

    by_op = table("op")
    return LevelReport(
        annotated=level,
        by_op=by_op,
        by_op_expanded=table("op", expand_groups=True),
        by_type=table("type"),
        by_scope=table("scope"),
        graph=graph,
        coverage=coverage,
        unannotated=unannotated,
        ir_texts=_ir_texts(level.module, set(dict.fromkeys(wanted[:IR_TEXT_OPS]))),
        roofline=roofline(by_op, level.profiled, level.module, level=level.level, peaks=peaks),
        scopes=scope_tree(level.profiled, level=level.level),
        noise=noise,
    )


@dataclass(frozen=True)
class _Ranking:
    """What one level's hotspot tables are ranked by: a statistic of these samples."""

    stat: Stat
    samples: StepSamples
    noise: Any  # the manifest's `options.noise` record (None before it was recorded)


def _load_dag(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        loaded = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise BundleError(f"{path}: not JSON ({exc})") from exc
    return loaded if isinstance(loaded, dict) else None


def _event_dag(bundle: RunBundle) -> tuple[EventDag | None, str]:
    """The causal event DAG of the bundle's primary trace, or None and the reason."""
    try:
        trace = bundle.trace()
        relative = bundle.primary_trace_path.relative_to(bundle.root).as_posix()
    except IrprofError as exc:
        return None, f"trace not readable: {exc}"
    return build_event_dag(trace, mode="causal"), f"causal DAG of {relative}"


def _diffs(
    against: RunBundle, bundle: RunBundle, loaded: dict[str, AnnotatedLevel]
) -> dict[str, RunDiff]:
    """Each level annotated in both runs, `against` as A and `bundle` as B (its levels
    `loaded` once for the whole report)."""
    levels = list(loaded)
    shared = [level for level in levels if level in against.annotated_levels()]
    if not shared:
        raise UsageError(
            f"{against.root} (annotated: {', '.join(against.annotated_levels()) or 'none'}) "
            f"shares no annotated level with {bundle.root} (annotated: {', '.join(levels)}); "
            "annotate the same level in both"
        )
    return {
        level: diff_runs(
            load_diff_side(against, level, str(against.root)),
            load_diff_side(bundle, level, str(bundle.root), loaded[level]),
        )
        for level in shared
    }


def build_report_data(
    bundle: RunBundle,
    *,
    graph_options: OpGraphOptions | None = None,
    peaks: MachinePeaks | None = None,
    against: RunBundle | None = None,
    stat: Stat = "median",
    time: TimeBasis = "oncpu",
) -> ReportData:
    """Load every annotated level of `bundle` and compute what the report shows: with `peaks`
    the roofline's roofs and bounds, with `against` a diff from that run to this one; hotspot
    tables ranked by `stat` of the ops' per-step times (`step_stats`), of `time`."""
    graph_options = graph_options or OpGraphOptions()
    manifest = bundle.manifest()
    levels = bundle.annotated_levels()
    if not levels:
        raise BundleError(
            f"{bundle.root}: no annotated IR under annotated/; run `irprof annotate {bundle.root}`"
        )
    coverages = bundle.coverages()
    loaded = {level: load_annotated_level(bundle, level) for level in levels}
    diffs = _diffs(against, bundle, loaded) if against is not None else {}
    reports = tuple(
        dataclasses.replace(
            _level_report(
                loaded[level],
                coverages.get(level),
                graph_options,
                peaks,
                _Ranking(
                    stat,
                    bundle_step_samples(bundle, loaded[level].profiled.ops, time),
                    manifest.options.get("noise"),
                ),
            ),
            diff=diffs.get(level),
        )
        for level in levels
    )
    event_dag, dag_note = _event_dag(bundle)
    return ReportData(
        bundle=str(bundle.root),
        manifest=manifest,
        levels=reports,
        coverages=coverages,
        dag=_load_dag(bundle.dag_path),
        event_dag=event_dag,
        dag_note=dag_note,
        peaks=peaks,
        against=str(against.root) if against is not None else "",
    )
