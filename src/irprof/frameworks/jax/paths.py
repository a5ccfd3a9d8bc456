"""Portable source paths in a JAX bundle: the StableHLO locations and the HLO text's file table.

JAX names files under the script's folder relative to it (`configure_source_paths` in the
child) and every other frame (Flax, Haiku, the standard library) by its absolute path. The
parent rewrites them with the rule every stack shares (`capture/paths.py`), so a bundle does not
depend on the machine that captured it. The profiler's own files stay untouched; the correlator
matches their absolute names to these by path suffix (`ir_index.OpIndex.canonical_file`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import orjson

from irprof.bundle import RunBundle, fingerprint_files
from irprof.capture.paths import make_paths_portable, portable_path_mapper
from irprof.fileio import write_text_atomic
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module

SYS_PATH_FILE = "sys_path.json"  # the child's import roots: written by it, removed by the parent
HLO_TEXT = "ir/hlo.txt"
SOURCE_PATHS = (
    "relative to the script's folder; files under the interpreter's import roots as "
    "<sys.path>/<module path>"
)
# A line of the `FileNames` table of XLA's HLO text: `<index> "<path>"`.
_FILE_NAME_LINE = re.compile(r'^(\d+ )"(.*)"$')


def make_bundle_portable(folder: Path, script_dir: Path) -> None:
    """Rewrite the file names of the bundle in `folder` (IR locations, HLO file table) and
    fingerprint the rewritten files; a bundle without the child's import roots is left as is."""
    roots_file = folder / SYS_PATH_FILE
    if not roots_file.is_file():
        return
    roots = [str(root) for root in orjson.loads(roots_file.read_bytes())]
    roots_file.unlink()
    mapped = portable_path_mapper(str(script_dir), roots)
    bundle = RunBundle(folder)
    manifest = bundle.manifest()
    context = make_context()
    for level in manifest.ir_levels:
        path = bundle.ir_path(level)
        module = load_module(path, context)
        make_paths_portable(module, mapped)
        write_text_atomic(path, print_module(module, debug_info=True))
    hlo = folder / HLO_TEXT
    if hlo.is_file():
        write_text_atomic(hlo, portable_hlo_text(hlo.read_text(encoding="utf-8"), mapped))
    options = {**manifest.options, "source_paths": SOURCE_PATHS}
    bundle.write_manifest(fingerprint_files(bundle, dataclasses.replace(manifest, options=options)))


def portable_hlo_text(text: str, mapped: Callable[[str], str]) -> str:
    """`text` with each path of its `FileNames` table passed through `mapped`."""
    lines = text.split("\n")
    inside = False
    for number, line in enumerate(lines):
        if line == "FileNames":
            inside = True
            continue
        if not inside:
            continue
        match = _FILE_NAME_LINE.match(line)
        if match is None:
            break  # the table ends at the first line that is not an entry
        lines[number] = f'{match.group(1)}"{mapped(match.group(2))}"'
    return "\n".join(lines)
