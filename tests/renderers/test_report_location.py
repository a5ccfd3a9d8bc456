"""Call-site chains innermost first for every stack (TF's IR lists them the other way round:
`irprof.summary` names the framework), and the compact location the report's op panel shows."""

from __future__ import annotations

from dataclasses import replace

from irprof.analyses.profiled_ops import ProfiledOp, innermost_first
from irprof.analyses.report_data import compact_location, is_user_frame

# As TF's IR lists them: the outermost frame first (JAX and torch list the innermost first).
TF_CHAIN = (
    "<sys.path>/tensorflow/python/eager/polymorphic_function/polymorphic_function.py:1256:1",
    "model.py:54:1",
    "<sys.path>/keras/src/layers/layer.py:1002:1",
    "blocks/conv.py:12:3",
    "<sys.path>/tensorflow/python/framework/ops.py:1221:1",
)
OP = ProfiledOp(
    index=0, op_name="tf.Conv2D", function="f", runtime_name="net/conv", scope="net",
    source="", chain=TF_CHAIN, location="", profile=None, trivial=False,
)  # fmt: skip


def test_tf_chains_are_put_innermost_first_and_the_innermost_user_frame_is_shown() -> None:
    """A subclassed Keras model: `self.conv(x)` in blocks/conv.py is the line that made the op,
    model.py:54 only the call of the model (outermost)."""
    (op,) = innermost_first([OP], "tf")
    assert op.chain == TF_CHAIN[::-1]
    assert op.user_source == "blocks/conv.py:12:3"
    compact = compact_location(op.chain)
    assert compact.frames == TF_CHAIN[::-1]
    assert compact.user_frames == ("blocks/conv.py:12:3", "model.py:54:1")


def test_other_frameworks_keep_the_mlir_order() -> None:
    chain = ("net.py:7:0", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1:0")
    records = [replace(OP, chain=chain)]
    for framework in ("torch", "jax", "iree", "onnx", ""):
        assert innermost_first(records, framework) == records
    compact = compact_location(chain)
    assert compact.frames == chain and compact.user_frames == ("net.py:7:0",)


def test_user_frames_exclude_import_roots_frozen_modules_and_packages() -> None:
    assert is_user_frame("tf_cnn.py:54:1") and is_user_frame("../shared/util.py:3:1")
    assert not is_user_frame("<sys.path>/keras/src/ops/nn.py:1:1")
    assert not is_user_frame("<frozen runpy>:198:1")
    assert not is_user_frame("/opt/venv/lib/python3.11/site-packages/jax/_src/api.py:1:1")
    assert compact_location(()).frames == ()


def test_a_module_whose_summary_names_tf_is_read_innermost_first() -> None:
    """GIVEN an annotated TF module (its `irprof.summary` says so) with TF's outermost-first
    chain WHEN its ops are gathered THEN the chain is innermost first and the op's line is the
    innermost user frame; the same text without the summary keeps the IR's order."""
    from iree.compiler import ir

    from irprof.analyses.profiled_ops import profiled_ops_of
    from irprof.mlir.context import make_context

    # TF nests the other way round: the outermost frame is the callee of the outer callsite.
    outer_first = (
        'callsite("net/conv"("model.py":22:1) at callsite("<sys.path>/keras/src/layers/layer.py"'
        ':1002:1 at "blocks/conv.py":14:1))'
    )
    body = f"""
      func.func @f(%x: f32) -> f32 {{
        %0 = arith.addf %x, %x : f32 loc(fused["AddV2:", {outer_first}])
        return %0 : f32
      }}"""
    with make_context():
        tagged = ir.Module.parse(
            f'module attributes {{irprof.summary = {{framework = "tf"}}}} {{{body}}}'
        )
        plain = ir.Module.parse(f"module {{{body}}}")
        (op,) = [o for o in profiled_ops_of(tagged).ops if o.op_name == "arith.addf"]
        (raw,) = [o for o in profiled_ops_of(plain).ops if o.op_name == "arith.addf"]
    assert raw.chain == ("model.py:22:1", "<sys.path>/keras/src/layers/layer.py:1002:1",
                         "blocks/conv.py:14:1")  # fmt: skip
    assert op.chain == raw.chain[::-1]
    assert (op.user_source, raw.user_source) == ("blocks/conv.py:14:1", "model.py:22:1")
