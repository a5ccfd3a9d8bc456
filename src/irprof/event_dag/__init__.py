"""The event DAG of a trace (nodes/edges JSON, NetworkX), built by sweeps (see `dag.model`)."""

from irprof.event_dag.export import dag_document, dag_to_networkx, save_dag_json, save_graphml
from irprof.event_dag.model import DAG_MODES, DagFilter, EventDag, build_event_dag

__all__ = [
    "DAG_MODES",
    "DagFilter",
    "EventDag",
    "build_event_dag",
    "dag_document",
    "dag_to_networkx",
    "save_dag_json",
    "save_graphml",
]
