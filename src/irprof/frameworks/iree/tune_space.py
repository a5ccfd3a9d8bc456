"""What `irprof tune` may change in one dispatch: its root op, IREE's default configuration, and
the candidate lowering configurations around it, as a transform-dialect tuning spec.

IREE's llvm-cpu backend configures each dispatch on its root op (the op whose
`#iree_cpu.lowering_config` carries `distribution` tile sizes); a `compilation_info` attribute on
that op, set by a tuning spec loaded with `--iree-codegen-tuning-spec-path`, replaces the
heuristic. Attributes written on StableHLO ops are dropped when they are converted to linalg, so
the spec matches the root op by structure (`transform.iree.match.cast_compatible_dag_from_root`:
op, operand and result types, attributes), which IREE's own tuner does too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import func

from irprof.mlir.context import make_context

CONFIG_ATTR = "lowering_config"
TILE_LEVEL = "distribution"
PARALLEL_VECTORS = "vector_common_parallel"
_FIELD = re.compile(r"(\w+)\s*=\s*\[([-\d,\s]*)\]")


@dataclass(frozen=True)
class RootOp:
    """The op IREE configures one dispatch on, with the configuration it chose."""

    dispatch: str  # the dispatch function (export) symbol
    op: str
    matcher: str  # `^bb0(...): <generic op>` body for cast_compatible_dag_from_root
    lowering_config: str
    translation_info: str
    loop_ranges: tuple[int, ...]  # static loop ranges of the root op (0 when unknown)
    config: str  # the whole configured executable, for reference

    @property
    def unmatchable(self) -> str:
        """Why a tuning spec cannot select this op by structure, or ""."""
        if "<<UNKNOWN SSA VALUE>>" in self.matcher:
            return (
                "its body uses a value defined outside the op (a captured constant), which "
                "cast_compatible_dag_from_root cannot express"
            )
        if "memref<" in self.matcher.splitlines()[0]:
            return "it is configured on buffers (a copy dispatch); tuning specs match tensor ops"
        return ""

    @property
    def tiles(self) -> dict[str, tuple[int, ...]]:
        """Tile-size lists of the default lowering configuration by level."""
        return tile_levels(self.lowering_config)


@dataclass(frozen=True)
class Candidate:
    """One code-generation choice for one dispatch."""

    id: str
    lowering_config: str
    translation_info: str
    why: str


def tile_levels(config: str) -> dict[str, tuple[int, ...]]:
    """`{level: sizes}` of `#iree_cpu.lowering_config<distribution = [..], ...>` text."""
    return {
        name: tuple(int(v) for v in values.replace(" ", "").split(",") if v)
        for name, values in _FIELD.findall(config)
    }


def render_config(levels: dict[str, tuple[int, ...]]) -> str:
    """`#iree_cpu.lowering_config<...>` text of `levels`."""
    body = ", ".join(f"{name} = [{', '.join(map(str, sizes))}]" for name, sizes in levels.items())
    return f"#iree_cpu.lowering_config<{body}>"


def _func_of(op: ir.Operation) -> ir.Operation | None:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent


def _loop_ranges(op: ir.Operation) -> tuple[int, ...]:
    """Static loop ranges of a linalg op from its indexing maps and operand shapes."""
    if "indexing_maps" not in op.attributes:
        return ()
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if not maps:
        return ()
    ranges = [0] * maps[0].n_dims
    for operand, affine in zip(op.operands, maps, strict=False):
        kind = operand.type.maybe_downcast()
        if not isinstance(kind, ir.RankedTensorType):
            continue
        shape = kind.shape
        for position, expr in enumerate(affine.results):
            dim = expr.maybe_downcast()
            if isinstance(dim, ir.AffineDimExpr) and position < len(shape) and shape[position] > 0:
                ranges[dim.position] = shape[position]
    return tuple(ranges)


def _matcher(root: ir.Operation) -> str:
    """The root op as a standalone block over arguments of its operand types, without config."""
    with root.context, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            types = [value.type for value in root.operands]
            function = func.FuncOp("m", ir.FunctionType.get(types, []))
            block = function.add_entry_block()
            with ir.InsertionPoint(block):
                clone = root.clone()
                for position, argument in enumerate(block.arguments):
                    clone.operands[position] = argument
                del clone.attributes[CONFIG_ATTR]
                func.ReturnOp([])
        body = clone.get_asm(print_generic_op_form=True)
        arguments = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
    return f"^bb0({arguments}):\n{body}"


def _configured_roots(module: ir.Module) -> list[ir.Operation]:
    """Ops carrying a lowering configuration with workgroup (`distribution`) tile sizes."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        config = op.attributes.get(CONFIG_ATTR, None)
        if config is not None and f"{TILE_LEVEL} =" in str(config):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def root_ops(configured: Path) -> list[RootOp]:
    """The root op of every dispatch in IREE's `--iree-hal-dump-executable-configurations-to`."""
    roots: list[RootOp] = []
    context = make_context()
    for path in sorted(configured.glob("*.mlir")):
        text = path.read_text(encoding="utf-8")
        with context:
            module = ir.Module.parse(text)
            for op in _configured_roots(module):
                function = _func_of(op)
                if function is None or "translation_info" not in function.attributes:
                    continue
                roots.append(
                    RootOp(
                        dispatch=ir.StringAttr(function.attributes["sym_name"]).value,
                        op=op.name,
                        matcher=_matcher(op),
                        lowering_config=str(op.attributes[CONFIG_ATTR]),
                        translation_info=str(function.attributes["translation_info"]),
                        loop_ranges=_loop_ranges(op),
                        config=text,
                    )
                )
    return roots


def _scaled(
    sizes: tuple[int, ...], factor: float, ranges: tuple[int, ...], only: int | None = None
) -> tuple[int, ...]:
    """`sizes` times `factor` (every non-zero entry, or only position `only`), each at least 1
    and at most its loop's static range."""
    out = []
    for position, size in enumerate(sizes):
        if size <= 0 or (only is not None and position != only):
            out.append(size)
            continue
        new = max(1, int(size * factor))
        limit = ranges[position] if position < len(ranges) and ranges[position] > 0 else None
        out.append(min(new, limit) if limit is not None else new)
    return tuple(out)


def _vector_dims(sizes: tuple[int, ...]) -> list[int]:
    """Positions of the parallel vector tile sizes above 1 (the dimensions actually vectorised)."""
    return [position for position, size in enumerate(sizes) if size > 1]


def candidates(root: RootOp, extra: tuple[str, ...] = ()) -> list[Candidate]:
    """Configurations around IREE's default for `root`: larger and smaller workgroup tiles,
    shallower and deeper reduction vectors, the innermost or outermost vectorised parallel
    dimension doubled; then any `extra` lowering configurations given by the user (as they
    are)."""
    levels = root.tiles
    ranges = root.loop_ranges
    proposals: list[tuple[str, dict[str, tuple[int, ...]], str]] = []

    def vary(level: str, factor: float, label: str, why: str, only: int | None = None) -> None:
        if level not in levels:
            return
        changed = dict(levels)
        changed[level] = _scaled(levels[level], factor, ranges, only)
        if changed[level] != levels[level]:
            proposals.append((label, changed, why))

    vary(TILE_LEVEL, 2.0, "dist-x2", "workgroup tiles doubled (fewer, larger workgroups)")
    vary(TILE_LEVEL, 0.5, "dist-x0.5", "workgroup tiles halved (more workgroups for the cores)")
    vary("vector_reduction", 0.25, "red-x0.25", "reduction vector tile quartered")
    vary("vector_reduction", 2.0, "red-x2", "reduction vector tile doubled")
    vectorised = _vector_dims(levels.get(PARALLEL_VECTORS, ()))
    if vectorised:
        vary(PARALLEL_VECTORS, 2.0, "vec-inner-x2", "innermost vector size doubled", vectorised[-1])
    if len(vectorised) > 1:
        vary(PARALLEL_VECTORS, 2.0, "vec-outer-x2", "outer vector size doubled", vectorised[0])
    found: list[Candidate] = []
    seen = {root.lowering_config}
    for label, changed, why in proposals:
        text = render_config(changed)
        if text not in seen:
            seen.add(text)
            found.append(Candidate(label, text, root.translation_info, why))
    for number, text in enumerate(extra):
        found.append(Candidate(f"user-{number}", text, root.translation_info, "given with --try"))
    return found


def tuning_spec(choices: list[tuple[RootOp, Candidate]]) -> str:
    """A tuning spec setting each chosen `compilation_info` on the root op it was measured on."""
    matchers: list[str] = []
    entries: list[str] = []
    for number, (root, candidate) in enumerate(choices):
        body = "\n".join("      " + line for line in root.matcher.splitlines())
        matchers.append(
            f"  // {root.dispatch}: {candidate.id}\n"
            f"  transform.named_sequence @match_{number}(%root: !transform.any_op "
            "{transform.readonly}) -> (!transform.any_op, !transform.any_param) {\n"
            "    %ins, %outs = transform.iree.match.cast_compatible_dag_from_root %root {\n"
            f"{body}\n"
            "    } : (!transform.any_op) -> (!transform.any_value, !transform.any_value)\n"
            "    %config = transform.param.constant #iree_codegen.compilation_info<"
            f"lowering_config = {candidate.lowering_config}, "
            f"translation_info = {candidate.translation_info}> -> !transform.any_param\n"
            "    transform.yield %root, %config : !transform.any_op, !transform.any_param\n"
            "  }\n"
        )
        entries.append(f"@match_{number} -> @apply_op_config")
    return (
        "module @irprof_tuning attributes {transform.with_named_sequence, "
        "iree_codegen.tuning_spec_with_default_entrypoint} {\n"
        "  transform.named_sequence @apply_op_config(%op: !transform.any_op "
        "{transform.readonly}, %config: !transform.any_param {transform.readonly}) {\n"
        '    transform.annotate %op "compilation_info" = %config : !transform.any_op, '
        "!transform.any_param\n"
        "    transform.yield\n"
        "  }\n"
        + "".join(matchers)
        + "  transform.named_sequence @__kernel_config(%arg0: !transform.any_op "
        "{transform.consumed}) -> !transform.any_op "
        "attributes {iree_codegen.tuning_spec_entrypoint} {\n"
        f"    %res = transform.foreach_match in %arg0 {', '.join(entries)} "
        ": (!transform.any_op) -> !transform.any_op\n"
        "    transform.yield %res : !transform.any_op\n"
        "  }\n"
        "}\n"
    )
