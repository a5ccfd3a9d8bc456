"""JAX/XLA correlator: XLA:CPU thunk events -> HLO instructions -> StableHLO ops.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/correlate.py`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from iree.compiler import ir

from irprof.bundle import Manifest, RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.finish import finish_level
from irprof.correlate.payload import PAYLOAD_REASON, payload_reason
from irprof.coverage import is_trivial_op
from irprof.errors import BundleError, CorrelationError, TraceFormatError
from irprof.frameworks.jax.attribution import Attribution, attribute_thunks, thunk_events
from irprof.frameworks.jax.hlo import HloModuleInfo, decode_hlo_proto, parse_hlo_text
from irprof.frameworks.jax.ir_index import JaxOpIndex, implements
from irprof.frameworks.jax.training import jax_training_record
from irprof.mlir.op_index import derive_op_infos
from irprof.opprofile import OpKey, OpProfileEntry
from irprof.trace.model import Trace

LEVEL = "stablehlo"
HLO_TEXT = "ir/hlo.txt"
REMOVED_REASON = "removed by XLA"
NO_WORK_REASON = "(no run-time work)"
RULES = {"default": "flops", "flops": "flops", "even": "even"}


def _module_name(trace: Trace, manifest: Manifest) -> str:
    """The profiled HLO module: the manifest's, else the one with the most thunk time."""
    declared = manifest.option_str("hlo_module", "")
    if declared:
        return declared
    totals: dict[str, int] = defaultdict(int)
    for row, module in enumerate(trace.arg_column("hlo_module")):
        if module is not None:
            totals[str(module)] += int(trace.dur_ns[row])
    if not totals:
        raise CorrelationError("the trace has no XLA thunk events (no 'hlo_module' argument)")
    return max(totals, key=lambda name: totals[name])


def load_program(
    trace: Trace, module_name: str, bundle: RunBundle, trace_path: Path
) -> tuple[HloModuleInfo, list[str]]:
    """The profiled program from the trace's HloProtos, else from `ir/hlo.txt`."""
    warnings: list[str] = []
    ids = {a for a in trace.arg_column("program_id") if a is not None}
    candidates = [p for p in trace.hlo_programs if p.name == module_name]
    candidates.sort(key=lambda p: p.program_id not in ids)
    for program in candidates:
        try:
            return decode_hlo_proto(
                program.proto, program.program_id, what=str(trace_path)
            ), warnings
        except ValueError as exc:
            warnings.append(str(exc))
    hlo_text = bundle.root / HLO_TEXT
    if not hlo_text.exists():
        raise CorrelationError(
            f"{trace_path}: no HloProto for module '{module_name}' in the trace's metadata plane "
            f"and no {HLO_TEXT} in {bundle.root}; re-capture with `irprof capture jax`"
        )
    warnings.append(f"HloProto of {module_name} not in the trace; used {HLO_TEXT}")
    hlo_text = bundle.member(HLO_TEXT, what="optimized HLO text")
    try:
        return parse_hlo_text(hlo_text.read_text(encoding="utf-8")), warnings
    except ValueError as exc:
        raise TraceFormatError(hlo_text, str(exc)) from exc


def _entries_with_inclusive_calls(
    index: JaxOpIndex, attribution: Attribution, profiled_ns: int, module: str
) -> dict[int, OpProfileEntry]:
    """Position -> OpProfile entry of every op that received time, keyed by the op's own key.

    Ops get their ledger shares; a call op is reported once, inclusively (the time of the ops
    reached through it, plus its own, rarely any).
    """
    ledger = attribution.ledger
    entries: dict[int, OpProfileEntry] = {}

    def name_of(position: int) -> str:
        return index.infos[position].key.name or index.infos[position].op_name

    for position in sorted(set(ledger.accounts) | set(ledger.inclusive)):
        info = index.infos[position]
        key = info.key
        if key.name is None and key.source is None:
            continue
        if position in ledger.inclusive:
            data = ledger.inclusive_data(
                position, profiled_ns, source=f"xplane:{module}:inclusive", with_own=True
            )
        else:
            data = ledger.profile_data(position, profiled_ns, name_of)
            data = dataclasses.replace(
                data,
                kernels=tuple(sorted(set(data.kernels))),
                fused_with=tuple(sorted(set(data.fused_with) - {key.name or ""})),
                source=f"xplane:{module}:"
                + ",".join(sorted(attribution.op_instructions[position])),
            )
        entries[position] = OpProfileEntry(
            key=OpKey(name=key.name, source=key.source, origin=key.origin, ordinal=key.ordinal),
            data=data,
            op_name=info.op_name,
            location=" <- ".join(info.keys.chain[:2]),
        )
    return entries


def _unmatched_reasons(
    index: JaxOpIndex, program: HloModuleInfo, annotated: set[int]
) -> dict[int, str]:
    """Why each non-trivial op got nothing: run inside its parent's kernel, removed by XLA, or
    kept but never run as a thunk."""
    # Instructions carrying each op's location: of the op's own kind, or of others (the ops
    # sharing that location, as `x + 0` shares it with the broadcast of its 0).
    in_hlo: dict[int, list[str]] = defaultdict(list)
    others: dict[int, list[str]] = defaultdict(list)
    for instruction in program.instructions.values():
        for target in index.lookup(instruction.op_name, instruction.chain):
            own = implements(instruction.opcode, index.infos[target.position].op_name)
            found = in_hlo if own else others
            found[target.position].append(f"{instruction.opcode} {instruction.name}")
    reasons: dict[int, str] = {}
    for position, info in enumerate(index.infos):
        if position in annotated or is_trivial_op(info.op_name):
            continue
        payload = payload_reason(info.op)
        if payload is not None:
            reasons[position] = payload
        elif info.keys.name is None:
            reasons[position] = "no name in its location (unknown location)"
        elif position in in_hlo:
            reasons[position] = (
                "in the optimized HLO as "
                + ", ".join(sorted(in_hlo[position])[:2])
                + f" but in no profiled thunk {NO_WORK_REASON}"
            )
        elif position in others:
            reasons[position] = (
                f"{REMOVED_REASON}: folded or simplified away (only other kinds of instruction "
                "carry its location: " + ", ".join(sorted(others[position])[:2]) + ")"
            )
        else:
            reasons[position] = f"{REMOVED_REASON}: folded, simplified or merged (CSE) away"
    return reasons


class JaxCorrelator:
    """Joins XLA:CPU thunk events to StableHLO ops."""

    framework = "jax"
    levels: tuple[str, ...] = (LEVEL,)

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        """Correlate the bundle's trace with `RUN/ir/stablehlo.mlir`."""
        if level != LEVEL:
            raise BundleError(f"{bundle.root}: the jax correlator annotates only '{LEVEL}'")
        rule = options.share_basis(RULES)
        manifest = bundle.manifest()
        # The XPlane, when listed, is the primary trace: it carries the HloProtos.
        trace_path = bundle.primary_trace_path
        trace = bundle.trace()
        module_name = _module_name(trace, manifest)
        program, warnings = load_program(trace, module_name, bundle, trace_path)
        return correlate_program(
            bundle.ir(level),
            trace,
            program,
            module_name,
            rule=rule,
            steps=manifest.steps,
            source_trace=str(trace_path.relative_to(bundle.root)),
            warnings=warnings,
        )


def correlate_program(
    module: ir.Module,
    trace: Trace,
    program: HloModuleInfo,
    module_name: str,
    *,
    rule: str = "flops",
    steps: int = 0,
    source_trace: str = "",
    warnings: Sequence[str] = (),
) -> CorrelationResult:
    """Join the thunk events of `module_name` in `trace` to the ops of a StableHLO `module`."""
    index = JaxOpIndex(derive_op_infos(module))
    notes = list(warnings)
    events, other_modules = thunk_events(trace, module_name)
    if other_modules:
        notes.append(f"thunks of other XLA modules ignored: {', '.join(other_modules)}")
    profiled_ns = sum(e.dur_ns for e in events)
    attribution = attribute_thunks(events, program, index, rule)
    entries = _entries_with_inclusive_calls(index, attribution, profiled_ns, module_name)
    reasons = _unmatched_reasons(index, program, set(entries))
    return finish_level(
        attribution.ledger,
        index.infos,
        entries,
        level=LEVEL,
        framework="jax",
        profiled_ns=profiled_ns,
        where=f"{source_trace or 'trace'} -> {LEVEL}",
        reasons=reasons,
        not_executed={
            position
            for position, why in reasons.items()
            if why.startswith((REMOVED_REASON, PAYLOAD_REASON)) or why.endswith(NO_WORK_REASON)
        },
        warnings=notes,
        totals={
            "steps": steps,
            "thunk_events": len(events),
            "async_thunk_events": sum(1 for e in events if e.async_end_row is not None),
            "hlo_module": module_name,
            "program_id": program.program_id,
            "fused_time_rule": rule,
        },
        training=jax_training_record(index, attribution.ledger),
        source_trace=source_trace,
    )


CORRELATOR = JaxCorrelator()
