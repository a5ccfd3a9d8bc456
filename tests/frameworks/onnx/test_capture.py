"""`irprof capture onnx` end to end: the bundle, its warm-up split, node names in the MLIR's
locations (stamped where the model or the importer leaves them out), the views on the bundle,
and refusals (exit 2, no bundle)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.mlir.op_index import derive_op_infos


def _runs(path: Path) -> int:
    return sum(1 for event in json.loads(path.read_text()) if event["name"] == "model_run")


def test_the_bundle_holds_the_profiled_runs_and_both_graphs(mlp_run: Path) -> None:
    manifest = json.loads((mlp_run / "manifest.json").read_text())
    assert manifest["framework"] == "onnx" and manifest["ir_levels"] == ["onnx"]
    assert manifest["options"]["fed_shapes"] == {"images": [3, 3, 8, 8]}  # --dim batch=3
    assert _runs(mlp_run / "trace" / "onnxruntime.json") == 4  # --steps 4
    assert _runs(mlp_run / "trace" / "onnxruntime.full.json") == 4 + 2  # + default warm-up
    for name in ("ir/model.onnx", "ir/onnxruntime.optimized.onnx", "ir/onnx.graphs.json"):
        assert manifest["fingerprints"][name].startswith("sha256:"), name
        assert (mlp_run / name).stat().st_size > 0


def test_every_node_locates_its_op(transformer_run: Path) -> None:
    model = onnx.load(str(transformer_run / "ir" / "model.onnx"))
    infos = derive_op_infos(RunBundle(transformer_run).ir("onnx"))
    located = {info.keys.name for info in infos if info.op_name == "torch.operator"}
    nodes = {node.name for node in model.graph.node}
    # Constant nodes included: the importer locates them by their output, irprof stamps them.
    assert nodes <= located
    assert any(node.op_type == "Constant" for node in model.graph.node)


def test_top_annotate_and_report_work_on_the_bundle(
    mlp_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["top", str(mlp_run)]) == 0
    assert "fc2.matmul" in capsys.readouterr().out
    report = tmp_path / "report.html"
    assert main(["report", str(mlp_run), "-o", str(report), "--no-peaks"]) == 0
    assert "fc1.matmul" in report.read_text()
    assert "irprof.profile" in (mlp_run / "annotated" / "onnx.mlir").read_text()


def _unnamed_model() -> onnx.ModelProto:
    """MatMul, Add, Relu and a Constant, none of them named (names are optional in ONNX)."""
    rng = np.random.default_rng(1)
    weight = numpy_helper.from_array(rng.standard_normal((6, 4)).astype(np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(
                np.ones(4, np.float32))),
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
            helper.make_node("Relu", ["y"], ["z"], name="Relu_3"),  # taken by the stamp next
        ],
        "unnamed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4])],
        [weight],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_an_onnx_file_with_unnamed_nodes_and_npz_inputs(tmp_path: Path) -> None:
    model_path = tmp_path / "unnamed.onnx"
    onnx.save(_unnamed_model(), str(model_path))
    npz = tmp_path / "inputs.npz"
    np.savez(npz, x=np.ones((5, 6), np.float32))
    run = tmp_path / "run"
    argv = ["capture", "onnx", str(model_path), "-o", str(run), "--inputs", str(npz)]
    assert main([*argv, "--steps", "2", "--warmup", "1", "--optimization", "disabled"]) == 0
    assert main(["annotate", str(run)]) == 0
    saved = onnx.load(str(run / "ir" / "model.onnx"))
    names = [node.name for node in saved.graph.node]
    assert all(names) and len(set(names)) == len(names) == 5
    events = {e["name"] for e in json.loads((run / "trace" / "onnxruntime.json").read_text())}
    ran = [name for name in names if f"{name}_kernel_time" in events]
    assert len(ran) == 4  # the Constant is an initializer to ORT
    record = json.loads((run / "coverage.json").read_text())["levels"]["onnx"]
    assert record["attributed_ns"] == record["profiled_ns"] > 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["options"]["fed_shapes"] == {"x": [5, 6]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dim", "batch"], "--dim 'batch'"),
        (["--optimization", "max"], "--optimization 'max'"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    model_path = tmp_path / "m.onnx"
    onnx.save(_unnamed_model(), str(model_path))
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model_path), "-o", str(run), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not run.exists()


def test_a_file_that_is_not_onnx_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_path = tmp_path / "broken.onnx"
    model_path.write_bytes(b"\x08\x07not a protobuf at all")
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model_path), "-o", str(run)]) == 2
    assert str(model_path) in capsys.readouterr().err
    assert not run.exists()


@pytest.mark.parametrize(
    ("framework", "name", "what"),
    [
        ("onnx", "absent.onnx", "no such ONNX model"),
        ("onnx", "absent.py", "no such script"),
        ("iree", "absent.mlir", "no such MLIR file"),
    ],
)
def test_a_missing_model_is_named_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], framework: str, name: str, what: str
) -> None:
    run = tmp_path / "run"
    assert main(["capture", framework, str(tmp_path / name), "-o", str(run)]) == 2
    assert f"{tmp_path / name}: {what}" in capsys.readouterr().err
    assert not run.exists()


def _zipmap_model() -> onnx.ModelProto:
    """A softmax whose probabilities ZipMap turns into a sequence of maps, as skl2onnx writes a
    classifier's `output_probability` by default."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    probabilities = helper.make_value_info(
        "probabilities",
        helper.make_sequence_type_proto(
            helper.make_map_type_proto(
                TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
            )
        ),
    )
    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], name="softmax"),
        helper.make_node(
            "ZipMap", ["p"], ["probabilities"], name="zip", domain="ai.onnx.ml",
            classlabels_int64s=[0, 1, 2],
        ),
    ]  # fmt: skip
    graph = helper.make_graph(nodes, "zipmap", [x], [probabilities])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def test_a_model_with_a_sequence_of_maps_exits_2_naming_the_value_and_its_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ONNX Runtime runs it; IREE's importer takes tensors only: the error says which value."""
    model_path = tmp_path / "zipmap.onnx"
    onnx.save(_zipmap_model(), str(model_path))
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model_path), "-o", str(run), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert str(model_path) in err
    assert (
        "output 'probabilities' (sequence of map(int64 -> tensor(float32)), "
        "made by ZipMap node 'zip')"
    ) in err
    assert not run.exists()


def _branching_model() -> onnx.ModelProto:
    """An `If` on the input's sum: a Gemm and a Relu in one branch, a Gemm and a Tanh in the
    other; a Gemm after it."""
    rng = np.random.default_rng(2)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def branch(name: str, activation: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Gemm", ["x", f"w_{name}"], [f"g_{name}"], name=f"gemm_{name}"),
             helper.make_node(activation, [f"g_{name}"], [f"h_{name}"], name=f"act_{name}")],
            name, [], [helper.make_tensor_value_info(f"h_{name}", TensorProto.FLOAT, [8, 16])],
        )  # fmt: skip

    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"], name="positive"),
         helper.make_node("If", ["c"], ["h"], name="branch", then_branch=branch("a", "Relu"),
                          else_branch=branch("b", "Tanh")),
         helper.make_node("Gemm", ["h", "w_out"], ["y"], name="head")],
        "branching",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 4])],
        [weight("w_a", (16, 16)), weight("w_b", (16, 16)), weight("w_out", (16, 4)),
         numpy_helper.from_array(np.zeros((), np.float32), "zero")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _node_events(run: Path) -> list[tuple[int, int, str]]:
    """(start us, end us, node name) of every ORT node event of the profiled runs."""
    return [
        (e["ts"], e["ts"] + e["dur"], e["name"].removesuffix("_kernel_time"))
        for e in json.loads((run / "trace" / "onnxruntime.json").read_text())
        if e.get("cat") == "Node" and e["ph"] == "X"
    ]


def _held(event: tuple[int, int, str], events: list[tuple[int, int, str]]) -> bool:
    """Inside another, longer node event (brute force over all pairs)."""
    return any(
        o is not event
        and o[0] <= event[0]
        and event[1] <= o[1]
        and o[1] - o[0] > event[1] - event[0]
        for o in events
    )


def _op_totals(run: Path) -> dict[str, int]:
    entries = json.loads((run / "opprofile.onnx.json").read_text())["entries"]
    return {entry["key"]["name"]: entry["profile"]["total_ns"] for entry in entries}


def test_an_ifs_branch_nodes_get_their_own_events_counted_once(tmp_path: Path) -> None:
    """ORT times an `If`'s branch nodes inside the `If`'s own event. Their events were once
    counted again in the profiled time (108 us where the nodes took 90 us in a torch.cond
    export), then all given to the `If`; now each goes to its branch node's op, the `If`
    keeps the rest of its event, and the branch that did not run says so."""
    model_path = tmp_path / "branching.onnx"
    onnx.save(_branching_model(), str(model_path))
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model_path), "-o", str(run), "--steps", "3"]) == 0
    assert main(["annotate", str(run)]) == 0
    events = _node_events(run)
    # GIVEN (brute force over the trace) node events inside another node event
    nested = [event for event in events if _held(event, events)]
    top = [event for event in events if not _held(event, events)]
    taken = {name for _, _, name in nested}
    ran = "a" if any(name.endswith("_a") for name in taken) else "b"
    assert nested and all("branch" not in name for name in taken)
    assert {name[-1] for name in taken} == {ran}  # one branch's nodes, maybe fused by ORT
    # THEN the profiled time counts each top-level node event once, and all of it is the ops'
    record = json.loads((run / "coverage.json").read_text())["levels"]["onnx"]
    assert record["profiled_ns"] == sum(end - start for start, end, _ in top) * 1000
    assert record["attributed_ns"] == record["profiled_ns"]
    profile_totals = json.loads((run / "opprofile.onnx.json").read_text())["totals"]
    assert profile_totals["subgraph_node_events"] == len(nested)
    assert profile_totals["subgraph_node_events_itemized"] == len(nested)
    totals = _op_totals(run)
    inside = sum(end - start for start, end, _ in nested) * 1000
    if_time = sum(end - start for start, end, name in top if name == "branch") * 1000
    assert totals["branch"] == if_time - inside
    assert totals[f"gemm_{ran}"] + totals[f"act_{ran}"] == inside
    assert totals[f"gemm_{ran}"] > 0 and totals[f"act_{ran}"] > 0
    other = "b" if ran == "a" else "a"
    idle = [
        op for op in record["unmatched_ops"]
        if any(f"'{name}_{other}'" in op["location"] for name in ("gemm", "act"))
    ]  # fmt: skip
    assert len(idle) == 2
    assert all("with no event of its own placed inside" in op["reason"] for op in idle)


def _looping_model(trips: int) -> onnx.ModelProto:
    """A `Loop` of `trips` iterations whose body multiplies the carried state by a weight
    (MatMul) and applies Tanh; a Relu after it."""
    weight = numpy_helper.from_array(
        np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32) * 0.3, "w"
    )
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["m"], name="step_matmul"),
         helper.make_node("Tanh", ["m"], ["h_out"], name="step_tanh"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="step_cond")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [4, 16])],
    )  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["h"], name="recurrence", body=body),
         helper.make_node("Relu", ["h"], ["y"], name="out")],
        "looping",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [weight, numpy_helper.from_array(np.array(trips, np.int64), "trips")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_loops_body_nodes_get_their_events_of_every_iteration(tmp_path: Path) -> None:
    """A `Loop` body's nodes run once per iteration inside the `Loop`'s event (tf2onnx turns
    a Keras GRU into one): each body op gets its events of every iteration of every step."""
    trips, steps = 5, 3
    model_path = tmp_path / "looping.onnx"
    onnx.save(_looping_model(trips), str(model_path))
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(model_path), "-o", str(run), "--steps", str(steps)]) == 0
    assert main(["annotate", str(run)]) == 0
    events = _node_events(run)
    nested = [event for event in events if _held(event, events)]
    loop = [event for event in events if event[2] == "recurrence"]
    assert len(loop) == steps
    totals = _op_totals(run)
    entries = json.loads((run / "opprofile.onnx.json").read_text())["entries"]
    counts = {entry["key"]["name"]: entry["profile"]["count"] for entry in entries}
    for node in ("step_matmul", "step_tanh"):
        mine = [event for event in nested if event[2] == node]
        assert len(mine) == trips * steps
        assert counts[node] == trips * steps
        assert totals[node] == sum(end - start for start, end, _ in mine) * 1000
    inside = sum(end - start for start, end, _ in nested) * 1000
    assert totals["recurrence"] == sum(end - start for start, end, _ in loop) * 1000 - inside
