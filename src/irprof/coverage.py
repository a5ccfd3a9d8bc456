"""Coverage of a correlation: how much profiled time and how many ops found each other."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec
import orjson

from irprof.errors import BundleError, CorrelationError
from irprof.fileio import write_bytes_atomic

# Below these a correlation found almost nothing: the trace most likely belongs to another model.
MIN_TIME_COVERAGE = 0.05
MIN_NONTRIVIAL_COVERAGE = 0.05

# Op names that do no work worth profiling; excluded from `ops_nontrivial`.
TRIVIAL_OPS = frozenset(
    {
        "tf.Const",
        "tf.Identity",
        "tf.IdentityN",
        "tf.NoOp",
        "tf.Placeholder",
        "tf_executor.fetch",
        "tf_executor.island",
        "tf_executor.yield",
        "tf_executor.graph",
        "func.return",
        "func.func",
        "builtin.module",
        "stablehlo.constant",
        "mhlo.constant",
        "arith.constant",
        "torch.constant.int",
        "torch.constant.float",
        "torch.constant.bool",
        "torch.constant.none",
        "torch.constant.str",
        "torch.constant.device",
        "torch.prim.ListConstruct",
        "torch.vtensor.literal",
        # A check of a tensor's dtype, shape and device that torch.export inserts for `.to()`
        # calls (HF models have dozens): it reads no data, and eager PyTorch never runs it.
        "torch.aten._assert_tensor_metadata",
        "torch_c.to_builtin_tensor",
        "torch_c.from_builtin_tensor",
        "util.global",
        "util.return",
        "util.func",
        "flow.return",
        "linalg.yield",
        "tensor.empty",
        "scf.yield",
        # Implicit terminators of IREE's containers (never printed, present in every walk).
        "flow.executable_end",
        "hal.executable_end",
        "hal.executable.variant_end",
        "stream.executable_end",
    }
)


def is_trivial_op(op_name: str) -> bool:
    """True for constants, identities, no-ops, placeholders, terminators and containers."""
    return op_name in TRIVIAL_OPS or op_name.endswith(
        (".return", ".yield", ".terminator", "_terminator")  # `torch.operator_terminator`
    )


@dataclass(frozen=True)
class UnmatchedEvent:
    """A profiled event name that no op received, with its summed time."""

    name: str
    total_ns: int
    count: int
    reason: str


@dataclass(frozen=True)
class UnmatchedOp:
    """A non-trivial op that received no profile, with why."""

    op_name: str
    location: str
    reason: str


@dataclass(frozen=True)
class Coverage:
    """The coverage record (docs/architecture.md): `coverage.json`, also shown on screen."""

    level: str
    profiled_ns: int
    attributed_ns: int
    ops_total: int
    ops_nontrivial: int
    ops_annotated: int
    ops_nontrivial_annotated: int
    # Non-trivial ops that do no work of their own in the profiled runs: the compiler provably
    # removed them (XLA folded or merged them, grappler pruned or folded them), or they are the
    # payload of a region their parent applies (a reduce's combiner, a linalg body: their work
    # is the parent's), or IREE hoisted them into an initializer. Kept out of `ops_nontrivial`
    # and listed in `unmatched_ops`, each with its reason.
    ops_not_executed: int = 0
    # Non-trivial ops seen running with no time of their own in the timed steps (TF's cheap ops,
    # recorded only by the untimed reference steps; XLA instructions that ran inside other
    # thunks): counted in `ops_nontrivial`, not annotated, listed with that reason.
    ops_untimed: int = 0
    unmatched_events: tuple[UnmatchedEvent, ...] = ()
    unmatched_ops: tuple[UnmatchedOp, ...] = ()
    warnings: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def time_coverage(self) -> float:
        """attributed_ns / profiled_ns (0 when nothing was profiled)."""
        return self.attributed_ns / self.profiled_ns if self.profiled_ns else 0.0

    @property
    def nontrivial_coverage(self) -> float:
        """Share of non-trivial ops that received a profile."""
        return self.ops_nontrivial_annotated / self.ops_nontrivial if self.ops_nontrivial else 0.0

    @property
    def nontrivial_seen_coverage(self) -> float:
        """Share of non-trivial ops seen running: timed (annotated) or only untimed."""
        seen = self.ops_nontrivial_annotated + self.ops_untimed
        return seen / self.ops_nontrivial if self.ops_nontrivial else 0.0

    @property
    def nontrivial_coverage_with_removed(self) -> float:
        """Share of non-trivial ops annotated, counting the ones the compiler removed as misses."""
        total = self.ops_nontrivial + self.ops_not_executed
        return self.ops_nontrivial_annotated / total if total else 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON form including the derived ratios."""
        out = asdict(self)
        out["time_coverage"] = self.time_coverage
        out["nontrivial_coverage"] = self.nontrivial_coverage
        out["nontrivial_seen_coverage"] = self.nontrivial_seen_coverage
        out["nontrivial_coverage_with_removed"] = self.nontrivial_coverage_with_removed
        return out


def save_coverages(path: str | Path, coverages: dict[str, Coverage]) -> None:
    """Write `coverage.json`: level -> coverage record."""
    payload = {"version": 1, "levels": {k: v.to_json() for k, v in coverages.items()}}
    write_bytes_atomic(path, orjson.dumps(payload, option=orjson.OPT_INDENT_2))


COVERAGE_LIMIT_BYTES = 256 << 20  # far above any real record; refuse to parse a planted one
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class _UnmatchedEventSchema(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    total_ns: _Count
    count: _Count
    reason: str


class _UnmatchedOpSchema(msgspec.Struct, forbid_unknown_fields=True):
    op_name: str
    location: str
    reason: str


class _CoverageSchema(msgspec.Struct):
    """One level's record in `coverage.json`; the derived ratios are recomputed, not read."""

    level: str
    profiled_ns: _Count
    attributed_ns: _Count
    ops_total: _Count
    ops_nontrivial: _Count
    ops_annotated: _Count
    ops_nontrivial_annotated: _Count
    ops_not_executed: _Count = 0
    ops_untimed: _Count = 0
    unmatched_events: list[_UnmatchedEventSchema] = []
    unmatched_ops: list[_UnmatchedOpSchema] = []
    warnings: list[str] = []
    extra: dict[str, Any] = {}


class _CoverageFileSchema(msgspec.Struct):
    levels: dict[str, msgspec.Raw]  # decoded one by one so that errors name the level
    version: int = 1


def _coverage_of(record: _CoverageSchema) -> Coverage:
    return Coverage(
        level=record.level,
        profiled_ns=record.profiled_ns,
        attributed_ns=record.attributed_ns,
        ops_total=record.ops_total,
        ops_nontrivial=record.ops_nontrivial,
        ops_annotated=record.ops_annotated,
        ops_nontrivial_annotated=record.ops_nontrivial_annotated,
        ops_not_executed=record.ops_not_executed,
        ops_untimed=record.ops_untimed,
        unmatched_events=tuple(
            UnmatchedEvent(e.name, e.total_ns, e.count, e.reason) for e in record.unmatched_events
        ),
        unmatched_ops=tuple(
            UnmatchedOp(o.op_name, o.location, o.reason) for o in record.unmatched_ops
        ),
        warnings=tuple(record.warnings),
        extra=dict(record.extra),
    )


def load_coverages(path: str | Path) -> dict[str, Coverage]:
    """Read and validate `coverage.json`; a malformed one is a BundleError naming the field."""
    with open(path, "rb") as handle:
        data = handle.read(COVERAGE_LIMIT_BYTES + 1)
    if len(data) > COVERAGE_LIMIT_BYTES:
        raise BundleError(f"{path}: larger than {COVERAGE_LIMIT_BYTES >> 20} MB; not coverage")
    fix = "delete it and re-run `irprof annotate`"
    try:
        parsed = msgspec.json.decode(data, type=_CoverageFileSchema, strict=True)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: malformed coverage record: {exc}; {fix}") from exc
    coverages = {}
    for level, raw in parsed.levels.items():
        try:
            record = msgspec.json.decode(raw, type=_CoverageSchema, strict=True)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            # A `Raw` value is not UTF-8 checked by the outer decode; its own decode checks it.
            where = str(exc).replace("`$", f"`$.levels.{level}")
            raise BundleError(f"{path}: malformed coverage record: {where}; {fix}") from exc
        if record.level != level:
            raise BundleError(
                f"{path}: malformed coverage record: level {record.level!r} filed under "
                f"{level!r} - at `$.levels.{level}.level`; {fix}"
            )
        coverages[level] = _coverage_of(record)
    return coverages


def check_coverage(coverage: Coverage, source: str) -> None:
    """Refuse a near-empty correlation of `source`: its trace and IR do not belong together.

    Ops seen running only in the untimed reference steps count as matched here: a small TF
    model's ops are all cheap, so the timed steps record a few and the reference steps the
    rest; they show that trace and IR belong together as well as timed ones do."""
    if coverage.ops_nontrivial == 0 and coverage.profiled_ns == 0:
        raise CorrelationError(
            f"{source}: level '{coverage.level}' has no profiled op time and no "
            "non-trivial ops; nothing to annotate"
        )
    if (
        coverage.time_coverage < MIN_TIME_COVERAGE
        or coverage.nontrivial_seen_coverage < MIN_NONTRIVIAL_COVERAGE
    ):
        untimed = f", {coverage.ops_untimed} more seen untimed" if coverage.ops_untimed else ""
        raise CorrelationError(
            f"{source}: level '{coverage.level}' matched only "
            f"{coverage.time_coverage:.1%} of profiled time and "
            f"{coverage.nontrivial_coverage:.1%} of non-trivial ops "
            f"({coverage.ops_nontrivial_annotated}/{coverage.ops_nontrivial}{untimed}). The "
            "profile most "
            "likely comes from another model or another trace of it (names depend on tracing "
            "order); re-capture, or pass --allow-low-coverage to annotate anyway."
        )
