"""What a `torch.export` failure says, in one line that names where the model stopped it.

torch's message is many lines: the complaint first, then hints, and (for a data-dependent
guard, an unsupported Python construct) the model's own frame that raised it, as
`File "model.py", line 7, in forward`. The first line alone leaves the user searching their
model; the frame closest to the error is the one to name, with its source line.
"""

from __future__ import annotations

import linecache
import re

_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>[\w<>.]+)')
MAX_COMPLAINT = 300


def export_failure(error: BaseException) -> str:
    """`<type>: <first line>`, and `; raised at <file>:<line> in <function>: <code>` when the
    message names a frame."""
    text = str(error).strip()
    complaint = (text.splitlines() or [""])[0][:MAX_COMPLAINT]
    summary = f"{type(error).__name__}: {complaint}"
    frames = list(_FRAME.finditer(text))
    if not frames:
        return summary
    last = frames[-1]
    where = f"{last['path']}:{last['line']} in {last['function']}"
    code = linecache.getline(last["path"], int(last["line"])).strip()
    return f"{summary}; raised at {where}" + (f": `{code}`" if code else "")
