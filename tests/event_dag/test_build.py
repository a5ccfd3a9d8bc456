"""EventDag: overlap levels on a hand-checked example, causal edges, invariants, exports, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.cli.main import main
from irprof.errors import UsageError
from irprof.event_dag import DagFilter, build_event_dag, dag_document
from irprof.event_dag.export import save_graphml
from irprof.readers import read_trace
from irprof.renderers.dag_dot import render_dag_dot, short_label
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace


def intervals(*events: tuple[str, int, int, int]) -> Trace:
    """(name, track, start, end) events."""
    builder = TraceBuilder()
    for name, track, start, end in events:
        builder.add(start, end - start, builder.track(1, track), name)
    return builder.build()


# A B overlap (level 0); C alone (level 1); D E F mutually overlap (level 2); G (level 3).
THESIS_EXAMPLE = intervals(
    ("A", 1, 0, 10),
    ("B", 2, 5, 12),
    ("C", 1, 12, 20),
    ("D", 1, 21, 30),
    ("E", 2, 22, 28),
    ("F", 3, 25, 40),
    ("G", 1, 40, 45),
)


def named_edges(trace: Trace, mode: str) -> set[tuple[str, str]]:
    dag = build_event_dag(trace, mode)
    return {
        (dag.node_name(src), dag.node_name(dst))
        for src, dst in zip(dag.edge_src.tolist(), dag.edge_dst.tolist(), strict=True)
    }


def test_levels_mode_reproduces_the_original_hand_checked_example() -> None:
    dag = build_event_dag(THESIS_EXAMPLE, "levels")
    levels = {dag.node_name(node): int(dag.level[node]) for node in range(len(dag))}
    assert levels == {"A": 0, "B": 0, "C": 1, "D": 2, "E": 2, "F": 2, "G": 3}
    # every node of a level links to every node of the next level
    assert named_edges(THESIS_EXAMPLE, "levels") == {
        ("A", "C"), ("B", "C"),
        ("C", "D"), ("C", "E"), ("C", "F"),
        ("D", "G"), ("E", "G"), ("F", "G"),
    }  # fmt: skip
    document = dag_document(dag)
    node_a = document["nodes"][0]
    assert set(node_a) >= {"id", "name", "ts", "duration", "adj", "track", "kind", "level"}
    assert (node_a["name"], node_a["ts"], node_a["duration"]) == ("A", 0, 10)
    names = [node["name"] for node in document["nodes"]]
    assert sorted(names[i] for i in node_a["adj"]) == ["C"]
    assert {"edgeFrom": 0, "edgeTo": names.index("C"), "kind": "level"} in document["edges"]


def test_levels_mode_refuses_an_all_pairs_explosion() -> None:
    wide = intervals(
        *[(f"e{i}", i, 0, 10) for i in range(50)], *[(f"f{i}", i, 20, 30) for i in range(50)]
    )
    assert len(build_event_dag(wide, "levels").edge_src) == 2500
    with pytest.raises(UsageError, match="2,500 edges"):
        build_event_dag(wide, "levels", max_level_edges=1000)


def test_causal_mode_links_nesting_siblings_and_flows_but_not_mere_overlap() -> None:
    builder = TraceBuilder()
    cpu, gpu = builder.track(1, 1), builder.track(2, 7)
    op = builder.add(0, 100, cpu, "aten::mm", EventKind.FRAMEWORK_OP)
    launch = builder.add(10, 10, cpu, "launch", EventKind.RUNTIME)
    builder.add(30, 10, cpu, "sync", EventKind.RUNTIME)
    builder.add(200, 10, cpu, "aten::add", EventKind.FRAMEWORK_OP)
    kernel = builder.add(50, 40, gpu, "gemm", EventKind.KERNEL)
    builder.add(60, 5, gpu, "nested kernel", EventKind.KERNEL)
    builder.flow(launch, kernel, 1)
    del op
    edges = named_edges(builder.build(), "causal")
    assert edges == {
        ("aten::mm", "launch"),
        ("aten::mm", "sync"),
        ("launch", "sync"),
        ("aten::mm", "aten::add"),
        ("launch", "gemm"),
        ("gemm", "nested kernel"),
    }
    dag = build_event_dag(builder.build())
    depth = {dag.node_name(node): int(dag.level[node]) for node in range(len(dag))}
    assert depth["aten::mm"] == 0 and depth["launch"] == 1
    parent = {dag.node_name(node): int(dag.parent[node]) for node in range(len(dag))}
    assert dag.node_name(parent["sync"]) == "aten::mm" and parent["aten::add"] == -1


def test_filters_counters_and_backward_flows() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 1)
    late = builder.add(100, 10, track, "late", EventKind.RUNTIME)
    early = builder.add(0, 50, builder.track(1, 2), "early", EventKind.RUNTIME)
    builder.add(20, 1, track, "tiny", EventKind.RUNTIME)
    builder.add(30, 0, track, "memory", EventKind.COUNTER)
    builder.flow(late, early, 9)  # host/device clock skew: points backwards
    trace = builder.build()
    dag = build_event_dag(trace)
    assert sorted(dag.node_name(n) for n in range(len(dag))) == ["early", "late", "tiny"]
    assert any("backwards" in note for note in dag.notes)
    assert len(build_event_dag(trace, event_filter=DagFilter(min_dur_ns=5))) == 2
    assert len(build_event_dag(trace, event_filter=DagFilter(track_regex="/2$"))) == 1
    assert len(build_event_dag(trace, event_filter=DagFilter(name_regex="^(late|tiny)$"))) == 2
    with pytest.raises(UsageError, match="not a valid regular expression"):
        build_event_dag(trace, event_filter=DagFilter(name_regex="("))


interval_lists = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 1000), st.integers(0, 300)), max_size=60
)


@settings(max_examples=80, deadline=None)
@given(events=interval_lists, mode=st.sampled_from(["causal", "levels"]))
def test_any_intervals_give_an_acyclic_dag_with_every_event_once(
    events: list[tuple[int, int, int]], mode: str
) -> None:
    builder = TraceBuilder()
    for track, start, dur in events:
        builder.add(start, dur, builder.track(1, track), "e")
    trace = builder.build()
    dag = build_event_dag(trace, mode)
    assert sorted(dag.rows.tolist()) == list(range(len(trace)))
    assert np.all(dag.edge_src < dag.edge_dst)  # numbering is a topological order
    assert np.all(dag.ts_ns[dag.edge_src] <= dag.ts_ns[dag.edge_dst])  # forward in time
    graph = dag.to_networkx()
    assert graph.number_of_nodes() == len(trace)
    assert nx.is_directed_acyclic_graph(graph)
    if mode == "causal":
        # each parent contains its child on the same track
        nested = np.nonzero(dag.parent >= 0)[0]
        up = dag.parent[nested]
        assert np.all(dag.track[up] == dag.track[nested])
        assert np.all(dag.ts_ns[up] <= dag.ts_ns[nested])
        assert np.all(dag.ts_ns[up] + dag.dur_ns[up] >= dag.ts_ns[nested] + dag.dur_ns[nested])


def test_graphml_and_dot_exports(tmp_path: Path) -> None:
    dag = build_event_dag(THESIS_EXAMPLE)
    save_graphml(dag, tmp_path / "dag.graphml")
    graph = nx.read_graphml(tmp_path / "dag.graphml")
    assert graph.number_of_nodes() == 7 and graph.number_of_edges() == dag.edge_count
    dot = render_dag_dot(dag)
    assert dot.startswith("digraph events {") and "duration (log scale)" in dot
    assert dot.count("->") >= dag.edge_count
    assert short_label("sequential_1/dense1_1/BiasAdd:_MklNativeFusedMatMul").endswith(
        "_MklNativeFusedMatMul"
    )
    few = render_dag_dot(dag, max_nodes=3)
    assert "the 3 longest of 7 events" in few


def test_cli_writes_json_graphml_dot_and_svg(tmp_path: Path, fixtures: Path) -> None:
    trace = fixtures / "traces" / "jax_mlp.xplane.pb"
    out = {suffix: tmp_path / f"dag.{suffix}" for suffix in ("json", "graphml", "dot", "svg")}
    argv = ["dag", str(trace), "-o", str(out["json"]), "--graphml", str(out["graphml"])]
    argv += ["--dot", str(out["dot"]), "--svg", str(out["svg"]), "--track", "XLA"]
    assert main(argv) == 0
    document = json.loads(out["json"].read_text())
    assert document["mode"] == "causal"
    assert {node["kind"] for node in document["nodes"]} >= {"kernel"}
    loaded = read_trace(trace)
    on_xla = [
        row for row in range(len(loaded)) if "XLA" in loaded.tracks.label(int(loaded.track[row]))
    ]
    assert len(document["nodes"]) == len(on_xla)
    svg = out["svg"].read_text()
    assert svg.lstrip().startswith("<?xml") and "duration (log scale)" in svg


def test_cli_levels_mode_and_empty_selection(tmp_path: Path, fixtures: Path) -> None:
    trace = fixtures / "traces" / "tf_matmul.xplane.pb"
    assert main(["dag", str(trace), "-o", str(tmp_path / "d.json"), "--mode", "levels"]) == 0
    assert json.loads((tmp_path / "d.json").read_text())["mode"] == "levels"
    argv = ["dag", str(trace), "-o", str(tmp_path / "e.json"), "--name", "^no such event$"]
    assert main(argv) == 2
    assert not (tmp_path / "e.json").exists()
