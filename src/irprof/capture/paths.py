"""Portable source paths in IR locations, one rule for every stack, through the MLIR bindings.

A bundle must not depend on the machine that captured it: files under the script's folder become
relative to it, files under an import root of the capturing interpreter (site-packages, the
standard library) become `<sys.path>/<module path>`, anything else relative to the script's
folder. Used by `capture tf` and `capture jax`; design notes: docs/tensorflow.md, "Module notes",
`frameworks/tf/paths.py`.
"""

from __future__ import annotations

import os
import runpy
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import PurePosixPath

from iree.compiler import ir

IMPORT_ROOT = "<sys.path>"
# How `python -m` shows up in a traceback: the frozen module, or its file when not frozen.
LAUNCH_FILES = ("<frozen runpy>",)

FrameFilter = Callable[[str], bool]


def portable_path_mapper(script_dir: str, import_roots: Sequence[str]) -> Callable[[str], str]:
    """A function mapping an absolute source path to its portable form."""
    script_root = PurePosixPath(script_dir)
    # Longest root first, so `.../site-packages` wins over a parent directory also on sys.path.
    roots = sorted(
        (PurePosixPath(r) for r in import_roots if r.startswith("/")),
        key=lambda p: len(p.parts),
        reverse=True,
    )

    def mapped(filename: str) -> str:
        path = PurePosixPath(filename)
        if not path.is_absolute():
            return filename
        if path.is_relative_to(script_root):
            return str(path.relative_to(script_root))
        for root in roots:
            if path.is_relative_to(root) and root != PurePosixPath("/"):
                return f"{IMPORT_ROOT}/{path.relative_to(root)}"
        return os.path.relpath(filename, script_dir)

    return mapped


def own_frame_filter(own_dirs: Sequence[str]) -> FrameFilter:
    """A predicate: is this (absolute) frame file the interpreter's launch or under `own_dirs`."""
    launch = {*LAUNCH_FILES, os.path.realpath(runpy.__file__)}
    # Symlinked installs: compare resolved paths, so either spelling of a frame file matches.
    roots = tuple(os.path.realpath(d).rstrip("/") + "/" for d in own_dirs)

    @cache
    def is_own(filename: str) -> bool:
        if filename in launch:
            return True
        if not filename.startswith("/"):
            return False
        return os.path.realpath(filename).startswith(roots) or filename.startswith(roots)

    return is_own


def rewrite_location(
    location: ir.Location, mapped: Callable[[str], str], drop: FrameFilter | None = None
) -> ir.Location:
    """`location` with every FileLineCol file name passed through `mapped`; call-site frames
    whose (original) file `drop` accepts are left out of their chain."""
    if isinstance(location, ir.FileLineColLoc):
        name = mapped(location.filename)
        if (location.end_line, location.end_col) == (location.start_line, location.start_col):
            return ir.Location.file(name, location.start_line, location.start_col)
        return ir.Location.file(
            name, location.start_line, location.start_col, location.end_line, location.end_col
        )
    if isinstance(location, ir.NameLoc):
        return ir.Location.name(
            location.name_str, rewrite_location(location.child_loc, mapped, drop)
        )
    if isinstance(location, ir.CallSiteLoc):
        return _rewrite_chain(location, mapped, drop)
    if isinstance(location, ir.FusedLoc):
        members = [rewrite_location(member, mapped, drop) for member in location.locations]
        return ir.Location.fused(members, location.metadata)
    return location


def _rewrite_chain(
    chain: ir.CallSiteLoc, mapped: Callable[[str], str], drop: FrameFilter | None
) -> ir.Location:
    """A right-nested call-site chain, frame by frame, without the frames `drop` accepts."""
    links: list[ir.Location] = []
    rest: ir.Location = chain
    while isinstance(rest, ir.CallSiteLoc):
        links.append(rest.callee)
        rest = rest.caller
    links.append(rest)
    kept: list[ir.Location] = []
    carried: list[str] = []  # names of dropped frames, moved onto the next kept frame
    for link in links:
        names, frame = _peel_names(link)
        if drop is not None and isinstance(frame, ir.FileLineColLoc) and drop(frame.filename):
            carried += names
            continue
        kept.append(_with_names([*carried, *names], rewrite_location(frame, mapped, drop)))
        carried = []
    if not kept:
        return _with_names(carried, ir.Location.unknown())
    if carried:  # names on dropped innermost frames stay on the chain's last frame
        kept[-1] = _with_names(carried, kept[-1])
    if len(kept) == 1:
        return kept[0]
    return ir.Location.callsite(kept[0], kept[1:])


def _peel_names(location: ir.Location) -> tuple[list[str], ir.Location]:
    """The NameLoc names around `location` (outermost first) and what they wrap."""
    names: list[str] = []
    while isinstance(location, ir.NameLoc):
        names.append(location.name_str)
        location = location.child_loc
    return names, location


def _with_names(names: Sequence[str], location: ir.Location) -> ir.Location:
    """`location` wrapped in NameLocs, `names[0]` outermost."""
    for name in reversed(names):
        location = ir.Location.name(name, location)
    return location


def make_paths_portable(
    module: ir.Module, mapped: Callable[[str], str], drop: FrameFilter | None = None
) -> None:
    """Rewrite, in place, the locations of every op and block argument of `module`
    (file names through `mapped`, call-site frames `drop` accepts left out)."""
    with module.context:

        def visit(op: ir.Operation) -> ir.WalkResult:
            op.location = rewrite_location(op.location, mapped, drop)
            for region in op.regions:
                for block in region.blocks:
                    for argument in block.arguments:
                        argument.set_location(rewrite_location(argument.location, mapped, drop))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
