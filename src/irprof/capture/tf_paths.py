"""Make the source paths in TensorFlow's IR locations portable, through the MLIR bindings.

`convert_function` records every Python frame of the tracing call stack as an absolute
`FileLineColLoc`. A bundle must not depend on the machine that captured it, so each file name is
rewritten: files under the script's folder become relative to it (`tf_cnn.py`), files under an
import root of the capturing interpreter (site-packages, the standard library) become
`<sys.path>/<module path>` (`<sys.path>/keras/src/layers/layer.py`), anything else is made
relative to the script's folder. Names, lines, columns and the tree shape are kept.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from iree.compiler import ir

IMPORT_ROOT = "<sys.path>"


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


def rewrite_location(location: ir.Location, mapped: Callable[[str], str]) -> ir.Location:
    """`location` with every FileLineCol file name passed through `mapped`."""
    if isinstance(location, ir.FileLineColLoc):
        name = mapped(location.filename)
        if (location.end_line, location.end_col) == (location.start_line, location.start_col):
            return ir.Location.file(name, location.start_line, location.start_col)
        return ir.Location.file(
            name, location.start_line, location.start_col, location.end_line, location.end_col
        )
    if isinstance(location, ir.NameLoc):
        return ir.Location.name(location.name_str, rewrite_location(location.child_loc, mapped))
    if isinstance(location, ir.CallSiteLoc):
        return ir.Location.callsite(
            rewrite_location(location.callee, mapped),
            [rewrite_location(location.caller, mapped)],
        )
    if isinstance(location, ir.FusedLoc):
        members = [rewrite_location(member, mapped) for member in location.locations]
        return ir.Location.fused(members, location.metadata)
    return location


def make_paths_portable(module: ir.Module, mapped: Callable[[str], str]) -> None:
    """Rewrite, in place, the locations of every op and block argument of `module`."""
    with module.context:

        def visit(op: ir.Operation) -> ir.WalkResult:
            op.location = rewrite_location(op.location, mapped)
            for region in op.regions:
                for block in region.blocks:
                    for argument in block.arguments:
                        argument.set_location(rewrite_location(argument.location, mapped))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
