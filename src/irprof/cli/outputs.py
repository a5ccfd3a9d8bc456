"""The one output check every writing command makes: no output onto what the command reads.

`check_outputs({"-o": out, "--svg": svg}, inputs)` expands each input (a file; a run bundle:
its manifest, captured IR, traces, annotations, profiles and coverage and every file the
manifest names; any other folder: every file in it) and refuses an output that is, resolves to
or holds one of them (`fileio.refuse_overwriting_inputs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.errors import IrprofError
from irprof.fileio import files_under, refuse_overwriting_inputs

# What a bundle's readers open besides the files its manifest names (docs/architecture.md).
BUNDLE_FOLDERS = ("ir", "trace", "annotated")
BUNDLE_FILE_PATTERNS = ("manifest.json", "coverage.json", "opprofile*.json")


def bundle_inputs(root: Path) -> Iterator[Path]:
    """The files of the bundle `root` that commands read."""
    bundle = RunBundle(root)
    for pattern in BUNDLE_FILE_PATTERNS:
        yield from root.glob(pattern)
    for folder in BUNDLE_FOLDERS:
        if (root / folder).is_dir():
            yield from files_under(root / folder)
    try:
        named = [relative for _, relative in bundle.manifest().path_fields()]
    except IrprofError:
        return  # a malformed manifest: the command itself refuses the bundle
    yield from (root / relative for relative in named if isinstance(relative, str))


def expand_inputs(inputs: Iterable[Path]) -> Iterator[Path]:
    """Each input file as itself, a bundle as the files it is read from, a folder as its files."""
    for path in inputs:
        if path.is_dir():
            bundle = RunBundle(path)
            yield from bundle_inputs(path) if bundle.is_bundle() else files_under(path)
        else:
            yield path


def check_outputs(outputs: Mapping[str, Path | None], inputs: Iterable[Path]) -> None:
    """Refuse (exit 2, naming both) an output that is or resolves to a file the command reads."""
    if any(path is not None for path in outputs.values()):
        refuse_overwriting_inputs(outputs, expand_inputs(inputs))
