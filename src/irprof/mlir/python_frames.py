"""Python frames of a traceback text as an MLIR call-site location.

torch.export keeps each node's Python stack as traceback text (`node.meta["stack_trace"]`), and
`torch.onnx.export` copies it into each ONNX node's metadata (`pkg.torch.onnx.stack_trace`);
both captures turn it into the `callsite(...)` chain an op's location holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from iree.compiler import ir

# torch.export's `stack_trace` is a Python traceback text, outermost frame first.
_FRAME_RE = re.compile(r'File "([^"]+)", line ([0-9]+), in ([^\n]+)')


@dataclass(frozen=True)
class SourceFrame:
    """One Python frame of a node's stack trace: file (relative), line, function."""

    file: str
    line: int
    function: str


def parse_stack_trace(stack_trace: str | None) -> list[tuple[str, int, str]]:
    """(absolute file, line, function) of each frame of a traceback text, outermost first."""
    if not stack_trace:
        return []
    return [
        (file, int(line), function.strip())
        for file, line, function in _FRAME_RE.findall(stack_trace)
    ]


def frames_location(frames: Sequence[SourceFrame], context: ir.Context) -> ir.Location:
    """The call-site chain of `frames` (outermost first) as the FX importer builds it."""
    if not frames:
        return ir.Location.unknown(context)
    # Column 0: Python tracebacks give lines only, like the importer's own locations.
    locations = [ir.Location.file(f.file, f.line, 0, context) for f in frames]
    if len(locations) == 1:
        return locations[0]
    return ir.Location.callsite(locations[-1], locations[-2::-1], context)
