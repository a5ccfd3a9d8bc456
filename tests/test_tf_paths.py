"""Portable source paths in IR locations (capture/tf_paths.py), on small modules built in code."""

from __future__ import annotations

from iree.compiler import ir

from irprof.capture.tf_paths import make_paths_portable, portable_path_mapper
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module

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
    assert "/home/user" not in text and "/opt/py" not in text
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


def _ops(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found
