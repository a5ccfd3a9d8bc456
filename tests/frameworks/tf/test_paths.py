"""Portable source paths in IR locations (frameworks/tf/paths.py), on modules built in code."""

from __future__ import annotations

from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.frameworks.tf.paths import make_paths_portable, own_frame_filter, portable_path_mapper
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import derive_op_infos

SCRIPT_DIR = "/srv/user/models"
ROOTS = ["/opt/py/lib/python3.11", "/opt/py/lib/python3.11/site-packages", "/srv/user/models"]

MODULE = """
func.func @f(%arg0: tensor<2xf32> loc("/srv/user/models/net.py":3:1)) -> tensor<2xf32> {
  %0 = "tf.Relu"(%arg0) : (tensor<2xf32>) -> tensor<2xf32> loc(#relu)
  return %0 : tensor<2xf32> loc(unknown)
}
#frame1 = loc("/opt/py/lib/python3.11/site-packages/keras/layer.py":10:2 to 10:9)
#frame2 = loc("/srv/user/models/net.py":42:5)
#named = loc("model/relu"(#frame1))
#relu = loc(fused["Relu:", callsite(#named at #frame2)])
"""


def test_mapper_prefers_script_folder_then_longest_import_root() -> None:
    mapped = portable_path_mapper(SCRIPT_DIR, ROOTS)
    assert mapped("/srv/user/models/net.py") == "net.py"
    assert mapped("/srv/user/models/sub/a.py") == "sub/a.py"
    assert mapped("/opt/py/lib/python3.11/site-packages/keras/x.py") == "<sys.path>/keras/x.py"
    assert mapped("/opt/py/lib/python3.11/runpy.py") == "<sys.path>/runpy.py"
    assert mapped("/var/other/lib.py") == "../../../var/other/lib.py"
    assert mapped("<frozen runpy>") == "<frozen runpy>"


def test_rewrite_keeps_names_lines_ranges_and_tree_shape() -> None:
    module = load_module(MODULE, make_context())
    make_paths_portable(module, portable_path_mapper(SCRIPT_DIR, ROOTS))
    text = print_module(module)
    assert "/srv/user" not in text and "/opt/py" not in text
    relu = next(op for op in _ops(module) if op.name == "tf.Relu")
    location = relu.location
    assert isinstance(location, ir.FusedLoc)
    marker, site = location.locations
    assert isinstance(marker, ir.NameLoc) and marker.name_str == "Relu:"
    assert isinstance(site, ir.CallSiteLoc)
    named, caller = site.callee, site.caller
    assert isinstance(named, ir.NameLoc) and named.name_str == "model/relu"
    frame = named.child_loc
    assert isinstance(frame, ir.FileLineColLoc)
    assert (frame.filename, frame.start_line, frame.start_col, frame.end_col) == (
        "<sys.path>/keras/layer.py",
        10,
        2,
        9,
    )
    assert isinstance(caller, ir.FileLineColLoc)
    assert (caller.filename, caller.start_line) == ("net.py", 42)


def test_block_argument_locations_are_rewritten() -> None:
    module = load_module(MODULE, make_context())
    make_paths_portable(module, portable_path_mapper(SCRIPT_DIR, ROOTS))
    func = next(op for op in _ops(module) if op.name == "func.func")
    argument = func.regions[0].blocks[0].arguments[0]
    assert isinstance(argument.location, ir.FileLineColLoc)
    assert argument.location.filename == "net.py"


# TF's shape from `convert_function`: the node name on the OUTERMOST frame, innermost last.
CHAIN_MODULE = """
func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "tf.Relu"(%arg0) : (tensor<2xf32>) -> tensor<2xf32> loc(#relu)
  return %0 : tensor<2xf32> loc(unknown)
}
#launch1 = loc("<frozen runpy>":198:1)
#launch2 = loc("<frozen runpy>":88:1)
#runner = loc("/opt/irprof/capture/tf_runner.py":343:1)
#tf = loc("/opt/py/lib/python3.11/site-packages/tensorflow/eager/fn.py":1256:1)
#user = loc("/srv/user/models/net.py":42:5)
#wrapper = loc("/opt/irprof/capture/tf_runner.py":80:1)
#keras = loc("/opt/py/lib/python3.11/site-packages/keras/layer.py":10:2)
#named = loc("model/relu"(#launch1))
#inner = loc(callsite(#tf at callsite(#user at callsite(#wrapper at #keras))))
#relu = loc(fused["Relu:", callsite(#named at callsite(#launch2 at callsite(#runner at #inner)))])
"""
OWN = own_frame_filter(["/opt/irprof/capture"])


def test_own_filter_knows_the_launch_and_the_runner_only() -> None:
    assert OWN("<frozen runpy>") and OWN("/opt/irprof/capture/tf_runner.py")
    assert not OWN("/opt/irprof/capture_other.py")
    assert not OWN("/opt/py/lib/python3.11/site-packages/keras/layer.py")
    assert not OWN("<frozen importlib._bootstrap>") and not OWN("net.py")


def test_own_frames_leave_the_chain_and_the_node_name_moves_inward() -> None:
    module = load_module(CHAIN_MODULE, make_context())
    before = [(i.op_name, i.key.name, i.key.ordinal, i.keys.names) for i in derive_op_infos(module)]
    make_paths_portable(module, portable_path_mapper(SCRIPT_DIR, ROOTS), OWN)
    after = derive_op_infos(module)
    assert [(i.op_name, i.key.name, i.key.ordinal, i.keys.names) for i in after] == before
    relu = next(i for i in after if i.op_name == "tf.Relu")
    assert relu.keys.chain == (
        "<sys.path>/tensorflow/eager/fn.py:1256:1",
        "net.py:42:5",
        "<sys.path>/keras/layer.py:10:2",
    )
    text = print_module(module)
    assert "runpy" not in text and "irprof/capture" not in text
    # Same shape as TF writes it: fused[type marker, callsite(NameLoc(first frame) at ...)].
    marker, site = relu.location.locations
    assert isinstance(marker, ir.NameLoc) and isinstance(site, ir.CallSiteLoc)
    assert isinstance(site.callee, ir.NameLoc) and site.callee.name_str == "model/relu"
    assert isinstance(site.callee.child_loc, ir.FileLineColLoc)


def test_a_chain_of_own_frames_only_keeps_its_name() -> None:
    module = load_module(CHAIN_MODULE.replace("at #inner", "at #wrapper"), make_context())
    make_paths_portable(module, portable_path_mapper(SCRIPT_DIR, ROOTS), OWN)
    relu = next(i for i in derive_op_infos(module) if i.op_name == "tf.Relu")
    assert relu.key.name == "model/relu" and relu.keys.chain == ()


def test_without_a_filter_every_frame_stays() -> None:
    module = load_module(CHAIN_MODULE, make_context())
    make_paths_portable(module, portable_path_mapper(SCRIPT_DIR, ROOTS))
    relu = next(i for i in derive_op_infos(module) if i.op_name == "tf.Relu")
    assert len(relu.keys.chain) == 7 and relu.keys.chain[0] == "<frozen runpy>:198:1"


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).parents[2] / "fixtures" / "tf").glob("*/ir/*.mlir")),
    ids=lambda p: f"{p.parent.parent.name}/{p.name}",
)
def test_shipped_tf_fixtures_hold_no_irprof_or_launch_frame(path: Path) -> None:
    text = path.read_text()
    assert "irprof/capture" not in text and "runpy" not in text


def _ops(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found
