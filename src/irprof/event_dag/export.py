"""EventDag to files: the `dag.json` of nodes with adjacency lists, NetworkX, GraphML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from irprof.event_dag.model import EDGE_KIND_LABELS, EventDag
from irprof.fileio import atomic_write, write_bytes_atomic
from irprof.trace.model import EventKind

DAG_FORMAT = "irprof.event_dag"
DAG_VERSION = 1


def dag_document(dag: EventDag) -> dict[str, Any]:
    """`{"nodes": [{"id","name","ts","duration","adj",...}], "edges": [{"edgeFrom","edgeTo"}]}`.

    The keys are those of the original traceReader's `dag.json`, kept as they were (ts and
    duration here in integer nanoseconds); `track`, `kind`, `level`, `parent` and the edge
    `kind` are additions.
    """
    adjacency = dag.successors()
    names = [dag.strings[index] for index in dag.name.tolist()]
    kind_labels = [kind.label for kind in sorted(EventKind)]
    nodes = [
        {
            "id": node,
            "name": name,
            "ts": ts,
            "duration": dur,
            "adj": adj,
            "track": dag.track_labels[track],
            "kind": kind_labels[kind],
            "level": level,
            "parent": parent,
        }
        for node, (name, ts, dur, adj, track, kind, level, parent) in enumerate(
            zip(
                names,
                dag.ts_ns.tolist(),
                dag.dur_ns.tolist(),
                adjacency,
                dag.track.tolist(),
                dag.kind.tolist(),
                dag.level.tolist(),
                dag.parent.tolist(),
                strict=True,
            )
        )
    ]
    edges = [
        {"edgeFrom": src, "edgeTo": dst, "kind": EDGE_KIND_LABELS[kind]}
        for src, dst, kind in zip(
            dag.edge_src.tolist(), dag.edge_dst.tolist(), dag.edge_kind.tolist(), strict=True
        )
    ]
    return {
        "format": DAG_FORMAT,
        "version": DAG_VERSION,
        "mode": dag.mode,
        "source": dag.source,
        "notes": list(dag.notes),
        "nodes": nodes,
        "edges": edges,
    }


def save_dag_json(dag: EventDag, path: str | Path) -> None:
    """Write `dag.json` atomically."""
    write_bytes_atomic(path, msgspec.json.encode(dag_document(dag)))


def dag_to_networkx(dag: EventDag) -> Any:
    """A `networkx.DiGraph` with the node columns as attributes and the edge kind on edges."""
    import networkx as nx  # imported here: only exports need it

    graph = nx.DiGraph(mode=dag.mode, source=dag.source)
    kind_labels = [kind.label for kind in sorted(EventKind)]
    for node in range(len(dag)):
        graph.add_node(
            node,
            name=dag.node_name(node),
            ts=int(dag.ts_ns[node]),
            duration=int(dag.dur_ns[node]),
            track=dag.track_labels[int(dag.track[node])],
            kind=kind_labels[int(dag.kind[node])],
            level=int(dag.level[node]),
            parent=int(dag.parent[node]),
        )
    graph.add_edges_from(
        (src, dst, {"kind": EDGE_KIND_LABELS[kind]})
        for src, dst, kind in zip(
            dag.edge_src.tolist(), dag.edge_dst.tolist(), dag.edge_kind.tolist(), strict=True
        )
    )
    return graph


def save_graphml(dag: EventDag, path: str | Path) -> None:
    """Write GraphML (for yEd, Gephi, NetworkX) atomically."""
    import networkx as nx

    graph = dag_to_networkx(dag)
    with atomic_write(path) as handle:
        nx.write_graphml(graph, handle)
