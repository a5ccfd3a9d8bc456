"""Annotated ops as plain records: what every view (tables, graphs, report, exports) reads.

One pass over an annotated module gathers, per op, its name, function, runtime name, name scope,
source position, printed location and `irprof.profile` payload; later stages never touch the
bindings again, so views of a 100k-op module stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iree.compiler import ir

from irprof.coverage import is_trivial_op
from irprof.mlir.annotation import get_profile, get_summary
from irprof.mlir.context import make_context
from irprof.mlir.keys import split_function_suffix
from irprof.mlir.load import load_module
from irprof.mlir.locations import render
from irprof.mlir.op_index import derive_op_infos
from irprof.opprofile import ProfileData

# Ops that only hold other ops: their time is the sum of their children, never a row of its own.
_LIBRARY_PARTS = ("site-packages/", "dist-packages/", "/lib/python3")

CONTAINER_OPS = frozenset({"builtin.module", "func.func", "util.func", "tf_executor.graph"})


@dataclass(frozen=True)
class ProfiledOp:
    """One op of an annotated module and its measurements (None when it got none)."""

    index: int  # position in the module's pre-order walk
    op_name: str  # e.g. "tf.Conv2D", "stablehlo.dot_general"
    function: str  # symbol of the enclosing function ("" at module level)
    runtime_name: str  # the name the profiler knows the op by ("" when the location has none)
    scope: str  # name scope: Keras layer, JAX name stack, torch module path ("" when none)
    source: str  # innermost `file:line:col` ("" when none)
    chain: tuple[str, ...]  # call-site frames `file:line:col`, innermost first
    location: str  # the whole location, compact
    profile: ProfileData | None
    trivial: bool  # constants, identities, terminators: excluded from coverage by design
    callee: str = ""  # symbol a call op calls ("" for other ops)

    @property
    def inclusive(self) -> bool:
        """A call whose profile repeats its callee's ops' time (left out of sums)."""
        if self.profile is None:
            return False
        return bool(self.callee) or self.profile.source.endswith(":inclusive")

    @property
    def total_ns(self) -> int:
        """Attributed time (0 without a profile)."""
        return self.profile.total_ns if self.profile else 0

    @property
    def share(self) -> float:
        """Share of all profiled op time (0 without a profile)."""
        return self.profile.fraction if self.profile else 0.0

    @property
    def user_source(self) -> str:
        """The first call-site frame in user code (not `<frozen ...>`, `<sys.path>/...` or an
        installed package), else the innermost source: the line a user recognises. TF chains
        list the outermost frame first, JAX and torch the innermost, so scanning for user code
        serves both."""
        for frame in self.chain:
            if not frame.startswith("<") and not any(p in frame for p in _LIBRARY_PARTS):
                return frame
        return self.source

    def frame_in(self, script: str) -> str:
        """The first call-site frame inside `script` (matched by file name), else ""."""
        name = Path(script).name
        for frame in self.chain:
            file = frame.rsplit(":", 2)[0]
            if name and Path(file).name == name:
                return frame
        return ""

    @property
    def display_name(self) -> str:
        """Runtime name when known, else the op name: what a user recognises."""
        return self.runtime_name or self.op_name


@dataclass(frozen=True)
class ProfiledModule:
    """Every op of one annotated module plus its `irprof.summary` (empty when absent)."""

    path: str
    ops: tuple[ProfiledOp, ...]
    summary: dict[str, Any]

    @property
    def annotated(self) -> tuple[ProfiledOp, ...]:
        """Ops that carry a profile."""
        return tuple(op for op in self.ops if op.profile is not None)

    @property
    def profiled_ns(self) -> int:
        """All profiled op time: the summary's figure, else the sum over annotated ops."""
        value = self.summary.get("profiled_ns")
        if isinstance(value, int) and value > 0:
            return value
        return sum(op.total_ns for op in self.ops if not op.inclusive)

    @property
    def functions(self) -> tuple[str, ...]:
        """Function symbols in module order."""
        return tuple(dict.fromkeys(op.function for op in self.ops if op.function))


def name_scope(runtime_name: str) -> str:
    """The scope part of a runtime name: the enclosing layer / name stack / module path.

    TF `seq/dense/MatMul@fn` -> `seq/dense`; JAX `jit(f)/dense/dot_general[...]` ->
    `jit(f)/dense`; a torch NameLoc `encoder.fc1 | linear | aten.linear` -> `encoder.fc1`.
    """
    if not runtime_name:
        return ""
    if "|" in runtime_name:
        return runtime_name.split("|", 1)[0].strip()
    name, _ = split_function_suffix(runtime_name)
    name = name.split("[", 1)[0]  # JAX appends primitive parameters in brackets
    scope, sep, _ = name.rpartition("/")
    return scope if sep else ""


def scope_separator(scope: str) -> str:
    """`/` for TF and JAX scopes, `.` for torch module paths."""
    return "/" if "/" in scope or "." not in scope else "."


def scope_prefix(scope: str, depth: int) -> str:
    """The first `depth` components of `scope`."""
    sep = scope_separator(scope)
    return sep.join(scope.split(sep)[:depth])


def scope_depth(scope: str) -> int:
    """Number of components in `scope` (0 for the empty scope)."""
    return len(scope.split(scope_separator(scope))) if scope else 0


def _enclosing_function(op: ir.Operation) -> str:
    parent = op.parent
    while parent is not None:
        if "sym_name" in parent.attributes and parent.name in CONTAINER_OPS:
            return str(ir.StringAttr(parent.attributes["sym_name"]).value)
        parent = parent.parent
    return ""


def profiled_ops_of(module: ir.Module, *, path: str = "<module>") -> ProfiledModule:
    """Gather every op of an (annotated) module with its profile, in walk order."""
    records: list[ProfiledOp] = []
    function_of: dict[int, str] = {}
    for index, info in enumerate(derive_op_infos(module)):
        op = info.op.operation
        parent = op.parent
        parent_key = hash(parent) if parent is not None else 0
        function = function_of.get(parent_key)
        if function is None:
            function = _enclosing_function(op)
            function_of[parent_key] = function
        runtime = info.keys.name or ""
        records.append(
            ProfiledOp(
                index=index,
                op_name=info.op_name,
                function=function,
                runtime_name=runtime,
                scope=name_scope(runtime),
                source=info.keys.source or "",
                chain=info.keys.chain,
                location=render(info.loc),
                profile=get_profile(op),
                trivial=is_trivial_op(info.op_name) or info.op_name in CONTAINER_OPS,
                callee=_callee(op),
            )
        )
    return ProfiledModule(
        path=path, ops=_inherit_call_scopes(records), summary=get_summary(module) or {}
    )


def _callee(op: ir.Operation) -> str:
    if "callee" not in op.attributes:
        return ""
    attr = op.attributes["callee"]
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return str(attr.value)
    return str(attr).lstrip("@")


def _inherit_call_scopes(records: list[ProfiledOp]) -> tuple[ProfiledOp, ...]:
    """Ops of a private function named only by their primitive (JAX `loc("max")`) take the
    scope of the call that reaches them: the name the user wrote is the caller's."""
    caller_name: dict[str, str] = {}
    for op in records:
        if op.callee and op.runtime_name and op.callee not in caller_name:
            caller_name[op.callee] = name_scope(op.runtime_name + "/x")
    return tuple(
        replace(op, scope=caller_name[op.function])
        if op.function in caller_name and not op.scope and not op.callee
        else op
        for op in records
    )


def load_profiled_module(path: str | Path) -> tuple[ir.Module, ProfiledModule]:
    """Parse an annotated `.mlir` file and gather its ops (the module is returned for graphs)."""
    context = make_context()
    module = load_module(Path(path), context)
    return module, profiled_ops_of(module, path=str(path))
