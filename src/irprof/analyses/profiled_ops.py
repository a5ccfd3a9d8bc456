"""Annotated ops as plain records: what every view (tables, graphs, report, exports) reads.

One pass over an annotated module gathers, per op, its name, function, runtime name, name scope,
source position, printed location and `irprof.profile` payload; later stages never touch the
bindings again, so views of a 100k-op module stay cheap.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iree.compiler import ir

from irprof.coverage import is_trivial_op
from irprof.mlir.context import make_context
from irprof.mlir.keys import split_function_suffix
from irprof.mlir.load import load_module
from irprof.mlir.locations import render
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.op_kind import op_kind
from irprof.mlir.profile_attrs import get_profile, get_summary
from irprof.opprofile import ProfileData

# Path parts of installed code, as opposed to the user's own files.
_LIBRARY_PARTS = ("site-packages/", "dist-packages/", "/lib/python3")

# Frameworks whose call-site chains the IR lists OUTERMOST frame first: TF's `convert_function`
# hangs the node name on the first Python frame of the stack and nests inward
# (docs/frameworks.md). `innermost_first` puts them in the order every other stack uses.
OUTERMOST_FIRST_FRAMEWORKS = frozenset({"tf"})
# Where each such framework's own op-building code lives (portable `<sys.path>/` spelling): its
# frames place no model op (every Conv2D is built on the same line of `nn_ops.py`).
FRAMEWORK_PACKAGES = {"tf": ("<sys.path>/tensorflow/",)}

# Ops that only hold other ops: their time is the sum of their children, never a row of its own.
CONTAINER_OPS = frozenset({"builtin.module", "func.func", "util.func", "tf_executor.graph"})


def _first_user_frame(chain: tuple[str, ...]) -> str:
    """The first frame in user code: not `<frozen ...>`, `<sys.path>/...` or installed."""
    for frame in chain:
        if not frame.startswith("<") and not any(p in frame for p in _LIBRARY_PARTS):
            return frame
    return ""


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
    # Set when the op lives in a function reached through `func.call` and its own name is a bare
    # primitive (JAX private functions: `loc("max")`): the user's name for it is the caller's.
    call_name: str = ""  # the call's name (common suffix of the names when several calls)
    call_sites: int = 0  # calls reaching the op's function (0: not reached or already named)
    call_chain: tuple[str, ...] = ()  # frames of the first call site, innermost first
    # Names of the function arguments the op reads (their `loc("...")`, e.g. a JAX pytree path
    # `state['attn']['query']['kernel'].value`): what tells apart ops of one name and line.
    inputs: tuple[str, ...] = ()
    # When no frame is in user code (a Keras `fit` step the tool runs): the innermost frame
    # outside the framework's own package, the library line that built the op ("" if none).
    model_frame: str = ""

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
        """The innermost call-site frame in user code (not `<frozen ...>`, `<sys.path>/...` or
        an installed package), else the innermost source: the line a user recognises (a
        subclassed Keras model's `self.conv(x)` in its `call`, not the script's `model(x)`).
        Chains are innermost first (`innermost_first` for a bundle of TF, whose IR lists them
        the other way round)."""
        return _first_user_frame(self.chain) or self.model_frame or self.source

    @property
    def place(self) -> str:
        """The compact location, or "" when it is only the op's name (an ONNX node, a JAX op
        with no frames): it places nothing the name does not already say."""
        return (
            "" if self.runtime_name and self.location == f"'{self.runtime_name}'" else self.location
        )

    @property
    def display_name(self) -> str:
        """Runtime name when known, else the op name: what a user recognises."""
        return self.runtime_name or self.op_name

    @property
    def qualified_name(self) -> str:
        """The display name prefixed by the call that reaches the op (`jit(mlp)/jit(relu)/max`),
        with the number of call sites when there are several (`jit(relu)/max (2 call sites)`)."""
        if not self.call_sites:
            return self.display_name
        name = f"{self.call_name}/{self.display_name}"
        return name if self.call_sites == 1 else f"{name} ({self.call_sites} call sites)"

    @property
    def site_chain(self) -> tuple[str, ...]:
        """Frames that place the op in the user's code: the first call site's for an op known
        only by its callee-local primitive, else the op's own."""
        return self.call_chain or self.chain

    @property
    def site_source(self) -> str:
        """`user_source` taken over `site_chain`: the caller's line for private-function ops."""
        if not self.call_chain:
            return self.user_source
        return _first_user_frame(self.call_chain) or self.call_chain[0]


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
    """The first `depth` components of `scope`, a leading separator kept (ONNX node names
    start with one: `/encoder/layers.0/...`)."""
    sep = scope_separator(scope)
    lead = sep if scope.startswith(sep) else ""
    return lead + sep.join(scope[len(lead) :].split(sep)[:depth])


def scope_depth(scope: str) -> int:
    """Number of components in `scope`, a leading separator not counted (0 for the empty
    scope)."""
    sep = scope_separator(scope)
    return len(scope.removeprefix(sep).split(sep)) if scope else 0


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
    readers = _argument_readers(module)
    launches: dict[str, int] = {}  # IREE dispatch function -> `flow.dispatch` ops launching it
    for index, info in enumerate(derive_op_infos(module)):
        op = info.op.operation
        if info.op_name == "flow.dispatch" and "entry_points" in op.attributes:
            for entry in op.attributes["entry_points"]:
                nested = ir.SymbolRefAttr(entry).value
                if nested:
                    launches[nested[-1]] = launches.get(nested[-1], 0) + 1
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
                op_name=op_kind(op, info.op_name),
                function=function,
                runtime_name=runtime,
                scope=name_scope(runtime),
                source=info.keys.source or "",
                chain=info.keys.chain,
                location=render(info.loc),
                profile=get_profile(op),
                trivial=is_trivial_op(info.op_name) or info.op_name in CONTAINER_OPS,
                callee=_callee(op),
                inputs=readers.get(op, ()),
            )
        )
    summary = get_summary(module) or {}
    records = innermost_first(records, str(summary.get("framework", "")))
    return ProfiledModule(
        path=path,
        ops=_resolve_call_sites(_shared_dispatches(_owned_scopes(records), launches)),
        summary=summary,
    )


def _owned_scopes(records: list[ProfiledOp]) -> list[ProfiledOp]:
    """An op whose scope is another op's name belongs to that op (TF's
    `conv/convolution/ReadVariableOp` reads the variable of the op `conv/convolution`): its
    scope becomes that op's scope, so a layer's rows hold all of it. Calls are scopes, not
    owners (`jit(f)/jit(dense)` names the ops of its callee), nor are terminators and other
    trivial ops (a `func.return` carries its function's name)."""
    owners = {
        split_function_suffix(op.runtime_name)[0]: op.scope
        for op in records
        if op.runtime_name and not op.callee and not op.trivial
    }
    changed = []
    for op in records:
        scope, seen = op.scope, set()
        while scope in owners and scope not in seen:
            seen.add(scope)
            scope = owners[scope]
        changed.append(op if scope == op.scope else dataclasses.replace(op, scope=scope))
    return changed


def _argument_readers(module: ir.Module) -> dict[ir.Operation, tuple[str, ...]]:
    """Op -> the names of the function arguments it reads, for arguments whose location is a
    name (JAX names each leaf of a function's pytree arguments so). Walks the arguments' uses,
    not every op's operands: the cost is the uses of named arguments."""
    readers: dict[ir.Operation, list[str]] = {}
    for function in module.body.operations:
        regions = function.operation.regions
        if not len(regions) or not regions[0].blocks:
            continue
        for argument in regions[0].blocks[0].arguments:
            location = argument.location
            if not isinstance(location, ir.NameLoc):
                continue
            for use in argument.uses:
                owner = use.owner
                operation = owner if isinstance(owner, ir.Operation) else owner.operation
                names = readers.setdefault(operation, [])
                if location.name_str not in names:
                    names.append(location.name_str)
    return {op: tuple(names) for op, names in readers.items()}


def _callee(op: ir.Operation) -> str:
    if "callee" not in op.attributes:
        return ""
    attr = op.attributes["callee"]
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return str(attr.value)
    return str(attr).lstrip("@")


@dataclass(frozen=True)
class _CallContext:
    """How the ops of one called function are known to the user: through their call sites."""

    name: str  # the qualified call name, or the common suffix of several
    sites: int  # call paths from an uncalled function: a call from a function called twice counts 2
    chain: tuple[str, ...]  # first call site's frames
    scope: str  # first named call site's qualified name: where callee ops roll up ("" if none)


def _is_bare(runtime_name: str) -> bool:
    """A name with no scope, no TF `@function` suffix and no torch module path: a primitive."""
    return not any(mark in runtime_name for mark in "/@|")


def _common_suffix(names: list[str]) -> str:
    parts = [name.split("/") for name in names]
    common: list[str] = []
    for column in zip(*(reversed(p) for p in parts), strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return "/".join(reversed(common)) or parts[0][-1]


class _CallResolver:
    """Names every call op through its own callers, so nested private functions chain up."""

    def __init__(self, records: list[ProfiledOp]) -> None:
        self._sites: dict[str, list[ProfiledOp]] = {}
        for op in records:
            if op.callee:
                self._sites.setdefault(op.callee, []).append(op)
        self._contexts: dict[str, _CallContext | None] = {}

    def context(self, function: str, active: frozenset[str] = frozenset()) -> _CallContext | None:
        """The call context of `function` (None when no call reaches it, or on recursion)."""
        if function in self._contexts:
            return self._contexts[function]
        calls = self._sites.get(function)
        if not calls or function in active:
            return None
        named = [self._qualified(call, active | {function}) for call in calls]
        names = [name for name, _ in named]
        # Each call runs the function once per path reaching the call: `@threefry2x32` called
        # once from `@_uniform`, which two dropout layers call, runs for both.
        outers = [self.context(call.function, active | {function}) for call in calls]
        context = _CallContext(
            name=names[0] if len(names) == 1 else _common_suffix(names),
            sites=sum(outer.sites if outer is not None else 1 for outer in outers),
            chain=named[0][1],
            scope=next((n for (n, _), c in zip(named, calls, strict=True) if c.runtime_name), ""),
        )
        self._contexts[function] = context
        return context

    def _qualified(self, call: ProfiledOp, active: frozenset[str]) -> tuple[str, tuple[str, ...]]:
        own = call.runtime_name
        outer = self.context(call.function, active) if not own or _is_bare(own) else None
        if outer is None:
            return own or f"@{call.callee}", call.chain
        if not own:  # a call at loc("") adds no scope (jax.random's call of threefry2x32)
            return outer.name, outer.chain or call.chain
        return f"{outer.name}/{own}", outer.chain or call.chain


def _shared_dispatches(records: list[ProfiledOp], launches: dict[str, int]) -> list[ProfiledOp]:
    """Ops of an IREE dispatch function that several `flow.dispatch` ops launch (IREE keeps one
    executable for structurally identical work: every attention projection of a model) hold the
    time of every launch, while their locations name the first instance's source ops: they are
    named through the dispatch and its number of call sites, never as that first op alone."""
    shared = {name: count for name, count in launches.items() if count > 1}
    if not shared:
        return records
    return [
        replace(op, call_name=op.function, call_sites=shared[op.function])
        if op.function in shared and not op.call_sites
        else op
        for op in records
    ]


def _resolve_call_sites(records: list[ProfiledOp]) -> tuple[ProfiledOp, ...]:
    """Ops of a called function take the scope of the first call that reaches them, and ops
    named only by their primitive (JAX `loc("max")`) also the call's name and place: the name
    and line the user wrote are the caller's. The IR and the profiles stay as they are."""
    resolver = _CallResolver(records)
    result: list[ProfiledOp] = []
    for op in records:
        context = resolver.context(op.function) if op.function else None
        if context is None:
            result.append(op)
            continue
        if context.scope and not op.scope and not op.callee:
            op = replace(op, scope=name_scope(context.scope + "/x"))
        if _is_bare(op.runtime_name):
            op = replace(
                op, call_name=context.name, call_sites=context.sites, call_chain=context.chain
            )
        result.append(op)
    return tuple(result)


def innermost_first(records: list[ProfiledOp], framework: str) -> list[ProfiledOp]:
    """`records` with every chain innermost first, as `ProfiledOp.chain` promises: the chains
    of a framework whose IR lists them outermost first (`irprof.summary`'s `framework`) are
    reversed."""
    if framework not in OUTERMOST_FIRST_FRAMEWORKS:
        return records
    own = FRAMEWORK_PACKAGES.get(framework, ())
    out = []
    for op in records:
        chain = op.chain[::-1]
        # The IR's first frame, the key's source, is the outermost: without a user frame that
        # is the library's entry (Keras' `traceback_utils.py` for every op of a `fit` step).
        library = "" if _first_user_frame(chain) else _first_frame_outside(chain, own)
        out.append(replace(op, chain=chain, model_frame=library))
    return out


def _first_frame_outside(chain: tuple[str, ...], packages: tuple[str, ...]) -> str:
    return next((frame for frame in chain if not frame.startswith(packages)), "")


def load_profiled_module(path: str | Path) -> tuple[ir.Module, ProfiledModule]:
    """Parse an annotated `.mlir` file and gather its ops (the module is returned for graphs)."""
    context = make_context()
    module = load_module(Path(path), context)
    return module, profiled_ops_of(module, path=str(path))
