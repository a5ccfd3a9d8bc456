"""Run B's annotated IR with the diff written into it: `irprof.diff` on each compared op.

`irprof.diff = {a_ns, b_ns, delta_ns, delta_pct, low_ns, high_ns, significant, match, method}`
(per-step times as i64 ns; `delta_pct` f64, absent when A had no time; `low_ns`/`high_ns` the
interval of the delta, absent when it could not be estimated) and one module attribute
`irprof.diff_summary = {run_a, run_b, level_a, level_b, a_ns, b_ns, delta_ns, significant}`.
Ops only in A have no op in B to carry them; they stay in the JSON and the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from irprof.analyses.run_diff import DiffRow, RunDiff
from irprof.errors import UsageError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module_bytes
from irprof.mlir.op_index import derive_op_infos, root_operation

DIFF_ATTR = "irprof.diff"
DIFF_SUMMARY_ATTR = "irprof.diff_summary"


@dataclass(frozen=True)
class DiffIR:
    """What the renderer reads: the diff and the path of B's annotated level."""

    diff: RunDiff
    b_annotated_path: str


def _fields(row: DiffRow, context: ir.Context) -> dict[str, ir.Attribute]:
    i64 = ir.IntegerType.get_signless(64, context)
    f64 = ir.F64Type.get(context)

    def integer(value: float) -> ir.Attribute:
        return ir.IntegerAttr.get(i64, round(value))

    fields = {
        "a_ns": integer(row.a_ns),
        "b_ns": integer(row.b_ns),
        "delta_ns": integer(row.delta_ns),
        "significant": ir.BoolAttr.get(row.significant, context),
    }
    if row.delta_pct is not None:
        fields["delta_pct"] = ir.FloatAttr.get(f64, row.delta_pct)
    if row.interval is not None:
        fields["low_ns"] = integer(row.interval[0])
        fields["high_ns"] = integer(row.interval[1])
    return fields


def attach_diff(module: ir.Module, diff: RunDiff) -> int:
    """Set `irprof.diff` on the ops of B that have a row and the summary on the module;
    returns the number of ops annotated."""
    context = module.context
    with context, ir.Location.unknown(context):
        infos = derive_op_infos(module)
        annotated = 0
        for row in diff.ops:
            if row.b_index < 0:
                continue
            if row.b_index >= len(infos) or infos[row.b_index].op_name != row.kind:
                raise UsageError(
                    f"op #{row.b_index} of B's IR is not the {row.kind} the diff compared; "
                    "the annotated IR changed since the diff was computed"
                )
            fields = _fields(row, context)
            fields["match"] = ir.StringAttr.get(row.match, context)
            fields["method"] = ir.StringAttr.get(row.method, context)
            infos[row.b_index].op.attributes[DIFF_ATTR] = ir.DictAttr.get(fields, context)
            annotated += 1
        summary = _fields(diff.total, context)
        for name, value in (
            ("run_a", diff.run_a),
            ("run_b", diff.run_b),
            ("level_a", diff.level_a),
            ("level_b", diff.level_b),
        ):
            summary[name] = ir.StringAttr.get(value, context)
        root_operation(module).attributes[DIFF_SUMMARY_ATTR] = ir.DictAttr.get(summary, context)
    return annotated


@dataclass(frozen=True)
class DiffMlirRenderer:
    """B's annotated `.mlir` with `irprof.diff` attributes."""

    name: str = "diff-mlir"
    extension: str = ".mlir"

    def render(self, data: DiffIR) -> bytes:
        """MLIR text with locations."""
        module = load_module(data.b_annotated_path, make_context())
        attach_diff(module, data.diff)
        return print_module_bytes(module, debug_info=True)


RENDERER = DiffMlirRenderer()
