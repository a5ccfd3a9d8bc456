"""The compact location the report's op panel shows (analyses/report_data.compact_location)."""

from __future__ import annotations

from irprof.analyses.report_data import compact_location, is_user_frame

# As `ProfiledOp.chain` holds them: TF lists the outermost frame first, JAX/torch the innermost.
TF_CHAIN = (
    "<sys.path>/tensorflow/python/eager/polymorphic_function/polymorphic_function.py:1256:1",
    "model.py:54:1",
    "<sys.path>/keras/src/layers/layer.py:1002:1",
    "blocks/conv.py:12:3",
    "<sys.path>/tensorflow/python/framework/ops.py:1221:1",
)


def test_tf_chain_is_reversed_to_innermost_first() -> None:
    compact = compact_location(TF_CHAIN, "tf")
    assert compact.frames == TF_CHAIN[::-1]
    assert compact.user_frames == ("blocks/conv.py:12:3", "model.py:54:1")


def test_other_frameworks_keep_the_mlir_order() -> None:
    chain = ("net.py:7:0", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1:0")
    compact = compact_location(chain, "torch")
    assert compact.frames == chain and compact.user_frames == ("net.py:7:0",)


def test_user_frames_exclude_import_roots_frozen_modules_and_packages() -> None:
    assert is_user_frame("tf_cnn.py:54:1") and is_user_frame("../shared/util.py:3:1")
    assert not is_user_frame("<sys.path>/keras/src/ops/nn.py:1:1")
    assert not is_user_frame("<frozen runpy>:198:1")
    assert not is_user_frame("/opt/venv/lib/python3.11/site-packages/jax/_src/api.py:1:1")
    assert compact_location((), "tf").frames == ()
