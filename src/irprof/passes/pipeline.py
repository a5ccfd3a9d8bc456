"""MLIR textual pipelines mixing irprof passes and the bindings' native passes.

`builtin.module(irprof-stamp-origin{level=l}, canonicalize, func.func(cse), irprof-annotate{...})`
is split into runs of consecutive native elements, each handed to `PassManager.parse` as one
`builtin.module(...)` pipeline, and irprof passes, run in order as Python callables. A Python pass
cannot be named inside a textual pipeline string (docs/frameworks.md), hence the split.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iree.compiler import ir, passmanager

from irprof.errors import MlirError, PipelineError
from irprof.mlir.load import verify_module, write_module
from irprof.passes.base import ModulePass, build_pass
from irprof.passes.registry import get_all_passes

ANCHOR = "builtin.module"


@dataclass(frozen=True)
class NativeStep:
    """Consecutive native pipeline elements, e.g. `canonicalize, func.func(cse)`."""

    elements: tuple[str, ...]

    @property
    def label(self) -> str:
        """Text of the elements, for messages and dump file names."""
        return ",".join(self.elements)


@dataclass(frozen=True)
class IrprofStep:
    """One irprof pass with its options already parsed."""

    text: str
    module_pass: ModulePass

    @property
    def label(self) -> str:
        """The pass's name."""
        return self.module_pass.name


Step = NativeStep | IrprofStep


def _split_top_level(text: str, where: str) -> list[str]:
    """Split at commas outside (), {}, [] and quotes."""
    parts: list[str] = []
    depth = 0
    quoted = False
    current: list[str] = []
    for char in text:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "({[":
            depth += 1
        elif not quoted and char in ")}]":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"pipeline {where!r}: unbalanced '{char}'")
        if char == "," and depth == 0 and not quoted:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth != 0 or quoted:
        raise PipelineError(f"pipeline {where!r}: unbalanced brackets or quotes")
    parts.append("".join(current).strip())
    if any(not part for part in parts):
        raise PipelineError(f"pipeline {where!r}: empty pass element")
    return parts


def _split_element(element: str) -> tuple[str, str | None, str | None]:
    """`name{opts}(nested)` -> (name, options text or None, nested text or None)."""
    name_end = len(element)
    for i, char in enumerate(element):
        if char in "{(":
            name_end = i
            break
    name = element[:name_end].strip()
    rest = element[name_end:].strip()
    options = nested = None
    if rest.startswith("{"):
        close = rest.find("}")
        if close < 0:
            raise PipelineError(f"pass element {element!r}: '{{' without '}}'")
        options, rest = rest[1:close], rest[close + 1 :].strip()
    if rest.startswith("(") and rest.endswith(")"):
        nested, rest = rest[1:-1], ""
    if rest:
        raise PipelineError(f"pass element {element!r}: unexpected text {rest!r}")
    return name, options, nested


def parse_options(text: str, pass_name: str) -> dict[str, str]:
    """`key=value key2="a b"` (MLIR pass option syntax) -> dict."""
    options: dict[str, str] = {}
    token: list[str] = []
    tokens: list[str] = []
    quoted = False
    for char in text + " ":
        if char == '"':
            quoted = not quoted
            continue
        if char.isspace() and not quoted:
            if token:
                tokens.append("".join(token))
                token = []
        else:
            token.append(char)
    for item in tokens:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise PipelineError(f"pass '{pass_name}': option {item!r} is not key=value")
        options[key] = value
    return options


@functools.cache
def native_pass_names() -> tuple[str, ...]:
    """Pass names `iree-opt --help` lists (same compiler build as the bindings), for hints.

    The Python bindings cannot enumerate registered passes; this runs only on the error path.
    """
    tool = Path(sys.executable).parent / "iree-opt"
    if not tool.exists():
        return ()
    try:
        text = subprocess.run(
            [str(tool), "--help"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    _, _, passes = text.partition("Passes:")
    # Pass flags are indented by exactly six spaces; their own options by eight.
    return tuple(
        line[8:].split()[0]
        for line in passes.splitlines()
        if line.startswith("      --") and not line.startswith("       ")
    )


def _unknown_pass(name: str, detail: str) -> PipelineError:
    candidates = [*get_all_passes().names(), *native_pass_names()]
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return PipelineError(
        f"unknown pass '{name}' (not an irprof pass: {', '.join(get_all_passes().names())}; "
        f"not a native pass of the bindings: {detail}){hint}"
    )


# MLIR's message when a known pass refuses its options (the pass, then the options' text).
_BAD_OPTIONS = re.compile(r"failed to add `([^`]*)` with options `([^`]*)`")


def _parse_native(text: str, context: ir.Context) -> str | None:
    """None when `builtin.module(text)` parses, else MLIR's message with what LLVM's option
    parser printed on the process's stderr (it names a bad value: "for the --max-iterations
    option: '9999' value invalid for long argument!"), which is caught here instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            passmanager.PassManager.parse(f"{ANCHOR}({text})", context)
            return None
        except ValueError as exc:
            message = str(exc).strip()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        printed = captured.read().decode("utf-8", "replace").strip()
    return "\n".join(part for part in (printed, message) if part)


def _bad_options(element: str, message: str) -> PipelineError | None:
    """The error for a known pass given wrong options, naming the option when it can."""
    found = _BAD_OPTIONS.search(message)
    if found is None:
        return None
    name, options = found.groups()
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    reasons = [
        line.removeprefix("<Pass-Options-Parser>").lstrip(": ")
        for line in lines
        if not line.startswith("failed to add")
    ]
    reason = "; ".join(reasons) or "an option name or value is wrong"
    return PipelineError(
        f"pass '{name}' in {element!r}: invalid options {{{options}}}: {reason} "
        f"(`iree-opt --help` lists the options of '{name}')"
    )


def _check_native(elements: tuple[str, ...], context: ir.Context) -> None:
    """Parse native elements now, so a bad name or option fails before anything runs."""
    for element in elements:
        message = _parse_native(element, context)
        if message is None:
            continue
        wrong_options = _bad_options(element, message)
        if wrong_options is not None:
            raise wrong_options
        name = _split_element(element)[0]
        raise _unknown_pass(name, message.splitlines()[0]) from None


def _reject_nested_irprof(name: str, nested: str) -> None:
    for inner in _split_top_level(nested, nested):
        inner_name, _, inner_nested = _split_element(inner)
        if inner_name in get_all_passes():
            raise PipelineError(
                f"irprof pass '{inner_name}' is nested in '{name}(...)'; irprof passes run on "
                f"the whole module: put it at the top level of {ANCHOR}(...)"
            )
        if inner_nested:
            _reject_nested_irprof(inner_name, inner_nested)


def parse_pipeline(text: str, context: ir.Context) -> tuple[Step, ...]:
    """Parse `builtin.module(...)` (or a bare comma list) into ordered steps."""
    body = text.strip()
    if not body:
        raise PipelineError("empty pass pipeline")
    if body.startswith(ANCHOR):
        rest = body[len(ANCHOR) :].strip()
        if not (rest.startswith("(") and rest.endswith(")")):
            raise PipelineError(f"pipeline {text!r}: expected {ANCHOR}(pass, ...)")
        body = rest[1:-1].strip()
        if not body:
            return ()
    steps: list[Step] = []
    native: list[str] = []
    registry = get_all_passes()
    for element in _split_top_level(body, text):
        name, options, nested = _split_element(element)
        if name in registry:
            if nested is not None:
                raise PipelineError(f"irprof pass '{name}' takes no nested pipeline")
            if native:
                steps.append(NativeStep(tuple(native)))
                native = []
            parsed = parse_options(options or "", name)
            steps.append(IrprofStep(element, build_pass(registry.get(name), name, parsed)))
        else:
            if nested:
                _reject_nested_irprof(name, nested)
            native.append(element)
    if native:
        steps.append(NativeStep(tuple(native)))
    for step in steps:
        if isinstance(step, NativeStep):
            _check_native(step.elements, context)
    return tuple(steps)


@dataclass(frozen=True)
class RunOptions:
    """Debugging knobs of `irprof opt`, as in mlir-opt."""

    verify_each: bool = False
    print_ir_after_all: Path | None = None
    debug_info: bool = True


def _run_native(step: NativeStep, root: ir.Operation, verify_each: bool) -> None:
    pm = passmanager.PassManager.parse(f"{ANCHOR}({step.label})", root.context)
    pm.enable_verifier(verify_each)
    try:
        pm.run(root)
    except ir.MLIRError as exc:
        notes = "\n".join(f"  {d.location}: {d.message}" for d in exc.error_diagnostics)
        raise PipelineError(f"native passes '{step.label}' failed: {exc.message}\n{notes}") from exc


def run_steps(
    module: ir.Module,
    steps: tuple[Step, ...],
    options: RunOptions = RunOptions(),
    *,
    on_step: Callable[[int, Step], None] | None = None,
) -> None:
    """Run the steps in order on `module` (in place)."""
    root = module.operation
    expanded: list[Step] = []
    for step in steps:
        # With per-pass dumps every native element must run on its own to be printed after.
        if isinstance(step, NativeStep) and options.print_ir_after_all is not None:
            expanded.extend(NativeStep((element,)) for element in step.elements)
        else:
            expanded.append(step)
    for number, step in enumerate(expanded):
        if on_step is not None:
            on_step(number, step)
        if isinstance(step, NativeStep):
            _run_native(step, root, options.verify_each)
        else:
            try:
                step.module_pass.run(root)
            except (OSError, ValueError) as exc:
                raise PipelineError(f"pass '{step.label}' failed: {exc}") from exc
            if options.verify_each:
                try:
                    verify_module(module, what=f"after {step.label}")
                except MlirError as exc:
                    raise PipelineError(str(exc)) from exc
        if options.print_ir_after_all is not None:
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in step.label)[:60]
            path = options.print_ir_after_all / f"{number:02d}-{safe}.mlir"
            write_module(path, module, debug_info=options.debug_info)
    # Native runs verify their result; a Python pass that ran last has not been checked yet, and
    # the printer assumes verified IR.
    if expanded and isinstance(expanded[-1], IrprofStep) and not options.verify_each:
        try:
            verify_module(module, what=f"after {expanded[-1].label}")
        except MlirError as exc:
            raise PipelineError(str(exc)) from exc


def run_pipeline(
    module: ir.Module, pipeline: str, options: RunOptions = RunOptions()
) -> tuple[Step, ...]:
    """Parse `pipeline` and run it on `module` in place; returns the steps that ran."""
    steps = parse_pipeline(pipeline, module.context)
    run_steps(module, steps, options)
    return steps
