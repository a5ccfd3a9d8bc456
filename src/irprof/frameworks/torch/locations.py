"""FX node -> MLIR location: a NameLoc naming the node around its user-code call-site chain.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/locations.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath

from iree.compiler import ir

from irprof.mlir.python_frames import SourceFrame, frames_location

NAME_SEPARATOR = "|"
# The capture runs each phase of a training step in a Python function of these names, so a
# call stack that holds one tells which phase an op belongs to.
PHASE_FUNCTIONS = {
    "irprof_forward_phase": "forward",
    "irprof_backward_phase": "backward",
    "irprof_optimizer_phase": "optimizer",
}


@dataclass(frozen=True)
class FxNodeName:
    """The three parts of an op's NameLoc; `str()` gives `module|node|target`."""

    module_path: str
    node: str
    target: str

    def __str__(self) -> str:
        return NAME_SEPARATOR.join((self.module_path, self.node, self.target))

    @staticmethod
    def parse(text: str) -> FxNodeName | None:
        """Inverse of `str()`; None for names not made by the torch capture."""
        parts = text.split(NAME_SEPARATOR)
        if len(parts) != 3 or not parts[1]:
            return None
        return FxNodeName(parts[0], parts[1], parts[2])


def format_stack_trace(frames: Sequence[SourceFrame]) -> str:
    """Frames back in Python's traceback text, the form torch.export and the importer use."""
    return "".join(f'  File "{f.file}", line {f.line}, in {f.function}\n' for f in frames)


def relative_to_any(path: str, roots: Sequence[str]) -> str | None:
    """`path` relative to the longest of `roots` containing it (POSIX separators), else None."""
    pure = PurePath(path)
    best: str | None = None
    best_len = -1
    for root in roots:
        if not root:
            continue
        root_path = PurePath(root)
        if pure.is_relative_to(root_path) and len(root_path.parts) > best_len:
            best = PurePosixPath(*pure.relative_to(root_path).parts).as_posix()
            best_len = len(root_path.parts)
    return best


def _inside(path: str, roots: Sequence[str]) -> bool:
    pure = PurePath(path)
    return any(root and pure.is_relative_to(PurePath(root)) for root in roots)


def user_frames(
    raw_frames: Sequence[tuple[str, int, str]],
    script_dir: str,
    library_roots: Sequence[str],
    framework_dirs: Sequence[str] = (),
) -> tuple[SourceFrame, ...]:
    """The chain of frames from the user's script to the model code that made the call,
    outermost first: files in the script's folder relative to it, library files relative to
    the longest `library_roots` entry (`transformers/models/gpt2/modeling_gpt2.py`).

    Frames inside `framework_dirs` (torch's own package: `torch/nn/modules/linear.py` for
    every `nn.Linear`) are dropped, so the innermost frame is the line of model code, the
    user's or a library model's; kept only when the chain has nothing else.
    """
    kept = [frame for frame in raw_frames if not _inside(frame[0], framework_dirs)] or list(
        raw_frames
    )
    return tuple(
        SourceFrame(
            relative_to_any(file, [script_dir])
            or relative_to_any(file, library_roots)
            or PurePath(file).name,
            line,
            function,
        )
        for file, line, function in kept
    )


def node_location(
    name: FxNodeName, frames: Sequence[SourceFrame], context: ir.Context
) -> ir.Location:
    """`NameLoc("module|node|target", callsite(...))` for one FX node."""
    return ir.Location.name(str(name), frames_location(frames, context), context)


def module_class_name(qualified: str) -> str:
    """`torch.nn.modules.linear.Linear` -> `Linear` (what the profiler's `nn.Module:` uses)."""
    return qualified.rsplit(".", 1)[-1]


def aten_event_name(target: str) -> str:
    """`aten.linear.default` -> `aten::linear`: the name the profiler gives the call."""
    namespace, _, rest = target.partition(".")
    op = rest.split(".", 1)[0] if rest else namespace
    return f"{namespace}::{op}" if rest else target
