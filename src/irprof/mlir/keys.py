"""Correlation keys derived from a location tree: runtime names, source position, origins.

Design notes: docs/mlir.md, "Module notes", `mlir/keys.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from irprof.mlir.locations import CallSiteLoc, FileLineColLoc, FusedLoc, Loc, NameLoc

ORIGIN_PREFIX = "irprof.origin="


def origin_name(level: str, index: int) -> str:
    """The NameLoc text `irprof-stamp-origin` writes for op number `index` of `level`."""
    return f"{ORIGIN_PREFIX}{level}#{index}"


def parse_origin(origin: str) -> tuple[str, int] | None:
    """`(level, index)` of an origin id `<level>#<index>`, or None when it is not one."""
    level, sep, index = origin.rpartition("#")
    if not sep or not level or not index.isdigit():
        return None
    return level, int(index)


def is_type_marker(name: str) -> bool:
    """TF's `"Type:"` fused-location entry names the op type, not the node."""
    return name.endswith(":") and "/" not in name


def split_function_suffix(name: str) -> tuple[str, str | None]:
    """TF `node@function` -> (`node`, `function`); other names -> (name, None)."""
    node, sep, function = name.rpartition("@")
    if sep and node and function and "/" not in function:
        return node, function
    return name, None


def _is_path_name(name: str) -> bool:
    """A scoped name (`jit(f)/dot_general`, `seq/dense/MatMul`) as opposed to a bare primitive."""
    return "/" in name


def _named(loc: Loc, out: list[tuple[str, bool]]) -> None:
    """Append `(name, is_frame)` for every NameLoc in `loc`, outermost first.

    A NameLoc directly around a FileLineCol is a *frame* name: JAX and Python tracebacks label
    each frame with its function (`make_jax.<locals>.mlp`), while op names wrap whole chains.
    TF's `convert_function` is the exception (its node name labels a frame), which is why frame
    names are kept as a fallback rather than dropped. Origin stamps and TF `"Type:"` markers are
    skipped. (isinstance chains rather than `match`: this runs once per op of large modules.)
    """
    while isinstance(loc, NameLoc):
        name = loc.name
        if not name.startswith(ORIGIN_PREFIX) and not is_type_marker(name):
            out.append((name, isinstance(loc.child, FileLineColLoc)))
        loc = loc.child
    if isinstance(loc, CallSiteLoc):
        callee_names: list[tuple[str, bool]] = []
        caller_names: list[tuple[str, bool]] = []
        _named(loc.callee, callee_names)
        _named(loc.caller, caller_names)
        # An op inlined from a private function keeps only its primitive (`max`); the
        # caller carries the full scoped name, which is what the profiler knows it by.
        caller_has_ops = any(not frame for _, frame in caller_names)
        callee_has_path = any(not frame and _is_path_name(n) for n, frame in callee_names)
        if caller_has_ops and not callee_has_path:
            out.extend(caller_names)
            out.extend(callee_names)
        else:
            out.extend(callee_names)
            out.extend(caller_names)
    elif isinstance(loc, FusedLoc):
        for member in loc.locations:
            _named(member, out)


def runtime_names(loc: Loc) -> tuple[str, ...]:
    """The op's runtime name candidates, most specific first (frame names only as fallback)."""
    named: list[tuple[str, bool]] = []
    _named(loc, named)
    if not named:
        return ()
    if len(named) == 1:
        return (named[0][0],)
    op_names = [name for name, frame in named if not frame]
    chosen = op_names or [name for name, _ in named]
    return tuple(dict.fromkeys(chosen))


def primary_name(loc: Loc) -> str | None:
    """The first runtime name candidate (the `OpKey.name` of an op), or None."""
    names = runtime_names(loc)
    return names[0] if names else None


def _chain(loc: Loc, out: list[FileLineColLoc]) -> bool:
    """Append the frames of the first call-site chain in `loc`; True when any was found."""
    while isinstance(loc, NameLoc):
        loc = loc.child
    if isinstance(loc, FileLineColLoc):
        out.append(loc)
        return True
    if isinstance(loc, CallSiteLoc):
        found = _chain(loc.callee, out)
        return _chain(loc.caller, out) or found
    if isinstance(loc, FusedLoc):
        return any(_chain(member, out) for member in loc.locations)
    return False


def call_chain(loc: Loc) -> tuple[FileLineColLoc, ...]:
    """Source frames of the first call-site chain, callee-most (innermost) first."""
    frames: list[FileLineColLoc] = []
    _chain(loc, frames)
    return tuple(frames)


def innermost_source(loc: Loc) -> str | None:
    """`file:line:col` of the callee-most source frame.

    For JAX this is the user's own line; torch's FX importer puts the library frame
    (`torch/nn/modules/linear.py`) callee-most; TF's `convert_function` chains run outermost
    frame first, so TF correlation keys on names instead.
    """
    chain = call_chain(loc)
    return chain[0].position if chain else None


def fused_members(loc: Loc) -> tuple[Loc, ...]:
    """Members of the first FusedLoc met from the outside (through names), else `(loc,)`."""
    match loc:
        case FusedLoc(members, _):
            return members
        case NameLoc(_, child):
            inner = fused_members(child)
            return inner if isinstance(child, FusedLoc | NameLoc) else (loc,)
        case _:
            return (loc,)


def _origins(loc: Loc, out: list[str]) -> None:
    while isinstance(loc, NameLoc):
        if loc.name.startswith(ORIGIN_PREFIX):
            out.append(loc.name[len(ORIGIN_PREFIX) :])
        loc = loc.child
    if isinstance(loc, CallSiteLoc):
        _origins(loc.callee, out)
        _origins(loc.caller, out)
    elif isinstance(loc, FusedLoc):
        for member in loc.locations:
            _origins(member, out)


def origins(loc: Loc) -> tuple[str, ...]:
    """Every stamped origin id (`<level>#<index>`) in `loc`, outermost first."""
    found: list[str] = []
    _origins(loc, found)
    if len(found) < 2:
        return tuple(found)
    return tuple(dict.fromkeys(found))


def origins_at_level(loc: Loc, level: str) -> tuple[str, ...]:
    """Origins of `loc` stamped at `level` (after lowering, several mean a fused op)."""
    return tuple(o for o in origins(loc) if (p := parse_origin(o)) is not None and p[0] == level)


@dataclass(frozen=True)
class LocationKeys:
    """Everything correlators key on, derived once from one location."""

    names: tuple[str, ...]
    source: str | None
    chain: tuple[str, ...]
    origins: tuple[str, ...]

    @property
    def name(self) -> str | None:
        """The primary runtime name."""
        return self.names[0] if self.names else None

    @property
    def origin(self) -> str | None:
        """The op's own origin stamp (outermost)."""
        return self.origins[0] if self.origins else None


def location_keys(loc: Loc) -> LocationKeys:
    """All keys of one location."""
    chain = call_chain(loc)
    return LocationKeys(
        names=runtime_names(loc),
        source=chain[0].position if chain else None,
        chain=tuple(frame.position for frame in chain),
        origins=origins(loc),
    )


def name_chain_keys(location: ir.Location) -> LocationKeys | None:
    """`location_keys(from_ir(location))` for NameLoc chains ending in a file position or unknown.

    That is the shape TF (`convert_function`), JAX primitives and the benchmark give most ops; it
    reads the few bindings fields the keys need instead of converting the whole tree, which is
    what made key derivation cost ~14 us/op. Any other shape returns None (use the model).
    """
    names: list[str] = []
    stamped: list[str] = []
    last_kept = False  # whether the innermost NameLoc contributed a name
    while type(location) is ir.NameLoc:
        name = location.name_str
        if name.startswith(ORIGIN_PREFIX):
            stamped.append(name[len(ORIGIN_PREFIX) :])
            last_kept = False
        elif is_type_marker(name):
            last_kept = False
        else:
            names.append(name)
            last_kept = True
        location = location.child_loc
    kind = type(location)
    if kind is ir.FileLineColLoc:
        position = f"{location.filename}:{location.start_line}:{location.start_col}"
        source: str | None = position
        chain: tuple[str, ...] = (position,)
        # The innermost name labels a frame: `runtime_names` drops it when others exist.
        if last_kept and len(names) > 1:
            names.pop()
    elif kind is ir.UnknownLoc:
        source, chain = None, ()
    else:
        return None
    return LocationKeys(
        names=tuple(dict.fromkeys(names)) if len(names) > 1 else tuple(names),
        source=source,
        chain=chain,
        origins=tuple(dict.fromkeys(stamped)) if len(stamped) > 1 else tuple(stamped),
    )


def key_fields(location: ir.Location) -> tuple[str | None, str | None, str | None] | None:
    """`(name, source, origin)` of a NameLoc chain (see `name_chain_keys`), else None.

    Only the first runtime name and the outermost origin make an `OpKey`, and for a name chain
    the first kept name is the first runtime name (the frame name dropped is the innermost).
    """
    name: str | None = None
    origin: str | None = None
    while type(location) is ir.NameLoc:
        text = location.name_str
        if text.startswith(ORIGIN_PREFIX):
            if origin is None:
                origin = text[len(ORIGIN_PREFIX) :]
        elif name is None and not is_type_marker(text):
            name = text
        location = location.child_loc
    kind = type(location)
    if kind is ir.FileLineColLoc:
        return name, f"{location.filename}:{location.start_line}:{location.start_col}", origin
    if kind is ir.UnknownLoc:
        return name, None, origin
    return None
