"""The end every correlator shares: a closed ledger and a level's ops -> OpProfile + Coverage.

A correlator feeds its events to the `Ledger` and builds its entries (how an op's entry reads is
its own: locations, inclusive call ops); `finish_level` then checks conservation, counts the
level's coverage (`mlir.module_coverage.coverage_for`), puts the ledger's totals in both records
and a training step's phases in both (the per-op rows only in `opprofile.json`), and runs the
step-time check (`correlate.step_check`) when the correlator passes its step check: op time
beyond a measured step is a loud warning. See docs/attribution.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from irprof.correlate.base import CorrelationResult
from irprof.correlate.ledger import Ledger
from irprof.correlate.step_check import StepCheck
from irprof.correlate.training import training_brief
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import OpInfo
from irprof.opprofile import OpProfile, OpProfileEntry


def finish_level(
    ledger: Ledger,
    infos: Sequence[OpInfo],
    entries: Mapping[int, OpProfileEntry],
    *,
    level: str,
    framework: str,
    profiled_ns: int,
    where: str,
    reasons: Mapping[int, str] | None = None,
    not_executed: Collection[int] = (),
    untimed: Collection[int] = (),
    warnings: Iterable[str] = (),
    totals: Mapping[str, Any] | None = None,
    coverage_extra: Mapping[str, Any] | None = None,
    training: dict[str, Any] | None = None,
    source_trace: str = "",
    step_check: StepCheck | None = None,
) -> CorrelationResult:
    """One level's result from its ledger and entries (position in `infos` -> entry).

    The ops with an entry are the annotated ones. `totals` are the correlator's own figures for
    `OpProfile.totals` (the ledger's win over them); `coverage_extra` for `Coverage.extra`;
    `where` names the trace and level in a conservation error. `step_check`: the counted time
    per measured step (`check_step_times`); an over-counted step is a warning, and its figures go
    to `Coverage.extra["step_check"]`.
    """
    ledger.close(profiled_ns, where)
    warnings = list(warnings)
    if step_check is not None:
        over = step_check.warning()
        if over is not None:
            warnings.insert(0, over)
    coverage = coverage_for(
        [(info.op, info.key) for info in infos],
        entries.keys(),
        level=level,
        profiled_ns=profiled_ns,
        attributed_ns=ledger.attributed_ns,
        unmatched_events=ledger.unmatched_events(),
        reasons=reasons,
        not_executed=not_executed,
        untimed=untimed,
        warnings=warnings,
    )
    extra: dict[str, Any] = {**(coverage_extra or {}), **ledger.totals()}
    if step_check is not None:
        extra["step_check"] = step_check.record()
    opprofile_totals: dict[str, Any] = {"profiled_ns": profiled_ns, **(totals or {})}
    opprofile_totals.update(ledger.totals())
    if training is not None:
        # Phase totals in the coverage; the backward -> forward rows in opprofile.json.
        opprofile_totals["training"] = training
        extra["training"] = training_brief(training)
    coverage = dataclasses.replace(coverage, extra=extra)
    opprofile = OpProfile(
        level=level,
        framework=framework,
        entries=tuple(entries[position] for position in sorted(entries)),
        totals=opprofile_totals,
        source_trace=source_trace,
    )
    return CorrelationResult(opprofile, coverage)
