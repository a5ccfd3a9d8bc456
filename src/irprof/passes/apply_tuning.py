"""`irprof-apply-tuning{record=PATH}`: write a tuning record's choices onto the ops they tuned.

`irprof tune` (frameworks/iree/tune.py) measures code-generation choices per hot dispatch and keeps
them in a JSON record. Each decision names the source ops that formed its dispatch by op name and
location key (runtime name, else source position; the k-th such op), never by SSA number or
position in the file, so the record applies to a later edited version of the same model: the ops
it names get `irprof.tuned = {...}`, and the module gets `irprof.tuning = {flags, spec}`, which
is what IREE reads (`iree-compile` flags and the transform-dialect tuning spec loaded with
`--iree-codegen-tuning-spec-path`). Decisions whose ops are gone are counted, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import orjson
from iree.compiler import ir

from irprof.errors import PipelineError
from irprof.mlir.keys import location_keys, name_chain_keys
from irprof.mlir.locations import from_ir
from irprof.mlir.profile_attrs import float_literal, string_literal
from irprof.passes.base import check_input_option

TUNED_ATTR = "irprof.tuned"
TUNING_ATTR = "irprof.tuning"
RECORD_LIMIT_BYTES = 64 * 2**20
RECORD_VERSION = 1


def location_key(location: ir.Location) -> str:
    """`name:<primary runtime name>` (a NameLoc: JAX's `jit(f)/dot_general`, torch's node
    name, a hand-written `loc("dense1")`), else `at:<file:line:col>` of the innermost source
    frame, else the location as printed. Call stacks are left out: an edit elsewhere in the
    program moves them."""
    keys = name_chain_keys(location) or location_keys(from_ir(location))
    if keys.name is not None:
        return f"name:{keys.name}"
    if keys.source is not None:
        return f"at:{keys.source}"
    return f"loc:{location}"


def op_identities(root: ir.Operation) -> dict[tuple[str, str, int], ir.Operation]:
    """Every op below `root` by (op name, location key, ordinal among ops sharing both)."""
    seen: dict[tuple[str, str], int] = {}
    found: dict[tuple[str, str, int], ir.Operation] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op is not root and op.name not in ("func.func", "builtin.module"):
            pair = (op.name, location_key(op.location))
            ordinal = seen.get(pair, 0)
            seen[pair] = ordinal + 1
            found[(*pair, ordinal)] = op
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def tuned_text(decision: Mapping[str, Any]) -> str:
    """The `irprof.tuned` dictionary of one decision."""
    chosen = decision["chosen"]
    parts = [
        f"dispatch = {string_literal(str(decision['dispatch']))}",
        f"choice = {string_literal(str(chosen['id']))}",
        f"lowering_config = {string_literal(str(chosen['lowering_config']))}",
        f"translation_info = {string_literal(str(chosen['translation_info']))}",
        f"default_ns = {int(chosen['default_ns'])} : i64",
        f"tuned_ns = {int(chosen['tuned_ns'])} : i64",
        f"speedup = {float_literal(float(chosen['speedup']))} : f64",
    ]
    return "{" + ", ".join(parts) + "}"


def tuning_text(record: Mapping[str, Any]) -> str:
    """The module's `irprof.tuning` dictionary: global flags and the tuning spec IREE loads."""
    flags = ", ".join(string_literal(str(flag)) for flag in record.get("flags", ()))
    spec = record.get("spec") or ""
    return f"{{flags = [{flags}], spec = {string_literal(str(spec))}}}"


@dataclass(frozen=True)
class Applied:
    """What applying one record did."""

    decisions: int = 0
    ops_tuned: int = 0
    missing: tuple[str, ...] = field(default=())


def apply_record(root: ir.Operation, record: Mapping[str, Any]) -> Applied:
    """Attach the record's chosen configurations to the ops of `root` they name."""
    if record.get("version") != RECORD_VERSION:
        raise PipelineError(f"tuning record version {record.get('version')!r} is not supported")
    ops = op_identities(root)
    decisions = 0
    tuned = 0
    missing: list[str] = []
    with root.context:
        for decision in record.get("dispatches", ()):
            if not decision.get("chosen"):
                continue
            decisions += 1
            attribute = ir.Attribute.parse(tuned_text(decision))
            entries: Sequence[Mapping[str, Any]] = decision.get("ops", ())
            for entry in entries:
                key = (str(entry["op"]), str(entry["key"]), int(entry["ordinal"]))
                op = ops.get(key)
                if op is None:
                    missing.append(f"{decision['dispatch']}: {key[0]} {key[1]}#{key[2]}")
                    continue
                op.attributes[TUNED_ATTR] = attribute
                tuned += 1
        root.attributes[TUNING_ATTR] = ir.Attribute.parse(tuning_text(record))
    return Applied(decisions=decisions, ops_tuned=tuned, missing=tuple(missing))


def read_record(path: Path) -> dict[str, Any]:
    """The JSON tuning record at `path`."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise PipelineError(f"{path}: not a readable tuning record ({exc})") from exc
    if not isinstance(data, dict):
        raise PipelineError(f"{path}: a tuning record is a JSON object")
    return data


def module_tuning(root: ir.Operation) -> tuple[list[str], str]:
    """(iree-compile flags, tuning spec text) a tuned module carries in `irprof.tuning`."""
    if TUNING_ATTR not in root.attributes:
        return [], ""
    attribute = ir.DictAttr(root.attributes[TUNING_ATTR])
    flags = [ir.StringAttr(item).value for item in ir.ArrayAttr(attribute["flags"])]
    return flags, ir.StringAttr(attribute["spec"]).value


@dataclass(frozen=True)
class ApplyTuningPass:
    """Marks the ops of each tuned dispatch and records flags and spec on the module."""

    name: ClassVar[str] = "irprof-apply-tuning"
    summary: ClassVar[str] = "apply an `irprof tune` record to the ops it names, joined by location"
    record: Path

    def run(self, root: ir.Operation) -> None:
        """Apply the record; a decision none of whose ops is found is an error."""
        check_input_option(self.name, "record", self.record, RECORD_LIMIT_BYTES)
        applied = apply_record(root, read_record(self.record))
        if applied.decisions and not applied.ops_tuned:
            raise PipelineError(
                f"pass '{self.name}': none of the ops named in {self.record} is in this module "
                f"({'; '.join(applied.missing[:3])})"
            )
