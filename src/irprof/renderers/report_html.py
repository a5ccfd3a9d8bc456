"""The static HTML report: one file, inline scripts and styles, data as inert JSON."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from irprof.analyses.hotspots import HotspotTable
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.report_data import LevelReport, ReportData, compact_location
from irprof.analyses.roofline import Roofline
from irprof.analyses.scope_tree import ScopeTree, headline
from irprof.analyses.step_stats import OUTLIER_FLOOR_NS, OUTLIER_MADS, UNSTABLE_RATIO, NoiseVerdict
from irprof.coverage import Coverage
from irprof.errors import IrprofError
from irprof.event_dag import EventDag
from irprof.renderers.dag_svg import DagSvgRenderer
from irprof.renderers.html_page import page
from irprof.renderers.icicle_svg import RENDERER as ICICLE_SVG
from irprof.renderers.icicle_svg import cell_title, icicle_cells
from irprof.renderers.op_graph_html import graph_payload
from irprof.renderers.roofline_svg import RENDERER as ROOFLINE_SVG
from irprof.renderers.roofline_svg import plotted, point_title

DAG_NODES = 300  # longest events drawn in the report's DAG view (Graphviz time stays small)
HOTSPOT_ROWS = 500  # rows per table embedded; the rest is summed in the caption
UNANNOTATED_ROWS = 500


OUTLIER_ROWS = 50


def _noise(verdict: NoiseVerdict | None) -> dict[str, Any] | None:
    return None if verdict is None else dataclasses.asdict(verdict)


def _table(table: HotspotTable, limit: int = HOTSPOT_ROWS) -> dict[str, Any]:
    return {
        "by": table.by,
        "total_ns": table.total_ns,
        "profiled_ns": table.profiled_ns,
        "rows_total": len(table.rows),
        "stat": table.stat,
        "stat_label": table.stat_label,
        "stat_note": table.stat_note,
        "outliers_total": len(table.outliers),
        "outliers": [
            {
                "key": item.key,
                "op_index": item.op_index,
                "step": item.step,
                "value_ns": item.value_ns,
                "median_ns": item.median_ns,
                "excess_ns": item.excess_ns,
                "ratio": item.ratio if item.median_ns else None,
            }
            for item in table.outliers[:OUTLIER_ROWS]
        ],
        "noise": _noise(table.noise),
        "rows": [
            {
                "key": row.key,
                "op_name": row.op_name,
                "total_ns": row.total_ns,
                "share": row.share,
                "count": row.count,
                "mean_ns": row.mean_ns,
                "ops": row.ops,
                "kernels": list(row.kernels),
                "fused_with": list(row.fused_with),
                "location": row.location,
                "op_index": row.op_index,
                "group": row.group,
                "estimated_ns": row.estimated_ns,
                "stat_ns": row.stat_ns,
                "steps": row.steps,
                "step_min_ns": row.step_min_ns,
                "step_median_ns": row.step_median_ns,
                "step_max_ns": row.step_max_ns,
                "unstable": row.unstable,
            }
            for row in table.rows[:limit]
        ],
    }


def _op(op: ProfiledOp, ir_text: str | None, frames: dict[str, int]) -> dict[str, Any]:
    """One op's panel data; its frames as indices into the level's `frames` table (an op of
    TF has ~60, mostly shared by every op of its layer: written once, the page is 3 MB smaller
    on ResNet50)."""
    compact = compact_location(op.chain)
    return {
        "index": op.index,
        "op_name": op.op_name,
        "function": op.function,
        # Named like `irprof top`: a private function's `max` through the call reaching it.
        "name": op.qualified_name if op.runtime_name or op.call_sites else "",
        "runtime_name": op.runtime_name,
        "call_site": op.site_source if op.call_chain else "",
        "call_sites": op.call_sites,
        "scope": op.scope,
        "source": op.site_source,
        # The panel shows the user frames and, behind a toggle, the whole chain (innermost
        # first); the rendered location only when there is no chain (it would repeat it).
        "location": "" if compact.frames else op.location,
        "frames": [frames.setdefault(frame, len(frames)) for frame in compact.frames],
        "user_frames": [frames.setdefault(frame, len(frames)) for frame in compact.user_frames],
        "profile": op.profile.to_json() if op.profile else None,
        "ir": ir_text,
    }


def _coverage(coverage: Coverage | None) -> dict[str, Any] | None:
    return None if coverage is None else coverage.to_json()


def _roofline(data: Roofline) -> dict[str, Any]:
    """The roofline's figures, its SVG and the drawn points' data (keyed as the SVG's ids)."""
    payload = data.to_json()
    payload["points"] = payload["points"][:HOTSPOT_ROWS]
    payload["rows_total"] = len(data.points)
    payload["svg"] = ROOFLINE_SVG.render(data).decode("utf-8")
    payload["nodes"] = {
        f"p{index}": {
            "id": f"p{index}",
            "label": point.key,
            "title": point_title(point),
            "location": point.location,
            "scope": point.op_name,
            "detail": point.bound,
            "op_index": point.op_index,
            "row": index,
        }
        for index, point in enumerate(data.points)
        if plotted(point)
    }
    return payload


def _scopes(tree: ScopeTree) -> dict[str, Any]:
    """The icicle's SVG, each drawn cell's data and the headline scopes of the summary."""
    cells = icicle_cells(tree)
    ids = {id(cell.node): cell.id for cell in cells}
    total = tree.root.total_ns or 1
    return {
        "profiled_ns": tree.profiled_ns,
        "total_ns": tree.root.total_ns,
        "svg": ICICLE_SVG.render(tree).decode("utf-8"),
        "cells": {
            cell.id: {
                "id": cell.id,
                "label": cell.node.name,
                "title": cell_title(cell.node, total),
                "path": cell.node.path,
                "kind": cell.node.kind,
                "total_ns": cell.node.total_ns,
                "share": cell.node.total_ns / total,
                "ops": cell.node.ops,
                "estimated_ns": cell.node.estimated_ns,
                "op_index": cell.node.op_index,
                "op_name": cell.node.op_name,
                "location": cell.node.location,
                "scope": cell.node.path,
                "detail": cell.node.kind,
                "x0": cell.x0,
                "x1": cell.x1,
                "children": [ids[id(c)] for c in cell.node.children if id(c) in ids],
            }
            for cell in cells
        },
        "headline": [
            {
                "path": node.path,
                "name": node.name,
                "kind": node.kind,
                "total_ns": node.total_ns,
                "share": node.total_ns / total,
                "ops": node.ops,
                "estimated_ns": node.estimated_ns,
            }
            for node in headline(tree)
        ],
    }


def _graph(report: LevelReport) -> dict[str, Any]:
    """The op graph's payload, or why it is not drawn: a graph Graphviz cannot lay out (too
    many nodes, no `dot`, a timeout) leaves the rest of the report as it is."""
    if report.graph is None:
        return {"graph": None, "graph_note": "no function to draw at this level"}
    try:
        return {"graph": graph_payload(report.graph), "graph_note": ""}
    except IrprofError as exc:
        return {"graph": None, "graph_note": f"op graph not drawn: {exc}"}


def _level(report: LevelReport) -> dict[str, Any]:
    profiled = report.annotated.profiled
    shown = {row["op_index"] for row in _table(report.by_op)["rows"]}
    shown |= {row["op_index"] for row in _table(report.by_op_expanded)["rows"]}
    shown |= set(report.ir_texts)
    if report.scopes is not None:
        shown |= {cell.node.op_index for cell in icicle_cells(report.scopes)}
    frames: dict[str, int] = {}  # filled by `_op`, in first-seen order
    return {
        "level": report.annotated.level,
        "path": report.annotated.path.name,
        "profiled_ns": profiled.profiled_ns,
        "ops_total": len(profiled.ops),
        "ops_annotated": len(profiled.annotated),
        "summary": profiled.summary,
        "by_op": _table(report.by_op),
        "by_op_expanded": _table(report.by_op_expanded),
        "by_type": _table(report.by_type),
        "by_scope": _table(report.by_scope),
        "ops": {
            str(op.index): _op(op, report.ir_texts.get(op.index), frames)
            for op in profiled.ops
            if op.index in shown
        },
        "frames": list(frames),  # every op's `frames` index this table
        **_graph(report),
        "coverage": _coverage(report.coverage),
        "unannotated": [
            {
                "op_index": op.op_index,
                "op_name": op.op_name,
                "name": op.name,
                "location": op.location,
                "reason": op.reason,
            }
            for op in report.unannotated[:UNANNOTATED_ROWS]
        ],
        "unannotated_total": len(report.unannotated),
        "roofline": _roofline(report.roofline) if report.roofline is not None else None,
        "scopes": _scopes(report.scopes) if report.scopes is not None else None,
        "diff": report.diff.to_json() if report.diff is not None else None,
    }


def _event_dag(dag: EventDag, note: str) -> dict[str, Any]:
    """The DAG's SVG (its longest events) and the data of the drawn nodes."""
    renderer = DagSvgRenderer(max_nodes=DAG_NODES)
    order = np.lexsort((np.arange(len(dag)), -dag.dur_ns))[:DAG_NODES]
    # Starts from the trace's first event: epoch nanoseconds read as "1795502954 s".
    origin = int(dag.ts_ns.min()) if len(dag) else 0
    nodes = {
        f"n{node}": {
            "id": f"n{node}",
            "kind": "event",
            "label": dag.node_name(node),
            "title": dag.node_name(node),
            "location": dag.track_labels[int(dag.track[node])],
            "scope": dag.track_labels[int(dag.track[node])],
            "total_ns": int(dag.dur_ns[node]),
            "ts_ns": int(dag.ts_ns[node]) - origin,
            "share": None,
            "ops": 0,
            "op_index": None,
            "detail": f"level {int(dag.level[node])}",
        }
        for node in order.tolist()
    }
    return {
        "note": note,
        "mode": dag.mode,
        "events": len(dag),
        "edges": dag.edge_count,
        "svg": renderer.render(dag).decode("utf-8") if len(dag) else "",
        "nodes": nodes,
    }


def report_payload(data: ReportData) -> dict[str, Any]:
    """The JSON the report's script reads."""
    manifest = data.manifest
    return {
        "bundle": data.bundle,
        "manifest": manifest.to_json(),
        "levels": [_level(level) for level in data.levels],
        "dag": data.dag,
        "event_dag": (
            _event_dag(data.event_dag, data.dag_note) if data.event_dag is not None else None
        ),
        "dag_note": data.dag_note,
        "peaks": data.peaks.to_json() if data.peaks is not None else None,
        "against": data.against,
        "step_rules": {
            "outlier_mads": OUTLIER_MADS,
            "outlier_floor_ns": OUTLIER_FLOOR_NS,
            "unstable_ratio": UNSTABLE_RATIO,
        },
    }


@dataclass(frozen=True)
class ReportRenderer:
    """`report.html`."""

    name: str = "report-html"
    extension: str = ".html"

    def render(self, data: ReportData) -> bytes:
        """The self-contained page."""
        title = f"irprof report · {data.manifest.model} ({data.manifest.framework})"
        html_text = page(
            title=title,
            data=report_payload(data),
            scripts=("graph_view.js", "report.js"),
            styles=("report.css",),
        )
        return html_text.encode("utf-8")


RENDERER = ReportRenderer()
