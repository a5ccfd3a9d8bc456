"""B/E pairing's warnings counted exactly, and the merge of an E event's args into its B's.

Written from the mutants of `readers/chrome/pairing.py` the first tests let through: the
oracle tests compare slices, not the counts in the warnings, and no test merged args.
"""

from __future__ import annotations

import msgspec
import numpy as np

from irprof.readers.chrome.pairing import merge_args, pair_begin_end

BEGIN, END, OTHER = 1, 2, 0


def pair(events: list[tuple[int, int, int]]) -> tuple[list[tuple[int, int, int]], list[str]]:
    """(phase, track, ts) events -> (begin row, end row, duration) slices and the warnings."""
    warnings: list[str] = []
    phase = np.asarray([e[0] for e in events], dtype=np.int8)
    track = np.asarray([e[1] for e in events], dtype=np.int64)
    ts = np.asarray([e[2] for e in events], dtype=np.int64)
    slices = pair_begin_end(phase, track, ts, BEGIN, END, warnings)
    found = list(
        zip(
            slices.begin_rows.tolist(),
            slices.end_rows.tolist(),
            slices.dur_ns.tolist(),
            strict=True,
        )
    )
    return found, warnings


def test_unmatched_ends_and_unclosed_begins_are_counted() -> None:
    events = [
        (END, 1, 0),  # nothing open on track 1 yet
        (BEGIN, 1, 5),
        (END, 1, 9),
        (END, 1, 10),  # the B is closed already
        (END, 2, 3),  # another track: its own stack
        (BEGIN, 2, 20),
        (BEGIN, 3, 1),
        (BEGIN, 3, 2),
        (OTHER, 3, 4),
    ]
    slices, warnings = pair(events)
    assert slices == [(1, 2, 4)]
    assert warnings == [
        "3 'E' event(s) without an open 'B' on their thread",
        "3 'B' event(s) never closed by an 'E' (dropped)",
    ]


def test_one_lone_begin_or_end_is_reported() -> None:
    assert pair([(BEGIN, 1, 5)]) == ([], ["1 'B' event(s) never closed by an 'E' (dropped)"])
    assert pair([(END, 1, 5)]) == ([], ["1 'E' event(s) without an open 'B' on their thread"])
    assert pair([(BEGIN, 1, 5), (END, 1, 7)]) == ([(0, 1, 2)], [])
    assert pair([(OTHER, 1, 5)]) == ([], [])
    assert pair([]) == ([], [])


def decoded(data: bytes) -> object:
    return msgspec.json.decode(data)


def test_an_end_events_args_are_merged_into_its_begins() -> None:
    assert decoded(merge_args(b'{"a": 1, "b": 2}', b'{"b": 3, "c": 4}')) == {
        "a": 1,
        "b": 3,
        "c": 4,
    }
    assert decoded(merge_args(b"", b'{"c": 4}')) == {"c": 4}  # a B without args
    assert decoded(merge_args(b'{"a": 1}', b"{}")) == {"a": 1}
    # Args that are not objects are not merged: the B's stay as they are.
    assert decoded(merge_args(b"[1, 2]", b'{"c": 4}')) == [1, 2]
    assert decoded(merge_args(b'{"a": 1}', b"[3]")) == {"a": 1}
    assert decoded(merge_args(b"", b"[3]")) == {}
