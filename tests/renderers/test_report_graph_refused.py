"""A report whose op graph Graphviz cannot lay out is still written, saying why there is no graph.

GIVEN the shipped JAX MLP bundle, annotated, WHEN its op graph is over the layout limit (the
limit lowered below the graph's node count), THEN the report's payload has no graph, a note
with the reason, and every other part as without the limit.
"""

from __future__ import annotations

import pytest

from irprof.analyses.report_data import build_report_data
from irprof.renderers import op_graph_svg
from irprof.renderers.report_html import report_payload
from tests.renderers.test_report_private_functions import annotated_jax_copy


def test_a_graph_too_big_to_lay_out_leaves_a_note_and_the_rest(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = build_report_data(annotated_jax_copy(tmp_path_factory, "mlp_run"))
    (drawn,) = report_payload(data)["levels"]
    assert drawn["graph"] is not None and drawn["graph_note"] == ""
    nodes = len(drawn["graph"]["nodes"])
    monkeypatch.setattr(op_graph_svg, "MAX_LAYOUT_NODES", nodes - 1)
    (refused,) = report_payload(data)["levels"]
    assert refused["graph"] is None
    kinds = [node["kind"] for node in drawn["graph"]["nodes"].values()]
    parts = [
        f"{kinds.count(kind)} {label}"
        for kind, label in (("op", "ops"), ("group", "scope groups"), ("input", "inputs"))
        if kind in kinds
    ]
    assert refused["graph_note"].startswith(
        f"op graph not drawn: @{drawn['graph']['function']}: {nodes} nodes ({', '.join(parts)}) "
        f"are too many to lay out (limit {nodes - 1})"
    )
    # Nothing else changes.
    assert {k: v for k, v in refused.items() if not k.startswith("graph")} == {
        k: v for k, v in drawn.items() if not k.startswith("graph")
    }
