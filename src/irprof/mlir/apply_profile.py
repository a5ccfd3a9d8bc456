"""Write an `OpProfile` into a module: per-op attributes and one `irprof.summary`.

`annotate_module` is the one place the module summary is written, whatever asked for the
annotation: `irprof annotate`, the `irprof-annotate` and `irprof-tf-pgo` passes, or `reattach`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

from iree.compiler import ir

from irprof.coverage import Coverage
from irprof.mlir.gc_pause import gc_paused
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import OpIndex, derive_key_columns, derive_op_keys
from irprof.mlir.profile_attrs import (
    PROFILE_ATTRS,
    AttributeBuilder,
    Layout,
    ModuleSummary,
    attach_summary,
    attribute_name,
    has_profile,
)
from irprof.mlir.profile_table import ROW_ATTR, TABLE_ATTR, write_table
from irprof.opprofile import OpProfile, OpProfileEntry

# Per-op profile dictionaries the compact layout removes from the ops it writes.
_PER_OP_DICTS = tuple(name for name in PROFILE_ATTRS if name != ROW_ATTR)


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
    """Attach each entry's data to every op its key matches (no module summary)."""
    with gc_paused():
        return _apply(root, opprofile, layout, index)


def _apply(
    root: ir.Module | ir.Operation, opprofile: OpProfile, layout: Layout, index: OpIndex | None
) -> ApplyResult:
    index = index or OpIndex.of_columns(derive_key_columns(root))
    operation = root.operation if isinstance(root, ir.Module) else root
    entries = opprofile.entries
    # An entry without any key field would vacuously match every op: a correlator bug.
    found = index.match_many([entry.key for entry in entries], skip_empty=True)
    matched: list[tuple[OpProfileEntry, list[int]]] = []
    unmatched: list[OpProfileEntry] = []
    for entry, positions in zip(entries, found, strict=True):
        if positions:
            matched.append((entry, positions))
        else:
            unmatched.append(entry)
    annotated: set[int] = set()
    name = attribute_name(layout)  # rejects an unknown layout
    op_at = index.op_at
    if name == ROW_ATTR:
        # Written even when nothing matched: a table on the module replaces the previous one.
        write_table(
            operation,
            [entry.data for entry, _ in matched],
            index.ops,
            [positions for _, positions in matched],
            replaces=_PER_OP_DICTS,
        )
        annotated.update(chain.from_iterable(positions for _, positions in matched))
    elif matched:
        # One attribute per entry, shared by every op the entry matches (attributes are uniqued).
        builder = AttributeBuilder(operation.context)
        attributes = builder.profiles([entry.data for entry, _ in matched], layout)
        # Ops of a compact table lose their row, so no op carries two profiles.
        replaced = ROW_ATTR if TABLE_ATTR in operation.attributes else None
        for attribute, (_, positions) in zip(attributes, matched, strict=True):
            for position in positions:
                op_attributes = op_at(position).operation.attributes
                op_attributes[name] = attribute
                if replaced is not None and replaced in op_attributes:
                    del op_attributes[replaced]
            annotated.update(positions)
    return ApplyResult(frozenset(annotated), tuple(unmatched), index)


def annotate_module(
    root: ir.Module | ir.Operation,
    opprofile: OpProfile,
    *,
    layout: Layout = "irprof",
    coverage: Coverage | None = None,
) -> ApplyResult:
    """Attach `opprofile` to the ops it names and record the module summary once.

    `coverage` is the correlator's record for this module; without one (an opprofile.json
    applied by a pass), the summary's op counts are taken from the annotated module itself.
    """
    applied = apply_opprofile(root, opprofile, layout=layout)
    write_summary(
        root,
        opprofile,
        coverage=coverage,
        entries_unmatched=len(applied.unmatched_entries),
        index=applied.index,
    )
    return applied


def write_summary(
    root: ir.Module | ir.Operation,
    opprofile: OpProfile,
    *,
    coverage: Coverage | None = None,
    entries_unmatched: int = 0,
    index: OpIndex | None = None,
) -> None:
    """Set `irprof.summary` from `opprofile` and its coverage (derived from the module if None;
    `index`: the module's ops and keys when the caller has them, e.g. `ApplyResult.index`)."""
    if coverage is None:
        coverage = _module_coverage(root, opprofile, index)
    attach_summary(
        root,
        ModuleSummary.of(
            coverage,
            source_trace=opprofile.source_trace,
            framework=opprofile.framework,
            entries_unmatched=entries_unmatched,
            reattached_from=str(opprofile.totals.get("reattached_from", "")),
        ),
    )


def _module_coverage(
    root: ir.Module | ir.Operation, opprofile: OpProfile, index: OpIndex | None
) -> Coverage:
    keyed = derive_op_keys(root) if index is None else index.keyed_ops()
    annotated = [position for position, (op, _) in enumerate(keyed) if has_profile(op)]
    return coverage_for(
        keyed,
        annotated,
        level=opprofile.level,
        profiled_ns=int(opprofile.totals.get("profiled_ns", 0)),
        attributed_ns=int(opprofile.totals.get("attributed_ns", 0)),
    )
