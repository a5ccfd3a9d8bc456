"""Run diff: the same model in two runs (another compiler, flag, framework version or code edit),
compared op by op, scope by scope and op kind by op kind, per step.

Design notes: docs/views.md, "Module notes", `analyses/run_diff.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from irprof.analyses.annotated_level import AnnotatedLevel, load_annotated_level
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.run_diff_match import FusionChange, OpPair, fusion_changes, match_ops
from irprof.analyses.run_diff_samples import (
    Samples,
    bootstrap_delta,
    combine,
    method_label,
    run_samples,
)
from irprof.analyses.table import Tabular, dataclass_rows, row_columns
from irprof.analyses.trace_export import measured_events, with_trace_kernels
from irprof.bundle import RunBundle
from irprof.errors import UsageError

DIFF_VERSION = 1


@dataclass(frozen=True)
class DiffOptions:
    """How intervals are computed."""

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class DiffSide:
    """One run, loaded for a diff: its annotated level and each profiled op's samples."""

    label: str
    level: str
    profiled: ProfiledModule
    samples: dict[int, Samples]  # by op index
    steps: int  # manifest step count
    step_markers: int  # step events found in the trace

    def of(self, index: int | None) -> tuple[Samples, ...]:
        """Samples of one op (none for an op the run does not have or did not profile)."""
        if index is None or index not in self.samples:
            return ()
        return (self.samples[index],)


@dataclass(frozen=True)
class DiffRow:
    """Time per step in A and B of an op, a scope, an op kind or everything."""

    key: str
    kind: str  # op kind ("" for scope rows and the total)
    location: str
    match: str  # how the op was matched ("" for rollup rows)
    a_ns: float
    b_ns: float
    interval: tuple[float, float] | None  # of b_ns - a_ns; None when it cannot be estimated
    method: str  # how the samples were derived, A's then B's when they differ
    a_index: int = -1  # op index in A (op rows)
    b_index: int = -1  # op index in B (op rows)

    @property
    def delta_ns(self) -> float:
        """B minus A."""
        return self.b_ns - self.a_ns

    @property
    def delta_pct(self) -> float | None:
        """Delta as a percentage of A (None when A has no time)."""
        return self.delta_ns / self.a_ns * 100.0 if self.a_ns > 0 else None

    @property
    def significant(self) -> bool:
        """The interval excludes zero."""
        return self.interval is not None and (self.interval[0] > 0 or self.interval[1] < 0)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "key": self.key,
            "kind": self.kind,
            "location": self.location,
            "match": self.match,
            "a_ns": round(self.a_ns, 1),
            "b_ns": round(self.b_ns, 1),
            "delta_ns": round(self.delta_ns, 1),
            "delta_pct": None if self.delta_pct is None else round(self.delta_pct, 3),
            "interval_ns": None if self.interval is None else [round(v, 1) for v in self.interval],
            "significant": self.significant,
            "method": self.method,
            "a_index": self.a_index,
            "b_index": self.b_index,
        }


@dataclass(frozen=True)
class RunDiff(Tabular):
    """Everything `irprof diff` shows, as data; as a table: the op, scope and kind rows."""

    run_a: str
    run_b: str
    level_a: str
    level_b: str
    steps_a: int
    steps_b: int
    method_a: str
    method_b: str
    options: DiffOptions
    total: DiffRow
    ops: tuple[DiffRow, ...]  # by |delta|, largest first
    scopes: tuple[DiffRow, ...]
    kinds: tuple[DiffRow, ...]
    fusion: tuple[FusionChange, ...]
    match_counts: dict[str, int]
    notes: tuple[str, ...]

    def slower_by_more_than(self, pct: float) -> bool:
        """B's total time per step exceeds A's by more than `pct` percent, significantly."""
        delta = self.total.delta_pct
        return delta is not None and delta > pct and self.total.significant

    def to_json(self) -> dict[str, Any]:
        """Versioned JSON form."""
        return {
            "version": DIFF_VERSION,
            "run_a": self.run_a,
            "run_b": self.run_b,
            "level_a": self.level_a,
            "level_b": self.level_b,
            "steps": {"a": self.steps_a, "b": self.steps_b},
            "samples": {"a": self.method_a, "b": self.method_b},
            "confidence": self.options.confidence,
            "resamples": self.options.resamples,
            "seed": self.options.seed,
            "total": self.total.to_json(),
            "ops": [row.to_json() for row in self.ops],
            "scopes": [row.to_json() for row in self.scopes],
            "kinds": [row.to_json() for row in self.kinds],
            "fusion": [
                {
                    "change": item.change,
                    "members": list(item.members),
                    "kernels_a": list(item.kernels_a),
                    "kernels_b": list(item.kernels_b),
                }
                for item in self.fusion
            ],
            "matches": self.match_counts,
            "notes": list(self.notes),
        }

    def table_columns(self) -> tuple[str, ...]:
        """`part` (op, scope or kind), then the fields of `DiffRow` and its derived figures."""
        return ("part", *row_columns(DiffRow, properties=_DIFF_FIGURES))

    def table_rows(self) -> list[tuple[Any, ...]]:
        """The op rows, then the scope rows, then the kind rows."""
        columns = row_columns(DiffRow, properties=_DIFF_FIGURES)
        parts = (("op", self.ops), ("scope", self.scopes), ("kind", self.kinds))
        return [(part, *values) for part, rows in parts for values in dataclass_rows(rows, columns)]

    def table_caption(self) -> str:
        """The two runs and their levels."""
        return f"{self.run_a} ({self.level_a}) -> {self.run_b} ({self.level_b}), ns per step"


_DIFF_FIGURES = ("delta_ns", "delta_pct", "significant")


def _row(
    a_samples: Sequence[Samples],
    b_samples: Sequence[Samples],
    options: DiffOptions,
    **fields: Any,
) -> DiffRow:
    a_set, b_set = combine(a_samples), combine(b_samples)
    method_a, method_b = method_label(a_set), method_label(b_set)
    if "none" in (method_a, method_b) or method_a == method_b:
        method = method_b if method_a == "none" else method_a
    else:
        method = f"{method_a} | {method_b}"
    return DiffRow(
        a_ns=sum(item.per_step_ns for item in a_set),
        b_ns=sum(item.per_step_ns for item in b_set),
        interval=bootstrap_delta(
            a_set,
            b_set,
            resamples=options.resamples,
            confidence=options.confidence,
            seed=options.seed,
        ),
        method=method,
        **fields,
    )


def _rollup(
    a: DiffSide,
    b: DiffSide,
    options: DiffOptions,
    group: Callable[[ProfiledOp], str],
) -> tuple[DiffRow, ...]:
    found: dict[str, tuple[list[Samples], list[Samples]]] = {}
    for side, slot in ((a, 0), (b, 1)):
        for op in side.profiled.ops:
            if op.index in side.samples and not op.inclusive:
                found.setdefault(group(op), ([], []))[slot].append(side.samples[op.index])
    rows = [
        _row(lists[0], lists[1], options, key=key, kind="", location="", match="")
        for key, lists in found.items()
    ]
    return tuple(sorted(rows, key=lambda row: (-abs(row.delta_ns), row.key)))


def _op_row(a: DiffSide, b: DiffSide, pair: OpPair, options: DiffOptions) -> DiffRow:
    op = b.profiled.ops[pair.b] if pair.b is not None else a.profiled.ops[pair.a]  # type: ignore[index]
    return _row(
        a.of(pair.a),
        b.of(pair.b),
        options,
        key=op.qualified_name,
        kind=op.op_name,
        location=op.site_source or op.location,
        match=pair.match,
        a_index=-1 if pair.a is None else pair.a,
        b_index=-1 if pair.b is None else pair.b,
    )


def diff_runs(a: DiffSide, b: DiffSide, options: DiffOptions | None = None) -> RunDiff:
    """Compare two loaded runs (see the module docstring)."""
    options = options or DiffOptions()
    if not 0.0 < options.confidence < 1.0 or options.resamples < 100:
        raise UsageError("confidence must be in (0, 1) and resamples at least 100")
    pairs = [
        pair
        for pair in match_ops(a.profiled.ops, b.profiled.ops)
        if (pair.a is not None and pair.a in a.samples)
        or (pair.b is not None and pair.b in b.samples)
    ]
    ops = [_op_row(a, b, pair, options) for pair in pairs]
    ops.sort(key=lambda row: (-abs(row.delta_ns), row.key))
    total = _row(
        [
            a.samples[op.index]
            for op in a.profiled.ops
            if op.index in a.samples and not op.inclusive
        ],
        [
            b.samples[op.index]
            for op in b.profiled.ops
            if op.index in b.samples and not op.inclusive
        ],
        options,
        key="all ops",
        kind="",
        location="",
        match="",
    )
    counts: dict[str, int] = {}
    for pair in pairs:
        counts[pair.match] = counts.get(pair.match, 0) + 1
    return RunDiff(
        run_a=a.label,
        run_b=b.label,
        level_a=a.level,
        level_b=b.level,
        steps_a=a.steps,
        steps_b=b.steps,
        method_a=method_label(a.samples.values()),
        method_b=method_label(b.samples.values()),
        options=options,
        total=total,
        ops=tuple(ops),
        scopes=_rollup(a, b, options, lambda op: op.scope or "(no scope)"),
        kinds=_rollup(a, b, options, lambda op: op.op_name),
        fusion=fusion_changes(pairs, a.profiled.ops, b.profiled.ops),
        match_counts=counts,
        notes=tuple(_notes(a) + _notes(b)),
    )


def _notes(side: DiffSide) -> list[str]:
    labels = {item.method for item in side.samples.values()}
    notes: list[str] = []
    if "event-bootstrap" in labels:
        notes.append(
            f"{side.label}: no per-step samples for some ops (no step markers and kernels not "
            "a multiple of the step count): their intervals resample single events"
        )
    if "profile-only" in labels:
        notes.append(
            f"{side.label}: some ops have no events in the trace: their time is the profile's "
            "total, without an interval"
        )
    return notes


def load_diff_side(
    bundle: RunBundle, level: str, label: str | None = None, loaded: AnnotatedLevel | None = None
) -> DiffSide:
    """One annotated level of a run with per-step samples of its ops, from its trace (`loaded`:
    the level when the caller has already loaded it)."""
    loaded = loaded or load_annotated_level(bundle, level)
    steps = bundle.manifest().steps
    measured = with_trace_kernels(loaded.profiled.ops, measured_events(bundle))
    samples, markers = run_samples(bundle.trace(), measured, steps)
    return DiffSide(
        label=label or str(bundle.root),
        level=loaded.level,
        profiled=loaded.profiled,
        samples=samples,
        steps=markers if markers >= 2 else steps,
        step_markers=markers,
    )


def common_level(a: RunBundle, b: RunBundle) -> str:
    """The first level annotated in both runs (A's order)."""
    levels_a, levels_b = a.annotated_levels(), b.annotated_levels()
    for level in levels_a:
        if level in levels_b:
            return level
    raise UsageError(
        f"{a.root} (annotated: {', '.join(levels_a) or 'none'}) and {b.root} (annotated: "
        f"{', '.join(levels_b) or 'none'}) share no annotated level; annotate one in both or "
        "pass --level and --level-b"
    )
