"""Which line `irprof top` shows for an op: its first user-code frame, not the script's one call.

A Hugging Face model under torch.export records the library's frames relative to the import root
(`transformers/models/t5/modeling_t5.py`), then the script's line that called the model: every op
of the model shares that last frame, so it cannot be what the location column shows. Keras
frames are `<sys.path>/keras/...` (installed code): there the script's frame is the first user
frame and stays what is shown, with the script's path as the manifest names it.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.mlir.context import make_context
from irprof.renderers.hotspot_table import editor_location

MODULE = """
#script = loc("t5_script.py":13:0)
#block = loc("transformers/models/t5/modeling_t5.py":1011:0)
module {
  func.func @main(%x: f32) -> f32 {
    %0 = arith.addf %x, %x : f32 loc(callsite("transformers/models/t5/modeling_t5.py":678:0
        at callsite(#block at #script)))
    %1 = arith.mulf %0, %0 : f32 loc(callsite("transformers/models/t5/modeling_t5.py":707:0
        at callsite(#block at #script)))
    %2 = arith.subf %1, %1 : f32 loc(callsite("<sys.path>/keras/src/layers/core/dense.py":144:1
        at "scripts/t5_script.py":21:4))
    %3 = arith.divf %2, %2 : f32 loc(callsite("<frozen runpy>":88:0
        at "<sys.path>/keras/src/ops/core.py":9:0))
    return %3 : f32
  }
}
"""


def profiled() -> ProfiledModule:
    with make_context():
        return profiled_ops_of(ir.Module.parse(MODULE))


def location_of(module: ProfiledModule, op_name: str, script: str) -> str:
    index = next(op.index for op in module.ops if op.op_name == op_name)
    return editor_location(module, index, script)


def test_library_ops_are_placed_at_their_own_library_lines_not_the_scripts_call() -> None:
    module = profiled()
    shown = {
        location_of(module, name, "examples/t5_script.py") for name in ("arith.addf", "arith.mulf")
    }
    assert shown == {
        "transformers/models/t5/modeling_t5.py:678:0",
        "transformers/models/t5/modeling_t5.py:707:0",
    }


def test_an_op_whose_first_user_frame_is_the_script_shows_the_scripts_path_as_given() -> None:
    module = profiled()
    assert location_of(module, "arith.subf", "examples/t5_script.py") == (
        "examples/t5_script.py:21:4"
    )
    assert location_of(module, "arith.subf", "") == "scripts/t5_script.py:21:4"
    assert location_of(module, "arith.subf", "other.py") == "scripts/t5_script.py:21:4"


def test_an_op_with_no_user_frame_shows_its_innermost_frame() -> None:
    module = profiled()
    assert location_of(module, "arith.divf", "examples/t5_script.py") == "<frozen runpy>:88:0"
