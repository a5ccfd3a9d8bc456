"""Chrome reader's chunked decode: boundaries never change what is read; errors name the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
from irprof.readers.chrome import decode as chrome_decode
from irprof.trace.model import Trace

# Args full of false boundaries: "}," inside strings and nested objects closing before a comma.
TRICKY_ARGS = [
    {"text": "}, {", "nested": {"a": {"b": 1}, "c": [{"d": 2}, {"e": 3}]}, "tail": "},"},
    {"escaped": 'quote \\"}, {\\" and "}\n,'},
    None,
    {},
    {"list": [{"x": "}"}, {"y": "},]"}]},
]


def tricky_events(count: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    for index in range(count):
        event: dict[str, object] = {
            "ph": "X",
            "cat": "cpu_op" if index % 3 else "kernel",
            "name": f"op{index % 7}",
            "pid": 1 + index % 2,
            "tid": "stream 7" if index % 5 == 0 else 3,
            "ts": index * 1.5,
            "dur": 1.25,
        }
        args = TRICKY_ARGS[index % len(TRICKY_ARGS)]
        if args is not None:
            event["args"] = args
        events.append(event)
    # Event 1 (pid 2, tid 3) starts at 1.5 us, event 2 (pid 1, tid 3) at 3 us.
    events.append({"ph": "s", "id": 9, "pid": 2, "tid": 3, "ts": 1.5, "cat": "ac2g", "name": "f"})
    events.append({"ph": "f", "id": 9, "pid": 1, "tid": 3, "ts": 3.0, "cat": "ac2g", "bp": "e"})
    return events


def same(left: Trace, right: Trace) -> None:
    assert len(left) == len(right)
    assert left.ts_ns.tolist() == right.ts_ns.tolist()
    assert left.dur_ns.tolist() == right.dur_ns.tolist()
    assert left.names() == right.names()
    assert left.kind.tolist() == right.kind.tolist()
    assert left.tracks == right.tracks
    assert left.track.tolist() == right.track.tolist()
    assert left.args_blob == right.args_blob
    assert np.array_equal(left.args_offsets, right.args_offsets)
    assert left.flows.src.tolist() == right.flows.src.tolist()
    assert left.flows.dst.tolist() == right.flows.dst.tolist()


@pytest.mark.parametrize("indent", [None, 1])
def test_any_chunk_size_reads_the_same_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None
) -> None:
    # GIVEN a trace whose args are full of "}," inside strings and nested objects
    path = tmp_path / "tricky.json"
    path.write_text(json.dumps({"traceEvents": tricky_events(60)}, indent=indent))
    # WHEN read in one chunk and in chunks as small as one candidate boundary
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1 << 30)
    whole = read_trace(path)
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1)
    tiny = read_trace(path)
    # THEN every column, arg and flow agrees, and the args are the events' own
    same(whole, tiny)
    assert len(whole) == 60
    assert whole.args(0) == TRICKY_ARGS[0]
    assert whole.args(2) == {}
    assert len(whole.flows) == 1
    assert (whole.name_of(int(whole.flows.src[0])), whole.name_of(int(whole.flows.dst[0]))) == (
        "op1",
        "op2",
    )


def test_a_bad_event_far_into_the_file_is_reported_with_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 64)
    events = tricky_events(40)
    events[35]["ts"] = "soon"
    path = tmp_path / "bad_value.json"
    path.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(TraceFormatError, match=r"bad_value\.json at traceEvents\[35\] field 'ts'"):
        read_trace(path)


def test_malformed_json_far_into_the_array_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 64)
    text = json.dumps(tricky_events(40))
    cut = text.rindex('{"ph"')
    path = tmp_path / "malformed.json"
    path.write_text(text[:cut] + '{"ph": "X", "name": }, ' + text[cut:])
    with pytest.raises(TraceFormatError, match=r"malformed\.json.*not valid JSON"):
        read_trace(path)


def test_fields_around_the_event_array_never_mislead_the_fast_locate(tmp_path: Path) -> None:
    # GIVEN documents where the key search and the last "]" point at the wrong place
    events = tricky_events(12)
    decoy = [{"ph": "X", "name": "decoy", "pid": 9, "tid": 9, "ts": 0, "dur": 1}]
    documents: dict[str, dict[str, Any]] = {
        "array_after": {"traceEvents": events, "deviceProperties": [{"id": 0, "name": "]"}]},
        "nested_key_first": {"meta": {"traceEvents": decoy}, "traceEvents": events},
        "nested_key_after": {"traceEvents": events, "meta": {"traceEvents": decoy}},
        "text_mentions_key": {"note": '"traceEvents": [', "traceEvents": events, "n": "]"},
    }
    for label, document in documents.items():
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(document))
        trace = read_trace(path)
        # THEN the events read are the top-level array's, and the other fields are kept
        assert len(trace) == 12, label
        assert "decoy" not in trace.names(), label
        assert set(trace.metadata["trace_fields"]) == set(document) - {"traceEvents"}, label


def test_empty_event_array_with_fields_after_it_is_reported_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"traceEvents": [], "deviceProperties": [{"id": 0}]}))
    with pytest.raises(TraceFormatError, match=r"empty\.json"):
        read_trace(path)
