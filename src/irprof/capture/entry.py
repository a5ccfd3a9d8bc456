"""What every framework's capture child does the same way: import the user's script and find its
entry, read the common command-line options, record package versions.

Framework-free: the children (`frameworks/<fw>/runner.py`, `steps_runner.py`) import this and
their framework; this module imports neither.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import inspect
import platform
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

DEFAULT_ENTRY = "irprof_model"


class EntryError(Exception):
    """The script, its entry or what the entry returned cannot be used; the message names what
    is wrong and the fix."""


def load_entry(
    script: Path, entry: str, *, module_name: str, hint: str = "pass --entry NAME"
) -> Callable[..., Any]:
    """Import `script` as module `module_name` (its folder first on sys.path, registered in
    `sys.modules` so its classes pickle and its dataclasses resolve) and return `entry`."""
    if not script.is_file():
        raise EntryError(f"{script}: no such script")
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location(module_name, script)
    if spec is None or spec.loader is None:
        raise EntryError(f"{script}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    found = getattr(module, entry, None)
    if not callable(found):
        raise EntryError(f"{script}: defines no callable {entry!r}; {hint}")
    return found  # type: ignore[no-any-return]


def accepts_mode(factory: Callable[..., Any]) -> bool:
    """Whether the entry takes a `mode` argument (then it is called with `mode=MODE`)."""
    try:
        return "mode" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def add_entry_options(parser: argparse.ArgumentParser, modes: Iterable[str]) -> None:
    """The options every capture child takes: entry, step counts, mode and model label."""
    parser.add_argument("--entry", default=DEFAULT_ENTRY)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--mode", choices=tuple(modes), default="infer")
    parser.add_argument("--model-label", default="")


def package_versions(known: Mapping[str, str], installed: Iterable[str] = ()) -> dict[str, str]:
    """Python's version, the `known` ones (a framework's `__version__`) and those of the
    `installed` distributions that are installed, for the manifest."""
    found = {"python": platform.python_version(), **known}
    for distribution in installed:
        try:
            found[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found
