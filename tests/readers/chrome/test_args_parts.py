"""Arguments kept in per-chunk parts and gathered in time order: every event keeps its own.

The expected arguments are the objects written into the trace, matched by event name; the
events are written out of time order across many tiny chunks, so runs of the gather cross the
parts, and B/E pairs merge their args as the spec says.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from irprof.readers import read_trace
from irprof.readers.chrome import decode as chrome_decode


def test_args_survive_chunk_parts_and_time_order(tmp_path: Path) -> None:
    # GIVEN events on three threads written in shuffled time order, some with empty or no
    # args, and a B/E pair whose E carries args of its own
    rng = random.Random(7)
    events: list[dict[str, object]] = []
    expected: dict[str, dict[str, object]] = {}
    for index in range(300):
        name = f"op{index}"
        args: object = {"i": index, "text": "x" * rng.randint(0, 40)}
        if index % 17 == 0:
            args = {}
        event = {"ph": "X", "name": name, "pid": 1, "tid": index % 3,
                 "ts": rng.randint(0, 10**6), "dur": rng.randint(1, 50), "args": args}  # fmt: skip
        if index % 29 == 0:
            del event["args"]
            args = {}
        events.append(event)
        expected[name] = dict(args) if isinstance(args, dict) else {}
    events.append({"ph": "B", "name": "pair", "pid": 1, "tid": 9, "ts": 5, "args": {"a": 1}})
    events.append({"ph": "E", "name": "pair", "pid": 1, "tid": 9, "ts": 9, "args": {"b": 2}})
    expected["pair"] = {"a": 1, "b": 2}
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome_decode, "CHUNK_BYTES", 200)
        # WHEN read in chunks of a few events
        trace = read_trace(path)
    # THEN each row has the args its event was written with
    found = {trace.name_of(row): trace.args(row) for row in range(len(trace))}
    assert found == expected
    assert list(trace.ts_ns) == sorted(trace.ts_ns)
