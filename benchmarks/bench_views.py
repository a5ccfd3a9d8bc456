"""Time the op-graph views on a synthetic annotated module of 10,000+ ops.

Run: `.venv/bin/python benchmarks/bench_views.py [--ops 12000]`. The module is TF-shaped (generic
`tf.*` ops with fused NameLocs in `model/block_i/layer_j` scopes), every third op annotated, so it
exercises the same code paths as a real annotated capture: parse, gather profiles, build the
data-flow graph, collapse scopes and lay the result out with Graphviz.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from irprof.analyses.hotspots import hotspots
from irprof.analyses.op_graph import OpGraphOptions, build_op_graph
from irprof.analyses.profiled_ops import load_profiled_module
from irprof.renderers.base import get_op_graph_renderers


def synthetic_module(op_count: int, ops_per_layer: int = 12, layers_per_block: int = 8) -> str:
    """MLIR text of one function with `op_count` chained, scoped, partly annotated ops."""
    lines = ["module {", "  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {"]
    previous = "%arg0"
    for index in range(op_count):
        layer = index // ops_per_layer
        scope = f"model/block_{layer // layers_per_block}/layer_{layer % layers_per_block}"
        kind = ("MatMul", "BiasAdd", "Relu")[index % 3]
        attributes = ""
        if index % 3 == 0:
            total = 1000 + (index * 7919) % 50000
            attributes = (
                f" {{irprof.profile = {{count = 4 : i64, total_ns = {total} : i64, "
                f"mean_ns = {total // 4} : i64, min_ns = 1 : i64, max_ns = {total} : i64, "
                f"first_ts_ns = {index} : i64, fraction = {total / 1e9:.9f} : f64, "
                f'kernels = ["{scope}/op_{index}:{kind}"], fused_with = [], source = "bench"}}}}'
            )
        lines.append(
            f'    %{index} = "tf.{kind}"({previous}){attributes} : (tensor<8xf32>) -> '
            f'tensor<8xf32> loc(fused["{kind}:", "{scope}/op_{index}"])'
        )
        previous = f"%{index}"
    lines += [f"    return {previous} : tensor<8xf32>", "  }", "}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print the time of each stage."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=12_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.mlir"
        path.write_text(synthetic_module(args.ops))
        stages: list[tuple[str, float]] = []
        start = time.perf_counter()
        module, profiled = load_profiled_module(path)
        stages.append(("parse + gather profiles", time.perf_counter() - start))
        mark = time.perf_counter()
        hotspots(profiled.ops, by="scope")
        stages.append(("hotspots by scope", time.perf_counter() - mark))
        mark = time.perf_counter()
        graph = build_op_graph(module, profiled, OpGraphOptions())
        stages.append(
            (f"op graph ({len(graph.nodes)} nodes after grouping)", time.perf_counter() - mark)
        )
        for name in ("dot", "svg", "html"):
            mark = time.perf_counter()
            get_op_graph_renderers().get(name).render(graph)
            stages.append((f"render {name}", time.perf_counter() - mark))
        total = time.perf_counter() - start
    print(f"op graph views, {len(profiled.ops)} ops")
    for label, seconds in stages:
        print(f"  {label:<45} {seconds:7.2f} s")
    print(f"  {'total':<45} {total:7.2f} s")


if __name__ == "__main__":
    main()
