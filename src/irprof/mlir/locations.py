"""A typed, immutable model of MLIR location trees, converted from and to the bindings.

The bindings hand back typed subclasses (`ir.NameLoc`, `ir.FileLineColLoc`, `ir.CallSiteLoc`,
`ir.FusedLoc`, `ir.UnknownLoc`); anything else (an `OpaqueLoc`, which the Python API cannot
inspect) is kept as `OpaqueLoc` with its printed text so nothing is silently lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir


@dataclass(frozen=True)
class UnknownLoc:
    """`loc(unknown)`."""


@dataclass(frozen=True)
class FileLineColLoc:
    """`"file":line:col`, or a range `"file":line:col to end_line:end_col`."""

    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None

    @property
    def position(self) -> str:
        """`file:line:col` (the start of a range), the form used as a source key."""
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class NameLoc:
    """`"name"(child)`."""

    name: str
    child: Loc = UnknownLoc()


@dataclass(frozen=True)
class CallSiteLoc:
    """`callsite(callee at caller)`: callee is where the op is, caller where it was called from."""

    callee: Loc
    caller: Loc


@dataclass(frozen=True)
class FusedLoc:
    """`fused<metadata>[a, b, ...]`; metadata is the printed attribute, or None."""

    locations: tuple[Loc, ...]
    metadata: str | None = None


@dataclass(frozen=True)
class OpaqueLoc:
    """A location kind the bindings cannot open (e.g. `OpaqueLoc`), kept as its text."""

    text: str


Loc = UnknownLoc | FileLineColLoc | NameLoc | CallSiteLoc | FusedLoc | OpaqueLoc

UNKNOWN = UnknownLoc()


_TYPED = (ir.NameLoc, ir.FileLineColLoc, ir.CallSiteLoc, ir.FusedLoc, ir.UnknownLoc)


def downcast(location: ir.Location) -> ir.Location:
    """The typed subclass of a plain `ir.Location` (diagnostics hand back plain ones)."""
    if type(location) is not ir.Location:
        return location
    for cls in _TYPED:
        try:
            return cls(location)
        except (ValueError, TypeError):
            continue
    return location


def from_ir(location: ir.Location, memo: dict[ir.Attribute, Loc] | None = None) -> Loc:
    """Convert a bindings location into the typed model.

    `memo` (uniqued location attribute -> model, for one context) shares the conversion of
    common sub-locations: TF's ~60-frame call-site chains of one model end in the same outer
    frames, which were converted again for every op (half of `annotate`'s time on ResNet50).
    """
    location = downcast(location)
    if memo is None:
        return _from_ir(location, None)
    key = location.attr
    found = memo.get(key)
    if found is None:
        found = memo[key] = _from_ir(location, memo)
    return found


def _from_ir(location: ir.Location, memo: dict[ir.Attribute, Loc] | None) -> Loc:
    if isinstance(location, ir.NameLoc):
        return NameLoc(location.name_str, from_ir(location.child_loc, memo))
    if isinstance(location, ir.FileLineColLoc):
        end_line, end_col = location.end_line, location.end_col
        if end_line == location.start_line and end_col == location.start_col:
            return FileLineColLoc(location.filename, location.start_line, location.start_col)
        return FileLineColLoc(
            location.filename, location.start_line, location.start_col, end_line, end_col
        )
    if isinstance(location, ir.CallSiteLoc):
        return CallSiteLoc(from_ir(location.callee, memo), from_ir(location.caller, memo))
    if isinstance(location, ir.FusedLoc):
        metadata = location.metadata
        return FusedLoc(
            tuple(from_ir(member, memo) for member in location.locations),
            None if metadata is None else str(metadata),
        )
    if isinstance(location, ir.UnknownLoc):
        return UNKNOWN
    return OpaqueLoc(str(location))


def to_ir(loc: Loc, context: ir.Context) -> ir.Location:
    """Build the bindings location for `loc` in `context` (inverse of `from_ir`)."""
    match loc:
        case NameLoc(name, child):
            if isinstance(child, UnknownLoc):
                return ir.Location.name(name, context=context)
            return ir.Location.name(name, to_ir(child, context), context=context)
        case FileLineColLoc(file, line, col, None, None):
            return ir.Location.file(file, line, col, context=context)
        case FileLineColLoc(file, line, col, end_line, end_col):
            return ir.Location.file(
                file, line, col, end_line or line, end_col or col, context=context
            )
        case CallSiteLoc(callee, caller):
            return ir.Location.callsite(
                to_ir(callee, context), [to_ir(caller, context)], context=context
            )
        case FusedLoc(members, metadata):
            attr = None if metadata is None else ir.Attribute.parse(metadata, context)
            return ir.Location.fused([to_ir(m, context) for m in members], attr, context=context)
        case OpaqueLoc(text):
            raise ValueError(f"cannot rebuild an opaque location from Python: {text}")
        case _:
            return ir.Location.unknown(context=context)


def render(loc: Loc) -> str:
    """Compact one-line text: `name(file:1:2)`, `callee <- caller`, `fused{meta}[a, b]`, `?`."""
    match loc:
        case NameLoc(name, UnknownLoc()):
            return repr(name)
        case NameLoc(name, child):
            return f"{name!r}({render(child)})"
        case FileLineColLoc(file, line, col, None, None):
            return f"{file}:{line}:{col}"
        case FileLineColLoc(file, line, col, end_line, end_col):
            if end_line == line:
                return f"{file}:{line}:{col}-{end_col}"
            return f"{file}:{line}:{col}-{end_line}:{end_col}"
        case CallSiteLoc(callee, caller):
            return f"{render(callee)} <- {render(caller)}"
        case FusedLoc(members, metadata):
            meta = "" if metadata is None else f"<{metadata}>"
            return f"fused{meta}[{', '.join(render(m) for m in members)}]"
        case OpaqueLoc(text):
            return text
        case _:
            return "?"
