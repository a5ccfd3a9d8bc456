"""The IR shown for an op in the report: with its location when it fits, else without it.

TF records ~60 frames per op; printed with its location, an op's text filled the report's limit
with frames (which the op panel lists anyway) and cut off its operands, attributes and types.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.analyses.report_data import IR_LOCATION_LIMIT, IR_TEXT_LIMIT, _ir_texts
from irprof.mlir.context import make_context

FRAMES = 400  # far over the limit once printed
CHAIN = "".join(f'callsite("lib/f{i}.py":{i}:1 at ' for i in range(FRAMES)) + '"model.py":1:1'
MODULE = f"""
module {{
  func.func @f(%x: f32) -> f32 {{
    %0 = arith.addf %x, %x {{marker = "short"}} : f32 loc("short"("model.py":3:1))
    %1 = arith.mulf %0, %0 {{marker = "long"}} : f32 loc({CHAIN}{")" * FRAMES})
    return %1 : f32
  }}
}}
"""


def test_an_op_whose_location_overflows_is_shown_whole_without_it() -> None:
    with make_context():
        module = ir.Module.parse(MODULE)
        # walk indices: 0 func.func, 1 addf, 2 mulf, 3 return (the module itself is -1)
        texts = _ir_texts(module, {1, 2})
    assert 'loc("short"("model.py":3:1))' in texts[1] and 'marker = "short"' in texts[1]
    long = texts[2]
    assert len(long) < IR_TEXT_LIMIT and not long.endswith(" ...")
    assert 'marker = "long"' in long and ": f32" in long and "arith.mulf" in long
    assert "lib/f0.py" not in long


def test_a_chain_that_fits_the_limit_is_still_left_to_the_op_panel() -> None:
    """Ten frames fit in 4,000 characters but repeat the panel's frames: the IR goes without
    them; a name and one frame (what torch and JAX record) stay in the IR."""
    frames = 10
    chain = "".join(f'callsite("lib/f{i}.py":{i}:1 at ' for i in range(frames)) + '"m.py":1:1'
    location = f"loc({chain}{')' * frames})"
    assert IR_LOCATION_LIMIT < len(location) < IR_TEXT_LIMIT
    text = MODULE.replace(f"loc({CHAIN}{')' * FRAMES})", location)
    with make_context():
        texts = _ir_texts(ir.Module.parse(text), {1, 2})
    assert 'loc("short"("model.py":3:1))' in texts[1]
    assert "lib/f0.py" not in texts[2] and 'marker = "long"' in texts[2]
