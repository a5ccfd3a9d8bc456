"""Flow events of a streamed Chrome conversion: kept compactly, then settled as `FlowPoints`.

The first pass (`chrome_stream`) cannot bind a flow event to its slice (the slice may come later
in the file, and final row numbers exist only after the merge), so it keeps each point's fields
in one growing buffer per field: ~38 bytes a point, and no array per segment left pinning the
heap. Once the file is read, `flow_points` turns them into the reader's `FlowPoints`, keyed as
`FieldColumns.flow_fields` keys them, in time order for the merge's `FlowSweep`.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from irprof.readers.chrome.columns import intern, numeric_id
from irprof.readers.chrome.flows import FLOW_END, FLOW_START, FlowPoints
from irprof.readers.chrome.reader import PHASE_FLOW_START

I64 = npt.NDArray[np.int64]
# What the first pass keeps of a flow event, and in which type (ts without the base time).
FLOW_FIELDS: dict[str, tuple[str, Any]] = {
    "row": ("q", np.int64), "phase": ("b", np.int8), "pid": ("i", np.int32),
    "tid": ("i", np.int32), "ts_ns": ("q", np.int64), "cat": ("i", np.int32),
}  # fmt: skip


class FlowStore:
    """The flow points of the first pass, each field one growing buffer (no array per segment
    stays behind in the heap between what is freed)."""

    def __init__(self) -> None:
        self.fields = {key: array(code) for key, (code, _) in FLOW_FIELDS.items()}
        self.ids = array("q")
        self.id_values: list[Any] | None = None  # set once an id is not an int
        self.binds_next = array("b")

    def __len__(self) -> int:
        return len(self.binds_next)

    def add(self, fields: tuple[Any, ...], ids: list[Any], binds_next: list[Any]) -> None:
        """Append one segment's points (`ids` and `binds_next` per decoded chunk)."""
        for (key, (_, dtype)), values in zip(FLOW_FIELDS.items(), fields, strict=True):
            self.fields[key].frombytes(np.ascontiguousarray(values, dtype=dtype).tobytes())
        for chunk in ids:
            if self.id_values is None and isinstance(chunk, np.ndarray):
                self.ids.frombytes(chunk.astype(np.int64).tobytes())
                continue
            if self.id_values is None:
                self.id_values = self.ids.tolist()
            self.id_values.extend(chunk.tolist() if isinstance(chunk, np.ndarray) else chunk)
        for chunk in binds_next:
            self.binds_next.frombytes(chunk.astype(np.int8).tobytes())

    def column(self, key: str) -> Any:
        """One field as a numpy array (a copy: the buffer is freed after)."""
        return np.frombuffer(self.fields.pop(key), dtype=FLOW_FIELDS[key][1]).copy()


def flow_points(store: FlowStore, track_key: Callable[[Any, Any], I64]) -> FlowPoints | None:
    """The flow events as `FlowPoints` in time order (file order among equal times), keyed as
    `FieldColumns.flow_fields` keys them; the store's buffers are freed on the way."""
    if not len(store):
        return None
    if store.id_values is None:
        numeric, inverse = np.unique(np.frombuffer(store.ids, np.int64), return_inverse=True)
        id_ids, table_size = inverse.astype(np.int64).reshape(-1), len(numeric)
    else:
        id_ids, id_table = intern(store.id_values)
        numeric = np.array(
            [0 if value is None else numeric_id(value) for value in id_table], np.int64
        )
        table_size = len(id_table)
    binds_next = np.frombuffer(store.binds_next, np.int8).astype(np.bool_)
    ts_ns = store.column("ts_ns")
    order = np.argsort(ts_ns, kind="stable")
    phase = (store.column("phase")[order] - (PHASE_FLOW_START - FLOW_START)).astype(np.int8)
    id_ids = id_ids[order]
    return FlowPoints(
        track=track_key(store.column("pid")[order], store.column("tid")[order]),
        ts_ns=ts_ns[order],
        phase=phase,
        bind_enclosing=~((phase == FLOW_END) & binds_next[order]),
        key=store.column("cat")[order].astype(np.int64) * table_size + id_ids,  # size >= 1
        flow_id=numeric[id_ids],
        order=store.column("row")[order],
    )
