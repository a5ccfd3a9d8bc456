"""Top-level framework-op events of a torch trace, on interval boundaries (brute force)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from irprof.frameworks.torch.events import FxCall, FxProgram, top_level_op_events
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace


def trace_of(events: list[tuple[int, int, int]]) -> Trace:
    """(thread, start, duration) framework-op events named by their position."""
    builder = TraceBuilder()
    tracks = {tid: builder.track(1, tid, "host", f"thread {tid}") for tid in (1, 2)}
    for index, (tid, start, dur) in enumerate(events):
        builder.add(start, dur, tracks[tid], f"aten::op{index}", EventKind.FRAMEWORK_OP)
    return builder.build()


def test_back_to_back_ops_are_both_top_level_and_a_child_ending_with_its_parent_is_not() -> None:
    trace = trace_of([(1, 0, 10), (1, 10, 10), (1, 12, 8), (2, 15, 5)])
    names = [event.name for event in top_level_op_events(trace)]
    # op1 starts as op0 ends: top level; op2 ends with op1: nested; op3 is another thread.
    assert names == ["aten::op0", "aten::op1", "aten::op3"]


def reference_top_level(events: list[tuple[int, int, int]]) -> set[int]:
    """Events that start inside no earlier event of their thread (earlier: by start, then
    longest first, then position; inside: start <= s < end, so a back-to-back op is not):
    brute force over pairs. A crossing event (rounded timestamps) counts as nested."""

    def key(index: int) -> tuple[int, int, int]:
        return (events[index][1], -events[index][2], index)

    def starts_inside(outer: int, inner: int) -> bool:
        (t1, s1, d1), (t2, s2, _) = events[outer], events[inner]
        return t1 == t2 and key(outer) < key(inner) and s1 <= s2 < s1 + d1

    return {
        i for i in range(len(events)) if not any(starts_inside(j, i) for j in range(len(events)))
    }


@given(
    st.lists(
        st.tuples(st.integers(1, 2), st.integers(0, 8), st.integers(0, 5)), min_size=1, max_size=9
    )
)
def test_top_level_events_match_brute_force(events: list[tuple[int, int, int]]) -> None:
    trace = trace_of(events)
    got = {int(event.name.removeprefix("aten::op")) for event in top_level_op_events(trace)}
    assert got == reference_top_level(events)


@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
            st.sets(st.integers(0, n - 1), max_size=3),
        )
    )
)
def test_unused_calls_are_those_from_which_no_output_is_reachable(
    case: tuple[int, list[tuple[int, int]], set[int]],
) -> None:
    """`FxProgram.unused` against a search from each call along its readers (brute force)."""
    n, pairs, outputs = case
    edges = {(min(a, b), max(a, b)) for a, b in pairs if a != b}  # reader after its input
    users = {f"n{a}": tuple(f"n{b}" for x, b in sorted(edges) if x == a) for a in range(n)}
    calls = [FxCall(i, f"n{i}", "aten::op", ()) for i in range(n)]
    program = FxProgram(calls, outputs=tuple(f"n{o}" for o in sorted(outputs)), users=users)

    def reaches_output(node: str, seen: frozenset[str] = frozenset()) -> bool:
        return node in program.outputs or any(
            reaches_output(user, seen | {node}) for user in users[node] if user not in seen
        )

    expected = {f"n{i}" for i in range(n) if not reaches_output(f"n{i}")} if outputs else set()
    assert program.unused == expected


def test_an_in_place_call_nothing_reads_is_not_dead() -> None:
    """`x.add_(1)` changes x for its later readers: its own result being unread says nothing."""
    calls = [
        FxCall(0, "mul", "aten::mul", ()),
        FxCall(1, "add_", "aten::add_", ()),
        FxCall(2, "relu", "aten::relu", ()),
        FxCall(3, "neg", "aten::neg", ()),
    ]
    users = {"mul": ("add_", "relu")}
    program = FxProgram(calls, outputs=("relu",), users=users)
    assert program.unused == {"neg"}


def test_writes_into_a_scratch_tensor_nothing_reads_are_dead() -> None:
    """HF BigBird fills an attention-probabilities tensor (`zeros`, then `copy_` into `slice`
    views of it) that nothing returns when the caller does not ask for it: the writes, the
    views and the tensor are dead with it. Writing into a graph input or parameter (`""`), or
    into a tensor a live call reads through a view, stays live."""
    targets = {
        "zeros": "zeros", "softmax": "softmax", "slice": "slice", "copy_": "copy_",
        "relu": "relu", "add_": "add_", "mul": "mul", "view": "view", "copy_1": "copy_",
        "out": "cat",
    }  # fmt: skip
    calls = [FxCall(i, name, f"aten::{op}", ()) for i, (name, op) in enumerate(targets.items())]
    users = {
        "zeros": ("slice",), "softmax": ("copy_", "relu"), "slice": ("copy_",),
        "relu": ("add_", "out"), "mul": ("view",), "view": ("copy_1", "out"),
    }  # fmt: skip
    inputs = {"slice": ("zeros",), "copy_": ("slice", "softmax"), "relu": ("softmax",),
              "add_": ("relu",), "view": ("mul",), "copy_1": ("view", "softmax"),
              "out": ("relu", "view")}  # fmt: skip
    writes = {"copy_": ("slice",), "add_": ("",), "copy_1": ("view",)}
    aliases = {"slice": "zeros", "view": "mul"}

    def program(**changes: Any) -> FxProgram:
        fields: dict[str, Any] = {
            "outputs": ("out",), "users": users, "writes": writes, "aliases": aliases,
            "inputs": inputs,
        }  # fmt: skip
        return FxProgram(calls, **{**fields, **changes})

    # add_ writes a graph input (""); copy_1 writes a view of mul, which `out` reads.
    assert program().unused == {"zeros", "slice", "copy_"}
    # Returning a view of the scratch tensor makes its writes live.
    returned = program(outputs=("out", "slice"))
    assert returned.unused == set()
    # A capture without the schema's record keeps every in-place call live, as before.
    assert program(writes=None).unused == set()
