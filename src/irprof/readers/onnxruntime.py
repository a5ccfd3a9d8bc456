"""ONNX Runtime's profile (`SessionOptions.enable_profiling`): Chrome trace JSON, ORT's kinds.

ORT writes a bare JSON array of complete (`"ph": "X"`) events in integer microseconds, each with
a `cat`: "Session" (model loading, initialization, one `model_run` per `InferenceSession.run`,
the executor's span) or "Node" (per graph node: `<node name>_kernel_time`, and with some
providers `_fence_before`/`_fence_after`; `args.op_name`, `args.provider`, shapes, and the
thread pool's `thread_scheduling_stats`). The Chrome reader parses it (exact ns: integer us x
1000); this module recognises it by content and maps ORT's events to irprof's kinds. See
docs/onnx.md.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irprof.errors import TraceFormatError
from irprof.readers.chrome.reader import read_chrome
from irprof.readers.trace_bytes import TraceBytes
from irprof.trace.model import EventKind, Trace

# ORT names a node's events `<node name><suffix>` (onnxruntime/core/framework/sequential_executor).
KERNEL_SUFFIX = "_kernel_time"
RUN_EVENT = "model_run"  # one per `InferenceSession.run`
_WS = rb"[ \t\r\n]*"
# The first event of the array, with ORT's `cat` before any nested object.
_FIRST_EVENT = re.compile(
    rb"(?:\xef\xbb\xbf)?" + _WS + rb"\[" + _WS + rb"\{[^{}\[\]]*?\"cat\"" + _WS + rb":" + _WS
    + rb"\"(?:Session|Node)\""
)  # fmt: skip


def node_of_event(name: str) -> str | None:
    """The graph node an ORT `<node>_kernel_time` event ran, or None for any other event."""
    if name.endswith(KERNEL_SUFFIX):
        return name[: -len(KERNEL_SUFFIX)]
    return None


def read_onnxruntime(path: Path, data: bytes | TraceBytes) -> Trace:
    """Parse an ORT profile: the Chrome trace, with ORT's events given irprof's kinds."""
    trace = read_chrome(path, data)
    op_names = trace.arg_column("op_name")
    names = trace.strings
    kinds = np.full(len(trace), int(EventKind.RUNTIME), dtype=np.int8)
    nodes = 0
    for row in range(len(trace)):
        name = names[int(trace.name[row])]
        if op_names[row] is not None:  # a "Node" event: only those carry the op type
            nodes += 1
            if node_of_event(name) is not None:
                kinds[row] = EventKind.FRAMEWORK_OP
        elif name == RUN_EVENT:
            kinds[row] = EventKind.STEP
    if nodes == 0 and RUN_EVENT not in names:
        raise TraceFormatError(
            path,
            "not an ONNX Runtime profile: no Node event (with args.op_name) and no model_run "
            "event; was the session run before end_profiling()?",
        )
    metadata = {**trace.metadata, "format": "onnxruntime"}
    return dataclasses.replace(trace, kind=kinds, metadata=metadata)


@dataclass(frozen=True)
class OnnxRuntimeReader:
    """ONNX Runtime's profile JSON (`onnxruntime_profile_*.json`), gzip or not."""

    name: str = "onnxruntime"

    def sniff(self, head: bytes) -> bool:
        """A JSON array whose first event has ORT's category "Session" or "Node"."""
        return _FIRST_EVENT.match(head) is not None

    def read(self, path: Path, data: TraceBytes) -> Trace:
        """Parse the whole document."""
        return read_onnxruntime(path, data)


READER = OnnxRuntimeReader()
