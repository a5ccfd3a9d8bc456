"""B/E pairing against a brute-force oracle: random begin/end sequences on a few threads, with
equal timestamps, unclosed begins and stray ends, read by the in-memory reader and by the
streamed converter, must give exactly the slices a plain per-thread stack walk gives."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.errors import TraceFormatError
from irprof.readers.chrome.reader import read_chrome
from irprof.readers.chrome.stream import stream_chrome_to_parquet
from irprof.trace.io import load_parquet
from irprof.trace.model import Trace

Event = tuple[str, int, int, str]  # phase, tid, ts (us), name

events_strategy = st.lists(
    st.tuples(
        st.sampled_from(["B", "E"]),
        st.integers(1, 2),
        st.integers(0, 6),  # few distinct times: many equal timestamps
        st.sampled_from(["a", "b", "c"]),
    ),
    max_size=24,
)


def oracle(events: list[Event]) -> Counter[tuple[int, str, int, int]]:
    """Per thread, by time, file order breaking ties: an E closes the latest open B."""
    slices: Counter[tuple[int, str, int, int]] = Counter()
    for tid in {tid for _, tid, _, _ in events}:
        mine = sorted(
            (event for event in events if event[1] == tid), key=lambda event: event[2]
        )  # stable: file order among equal timestamps
        stack: list[Event] = []
        for event in mine:
            if event[0] == "B":
                stack.append(event)
            elif stack:
                begin = stack.pop()
                slices[(tid, begin[3], begin[2] * 1000, (event[2] - begin[2]) * 1000)] += 1
    return slices


def slices_of(trace: Trace) -> Counter[tuple[int, str, int, int]]:
    tids = trace.tracks.tid
    return Counter(
        (
            tids[int(trace.track[row])],
            trace.strings[int(trace.name[row])],
            int(trace.ts_ns[row]),
            int(trace.dur_ns[row]),
        )
        for row in range(len(trace))
    )


def document(events: list[Event]) -> bytes:
    return json.dumps(
        {
            "traceEvents": [
                {"ph": phase, "pid": 1, "tid": tid, "ts": ts, "name": name}
                for phase, tid, ts, name in events
            ]
        }
    ).encode()


@settings(max_examples=150, deadline=None)
@given(events_strategy)
def test_in_memory_reader_pairs_like_the_oracle(events: list[Event]) -> None:
    trace = read_chrome(Path("generated.json"), document(events))
    assert slices_of(trace) == oracle(events)


@settings(max_examples=40, deadline=None)
@given(events_strategy)
def test_streamed_converter_pairs_like_the_oracle(
    tmp_path_factory: pytest.TempPathFactory, events: list[Event]
) -> None:
    folder = tmp_path_factory.mktemp("pairing")
    source, output = folder / "t.json", folder / "t.parquet"
    source.write_bytes(document(events))
    expected = oracle(events)
    if not expected:  # nothing complete: refused, naming the file (as `trace summary` does)
        with pytest.raises(TraceFormatError, match="no events"):
            stream_chrome_to_parquet(source, output)
        return
    stream_chrome_to_parquet(source, output)
    assert slices_of(load_parquet(output)) == expected
