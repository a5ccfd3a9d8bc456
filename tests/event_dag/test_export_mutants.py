"""The DAG's exports field by field: `dag.json`'s document, the NetworkX graph and GraphML, on
a DAG built column by column so every expected value is written out from its columns.

Written from the mutants of `event_dag/export.py`, whose only test counted GraphML's nodes
and edges.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np

from irprof.event_dag.export import (
    dag_document,
    dag_to_networkx,
    save_dag_json,
    save_graphml,
)
from irprof.event_dag.model import EventDag
from irprof.trace.model import EventKind


def small_dag() -> EventDag:
    """Three nodes, set column by column: `b` (a kernel on gpu/0, 0..30), `c` (runtime on
    host/1, 5..15, parent node 0) and `a` (a step on gpu/0, 20..24, parent node 0); edges
    listed out of order: 0 -> 2 (nest), 1 -> 2 (sequence), 0 -> 1 (flow)."""
    i64 = np.int64
    return EventDag(
        mode="causal",
        rows=np.array([4, 7, 9], dtype=i64),
        ts_ns=np.array([0, 5, 20], dtype=i64),
        dur_ns=np.array([30, 10, 4], dtype=i64),
        track=np.array([1, 0, 1], dtype=i64),
        name=np.array([1, 2, 0], dtype=i64),
        kind=np.array([EventKind.KERNEL, EventKind.RUNTIME, EventKind.STEP], dtype=np.int8),
        level=np.array([0, 1, 2], dtype=i64),
        parent=np.array([-1, 0, 0], dtype=i64),
        edge_src=np.array([0, 1, 0], dtype=i64),
        edge_dst=np.array([2, 2, 1], dtype=i64),
        edge_kind=np.array([0, 1, 2], dtype=np.int8),
        strings=("a", "b", "c"),
        track_labels=("host/1", "gpu/0"),
        source="run.json",
        notes=("1 flow link(s) point backwards in time; left out",),
    )


EXPECTED_NODES = [
    {"id": 0, "name": "b", "ts": 0, "duration": 30, "adj": [1, 2], "track": "gpu/0",
     "kind": "kernel", "level": 0, "parent": -1},
    {"id": 1, "name": "c", "ts": 5, "duration": 10, "adj": [2], "track": "host/1",
     "kind": "runtime", "level": 1, "parent": 0},
    {"id": 2, "name": "a", "ts": 20, "duration": 4, "adj": [], "track": "gpu/0",
     "kind": "step", "level": 2, "parent": 0},
]  # fmt: skip
EXPECTED_EDGES = [
    {"edgeFrom": 0, "edgeTo": 2, "kind": "nest"},
    {"edgeFrom": 1, "edgeTo": 2, "kind": "sequence"},
    {"edgeFrom": 0, "edgeTo": 1, "kind": "flow"},
]


def test_the_document_holds_every_column_and_edge() -> None:
    document = dag_document(small_dag())
    assert document == {
        "format": "irprof.event_dag",
        "version": 1,
        "mode": "causal",
        "source": "run.json",
        "notes": ["1 flow link(s) point backwards in time; left out"],
        "nodes": EXPECTED_NODES,
        "edges": EXPECTED_EDGES,
    }
    assert list(document) == ["format", "version", "mode", "source", "notes", "nodes", "edges"]


def test_dag_json_is_the_document(tmp_path: Path) -> None:
    path = tmp_path / "dag.json"
    save_dag_json(small_dag(), path)
    assert json.loads(path.read_text()) == dag_document(small_dag())
    save_dag_json(small_dag(), str(tmp_path / "again.json"))
    assert json.loads((tmp_path / "again.json").read_text())["nodes"] == EXPECTED_NODES


def test_the_networkx_graph_carries_the_columns_and_edge_kinds() -> None:
    graph = dag_to_networkx(small_dag())
    assert isinstance(graph, nx.DiGraph)
    assert graph.graph == {"mode": "causal", "source": "run.json"}
    expected_nodes = {
        node["id"]: {key: node[key] for key in
                     ("name", "ts", "duration", "track", "kind", "level", "parent")}
        for node in EXPECTED_NODES
    }  # fmt: skip
    assert dict(graph.nodes(data=True)) == expected_nodes
    assert sorted(graph.edges(data=True)) == sorted(
        (edge["edgeFrom"], edge["edgeTo"], {"kind": edge["kind"]}) for edge in EXPECTED_EDGES
    )
    assert all(type(value) is int for _, data in graph.nodes(data=True)
               for key, value in data.items() if key not in ("name", "track", "kind"))  # fmt: skip
    assert small_dag().to_networkx().graph == graph.graph


def test_graphml_reads_back_as_the_graph(tmp_path: Path) -> None:
    path = tmp_path / "dag.graphml"
    save_graphml(small_dag(), path)
    graph = nx.read_graphml(path, node_type=int)
    assert (graph.graph["mode"], graph.graph["source"]) == ("causal", "run.json")
    assert dict(graph.nodes(data=True)) == dict(dag_to_networkx(small_dag()).nodes(data=True))
    assert sorted(graph.edges(data=True)) == sorted(
        (edge["edgeFrom"], edge["edgeTo"], {"kind": edge["kind"]}) for edge in EXPECTED_EDGES
    )
    save_graphml(small_dag(), str(tmp_path / "again.graphml"))
    assert nx.read_graphml(tmp_path / "again.graphml").number_of_nodes() == 3
