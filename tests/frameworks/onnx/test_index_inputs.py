"""Integer inputs that index a weight get random values below its size: found through the
graph's def-use (through value-keeping ops, on the gathered axis), whatever the names; the
capture of a BERT-like graph whose token types index a 2-row table then runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from irprof.cli.main import main
from irprof.frameworks.onnx.index_inputs import index_bounds
from irprof.frameworks.onnx.inputs import INTEGER_HIGH, InputSpec, random_inputs


def _table(name: str, rows: int, width: int = 4) -> onnx.TensorProto:
    values = np.arange(rows * width, dtype=np.float32).reshape(rows, width)
    return numpy_helper.from_array(values, name)


def _model() -> onnx.ModelProto:
    """ids -> Gather(vocab of 50); types -> Cast -> Unsqueeze -> Squeeze -> Gather(2 rows);
    pos -> Gather(table of 3 rows, axis 1 of a [4, 3] weight); mask -> Cast -> Mul only."""
    int_input = [
        helper.make_tensor_value_info(name, TensorProto.INT64, [2, 6])
        for name in ("ids", "types", "pos", "mask")
    ]
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    nodes = [
        helper.make_node("Gather", ["vocab", "ids"], ["e_ids"], name="g_ids"),
        helper.make_node("Cast", ["types"], ["t32"], to=TensorProto.INT32),
        helper.make_node("Unsqueeze", ["t32", "axes"], ["t_u"]),
        helper.make_node("Squeeze", ["t_u", "axes"], ["t_s"]),
        helper.make_node("Gather", ["type_table", "t_s"], ["e_types"]),
        helper.make_node("Gather", ["wide", "pos"], ["e_pos"], axis=1),
        helper.make_node("Add", ["e_ids", "e_types"], ["s"]),
        helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["m", "last"], ["m3"]),
        helper.make_node("Mul", ["s", "m3"], ["y"]),
        helper.make_node("ReduceSum", ["e_pos"], ["p"], keepdims=0),
    ]
    last = numpy_helper.from_array(np.array([-1], np.int64), "last")
    graph = helper.make_graph(
        nodes,
        "bert_like",
        int_input,
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 4]),
            helper.make_tensor_value_info("p", TensorProto.FLOAT, []),
        ],
        [_table("vocab", 50), _table("type_table", 2), _table("wide", 4, 3), axes, last],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_each_index_input_is_bounded_by_the_table_it_indexes() -> None:
    bounds = index_bounds(_model().graph)
    # the vocabulary (50 rows) is past the default range; the 2-row type table and the
    # 3 columns gathered on axis 1 are not; the mask indexes nothing
    assert bounds == {"ids": 50, "types": 2, "pos": 3}


def test_random_integers_stay_below_their_bound() -> None:
    specs = [InputSpec("types", "int64", (64,), 2), InputSpec("ids", "int64", (64,))]
    feeds, _ = random_inputs(specs, {}, seed=0)
    assert set(feeds["types"].tolist()) == {0, 1}
    assert set(feeds["ids"].tolist()) == set(range(INTEGER_HIGH))


def test_a_graph_whose_token_types_index_two_rows_is_captured(tmp_path: Path) -> None:
    path = tmp_path / "bert_like.onnx"
    onnx.save(_model(), str(path))
    run = tmp_path / "run"
    # with values 0-3 for `types`, ONNX Runtime refused the Gather of the 2-row table
    assert main(["capture", "onnx", str(path), "-o", str(run), "--steps", "2"]) == 0
    assert main(["annotate", str(run)]) == 0
