"""B/E pairing against a brute-force oracle: random begin/end sequences on a few threads, with
equal timestamps, unclosed begins and stray ends, read by the in-memory reader and by the
streamed converter, must give exactly the slices a plain per-thread stack walk gives. Async
b/e (and legacy S/F) events pair the same way per (process, category, id) tree, whichever
thread records them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.errors import TraceFormatError
from irprof.readers import read_trace
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
    expected = oracle(events)
    if not expected:  # nothing complete: refused, naming the file (as `trace summary` does)
        with pytest.raises(TraceFormatError, match="no events"):
            streamed(folder, document(events))
        return
    assert slices_of(streamed(folder, document(events))) == expected


def streamed(folder: Path, data: bytes) -> Trace:
    """`data` written to `folder`, converted by the streamed converter and read back."""
    source, output = folder / "t.json", folder / "t.parquet"
    source.write_bytes(data)
    stream_chrome_to_parquet(source, output)
    return load_parquet(output)


AsyncEvent = tuple[str, int, int, int, str, str]  # phase, tid, id, ts (us), name, id form

async_strategy = st.lists(
    st.tuples(
        st.sampled_from(["b", "e", "S", "F"]),
        st.integers(1, 2),  # the recording thread: not part of the tree
        st.integers(1, 2),
        st.integers(0, 6),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["id", "local", "global"]),
    ),
    max_size=24,
)


def async_oracle(events: list[AsyncEvent]) -> Counter[tuple[str, str, int, int]]:
    """Per tree (category and id), by time, file order breaking ties: an end closes the
    latest open begin, whichever phase letter pair and thread recorded them."""
    slices: Counter[tuple[str, str, int, int]] = Counter()
    for tree in {event[2] for event in events}:
        mine = sorted((event for event in events if event[2] == tree), key=lambda e: e[3])
        stack: list[AsyncEvent] = []
        for event in mine:
            if event[0] in "bS":
                stack.append(event)
            elif stack:
                begin = stack.pop()
                slices[
                    (f"async gpu {tree}", begin[4], begin[3] * 1000, (event[3] - begin[3]) * 1000)
                ] += 1
    return slices


def async_document(events: list[AsyncEvent]) -> bytes:
    def event(phase: str, tid: int, tree: int, ts: int, name: str, form: str) -> dict[str, object]:
        fields: dict[str, object] = {"ph": phase, "cat": "gpu", "pid": 1, "tid": tid, "ts": ts}
        fields["name"] = name
        fields.update({"id": tree} if form == "id" else {"id2": {form: tree}})
        return fields

    # An X keeps the document from being empty of events when nothing pairs.
    marker = {"ph": "X", "name": "marker", "pid": 1, "tid": 1, "ts": 0, "dur": 1}
    return json.dumps({"traceEvents": [marker, *(event(*fields) for fields in events)]}).encode()


def async_slices_of(trace: Trace) -> Counter[tuple[str, str, int, int]]:
    return Counter(
        (trace.tracks.thread[int(trace.track[row])], trace.strings[int(trace.name[row])],
         int(trace.ts_ns[row]), int(trace.dur_ns[row]))
        for row in range(len(trace))
        if trace.strings[int(trace.name[row])] != "marker"
    )  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(async_strategy)
def test_async_events_pair_per_tree_like_the_oracle(events: list[AsyncEvent]) -> None:
    trace = read_chrome(Path("generated.json"), async_document(events))
    assert async_slices_of(trace) == async_oracle(events)


@settings(max_examples=40, deadline=None)
@given(async_strategy)
def test_streamed_async_events_pair_like_the_oracle(
    tmp_path_factory: pytest.TempPathFactory, events: list[AsyncEvent]
) -> None:
    folder = tmp_path_factory.mktemp("async")
    assert async_slices_of(streamed(folder, async_document(events))) == async_oracle(events)


def test_async_begin_and_end_on_two_threads_are_one_slice_and_unread_phases_are_named() -> None:
    # GIVEN an async slice started on one thread and ended on another, a nested async child,
    # and events of phases the reader does not model (a legacy async step, an object snapshot)
    events = [
        {"ph": "b", "cat": "io", "id": "0x1", "name": "load", "pid": 7, "tid": 1, "ts": 10},
        {"ph": "b", "cat": "io", "id": "0x1", "name": "decode", "pid": 7, "tid": 2, "ts": 12},
        {"ph": "e", "cat": "io", "id": "0x1", "name": "decode", "pid": 7, "tid": 2, "ts": 15},
        {"ph": "T", "cat": "io", "id": "0x1", "name": "load", "pid": 7, "tid": 1, "ts": 16},
        {"ph": "e", "cat": "io", "id": "0x1", "name": "load", "pid": 7, "tid": 3, "ts": 20,
         "args": {"bytes": 4}},
        {"ph": "O", "id": "0x9", "name": "obj", "pid": 7, "tid": 1, "ts": 21},
    ]  # fmt: skip
    trace = read_chrome(Path("async.json"), json.dumps({"traceEvents": events}).encode())
    # THEN both slices are on one track named for the tree, with their full durations, the
    # end's args merged into the begin's, and the two unread events are counted by phase
    assert [trace.strings[int(code)] for code in trace.name] == ["load", "decode"]
    assert trace.dur_ns.tolist() == [10_000, 3_000]
    assert set(trace.track.tolist()) == {0}
    assert trace.tracks.thread == ("async io 0x1",)
    assert trace.args(0) == {"bytes": 4}
    assert trace.warnings == (
        "2 event(s) of phases not read (1 'O', 1 'T'); read are X, B/E, b/e, S/F, i/I/n, C, M "
        "and s/t/f",
    )


def test_async_trees_without_an_id_or_with_both_ids_and_events_without_a_phase() -> None:
    # GIVEN async events with no id at all, one with both `id` and `id2` (the `id` decides),
    # and an event with no `ph`
    events = [
        {"ph": "b", "cat": "io", "name": "open", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "e", "cat": "io", "name": "open", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "b", "cat": "io", "id": 7, "id2": {"local": 8}, "name": "r", "pid": 1, "ts": 4},
        {"ph": "e", "cat": "io", "id": 7, "name": "r", "pid": 1, "tid": 1, "ts": 6},
        {"name": "no phase", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "b", "name": "bare", "pid": 1, "tid": 1, "ts": 7},
        {"ph": "e", "name": "bare", "pid": 1, "tid": 1, "ts": 8},
    ]
    trace = read_chrome(Path("async.json"), json.dumps({"traceEvents": events}).encode())
    # THEN each pair is one slice on its tree's track, and the phaseless event is counted
    threads = [trace.tracks.thread[int(track)] for track in trace.track]
    assert threads == ["async io", "async io 7", "async"]  # no category, no id: "async" alone
    assert trace.dur_ns.tolist() == [2_000, 2_000, 1_000]
    assert trace.warnings[0].startswith("1 event(s) of phases not read (1 without 'ph');")


def test_a_trace_of_unread_or_unpaired_events_says_why_it_has_none(tmp_path: Path) -> None:
    source = tmp_path / "unread.json"
    events = [
        {"ph": "T", "cat": "c", "id": 2, "name": "step", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "b", "cat": "c", "id": 3, "name": "open", "pid": 1, "tid": 1, "ts": 1},
    ]
    source.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(TraceFormatError) as raised:
        read_trace(source)
    assert str(raised.value) == (
        f"{source}: chrome trace contains no events (1 event(s) of phases not read (1 'T'); "
        "read are X, B/E, b/e, S/F, i/I/n, C, M and s/t/f; 1 'B' event(s) never closed by an "
        "'E' (dropped))"
    )
