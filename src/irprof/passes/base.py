"""What every irprof pass is, and how `{key=value ...}` options become dataclass fields."""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from iree.compiler import ir, passmanager

from irprof.errors import PipelineError
from irprof.fileio import input_file_problem


class ModulePass(Protocol):
    """A pass over the module op; a frozen dataclass whose fields are its options."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def run(self, root: ir.Operation) -> None:
        """Transform `root` (a `builtin.module`) in place."""
        ...


P = TypeVar("P")


def _convert(pass_name: str, option: str, raw: str, hint: Any) -> Any:
    """Convert the option text `raw` to the field's type, or raise PipelineError naming both."""

    def bad(expected: str) -> PipelineError:
        return PipelineError(
            f"pass '{pass_name}': option '{option}={raw}' is invalid, expected {expected}"
        )

    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if raw not in choices:
            raise bad("one of " + "|".join(str(c) for c in choices))
        return raw
    if origin in (types.UnionType, typing.Union):
        inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _convert(pass_name, option, raw, inner[0])
    if hint is bool:
        if raw.lower() in ("true", "1"):
            return True
        if raw.lower() in ("false", "0"):
            return False
        raise bad("true|false")
    if hint is int:
        try:
            return int(raw)
        except ValueError:
            raise bad("an integer") from None
    if hint is float:
        try:
            return float(raw)
        except ValueError:
            raise bad("a number") from None
    if hint is Path:
        if not raw:
            raise bad("a path")
        return Path(raw)
    if not raw:
        raise bad("a non-empty string")
    return raw


def check_input_option(
    pass_name: str, option: str, path: Path, limit_bytes: int, what: str = "file"
) -> None:
    """Refuse (PipelineError naming the option) a path option that is not a regular file
    within `limit_bytes`: `profile=/dev/zero` or a FIFO would be read forever."""
    place = f"pass '{pass_name}': option '{option}={path}'"
    if not os.path.lexists(path):
        raise PipelineError(f"{place}: {path}: no such {what}")
    problem = input_file_problem(path, limit_bytes)
    if problem is not None:
        raise PipelineError(f"{place}: {path} {problem}")


def build_pass(cls: type[P], pass_name: str, options: Mapping[str, str]) -> P:
    """Instantiate the pass dataclass `cls` from textual options, type-checking each one."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    # Options may be written kebab-case (`fused-rule`) like MLIR's, fields are snake_case.
    # A pass may declare aliases, e.g. `run=` for a field that cannot be called `run`.
    aliases: Mapping[str, str] = getattr(cls, "OPTION_ALIASES", {})
    values: dict[str, Any] = {}
    for option, raw in options.items():
        field_name = aliases.get(option, option).replace("-", "_")
        if field_name not in fields:
            known = ", ".join(f.replace("_", "-") for f in fields) or "none"
            raise PipelineError(f"pass '{pass_name}': unknown option '{option}' (options: {known})")
        values[field_name] = _convert(pass_name, option, raw, hints[field_name])
    missing = [
        name.replace("_", "-")
        for name, f in fields.items()
        if name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise PipelineError(f"pass '{pass_name}': missing required option(s) {', '.join(missing)}")
    return cls(**values)


def describe_options(cls: type[Any]) -> str:
    """`{profile=Path attr=irprof|ts-dur}`-style summary of a pass's options for --list-passes."""
    hints = typing.get_type_hints(cls)
    parts = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        optional = typing.get_origin(hint) in (types.UnionType, typing.Union)
        if optional:
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        if typing.get_origin(hint) is Literal:
            kind = "|".join(str(c) for c in typing.get_args(hint))
        else:
            kind = {Path: "PATH", int: "INT", bool: "BOOL", float: "NUMBER"}.get(hint, "NAME")
        if f.default is dataclasses.MISSING:
            kind += " (required)"
        parts.append(f"{f.name.replace('_', '-')}={kind}")
    return "{" + " ".join(parts) + "}" if parts else ""


def add_to_pass_manager(pm: passmanager.PassManager, module_pass: ModulePass) -> None:
    """Append `module_pass` to a bindings PassManager as an external Python pass.

    No `op_name`: naming one breaks the pass manager's scheduling (docs/frameworks.md).
    """

    def run(op: ir.Operation, external: Any) -> None:
        try:
            module_pass.run(op)
        except Exception:
            external.signal_pass_failure()
            raise

    pm.add(run, name=module_pass.name)
