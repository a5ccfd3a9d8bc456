"""`irprof-annotate{profile=PATH attr=irprof|thesis}`: attach an `opprofile.json` to the ops."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.annotation import AttributeBuilder, Layout, attach_summary, attribute_name
from irprof.mlir.gcpause import gc_paused
from irprof.mlir.op_index import OpIndex, derive_op_keys
from irprof.opprofile import OpProfile, OpProfileEntry


@dataclass(frozen=True)
class ApplyResult:
    """What applying an OpProfile did: annotated op positions and entries that found no op."""

    annotated: frozenset[int]  # walk-order positions in the OpIndex
    unmatched_entries: tuple[OpProfileEntry, ...]
    index: OpIndex


def apply_opprofile(
    root: ir.Module | ir.Operation,
    opprofile: OpProfile,
    *,
    layout: Layout = "irprof",
    index: OpIndex | None = None,
) -> ApplyResult:
    """Attach each entry's data to every op its key matches; writes the module summary."""
    with gc_paused():
        return _apply(root, opprofile, layout, index)


def _apply(
    root: ir.Module | ir.Operation, opprofile: OpProfile, layout: Layout, index: OpIndex | None
) -> ApplyResult:
    index = index or OpIndex(derive_op_keys(root))
    operation = root.operation if isinstance(root, ir.Module) else root
    matched: list[tuple[OpProfileEntry, list[int]]] = []
    unmatched: list[OpProfileEntry] = []
    for entry in opprofile.entries:
        # An entry without any key field would vacuously match every op: a correlator bug.
        positions = [] if entry.key.is_empty else index.match_positions(entry.key)
        if positions:
            matched.append((entry, positions))
        else:
            unmatched.append(entry)
    annotated: set[int] = set()
    if matched:
        # One attribute per entry, shared by every op the entry matches (attributes are uniqued).
        name = attribute_name(layout)
        builder = AttributeBuilder(operation.context)
        attributes = builder.profiles([entry.data for entry, _ in matched], layout)
        op_at = index.op_at
        for attribute, (_, positions) in zip(attributes, matched, strict=True):
            for position in positions:
                op_at(position).operation.attributes[name] = attribute
            annotated.update(positions)
    totals = opprofile.totals
    attach_summary(
        operation,
        {
            "source_trace": opprofile.source_trace,
            "framework": opprofile.framework,
            "level": opprofile.level,
            "profiled_ns": int(totals.get("profiled_ns", 0)),
            "attributed_ns": int(totals.get("attributed_ns", 0)),
            "ops_total": len(index),
            "ops_annotated": len(annotated),
            "entries_unmatched": len(unmatched),
        },
    )
    return ApplyResult(frozenset(annotated), tuple(unmatched), index)


@dataclass(frozen=True)
class AnnotatePass:
    """Loads `profile` (an opprofile.json) and attaches each entry to the ops its key matches."""

    name: ClassVar[str] = "irprof-annotate"
    summary: ClassVar[str] = "attach opprofile.json measurements as irprof.profile attributes"
    profile: Path
    attr: Layout = "irprof"

    def run(self, root: ir.Operation) -> None:
        """Annotate in place."""
        apply_opprofile(root, OpProfile.load(self.profile), layout=self.attr)
