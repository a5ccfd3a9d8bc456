"""Where an op is shown when no frame of its chain is in user code (a Keras `fit` step that the
tool itself runs): the library line that built it, not the library's outermost entry.

TF lists chains outermost first, so the key's source is the outermost frame: for every op of a
`keras.applications` model trained with `fit` that was Keras' `traceback_utils.py:117`, the same
line for every row. TF's own frames (`<sys.path>/tensorflow/...`) build every op alike and are
skipped; the first other frame (Keras' backend calling `tf.nn`, or `trainer.py` taking the
gradient) is shown.
"""

from __future__ import annotations

from irprof.analyses.profiled_ops import ProfiledOp, innermost_first

ENTRY = "<sys.path>/keras/src/utils/traceback_utils.py:117:1"
TF_OPS = ("<sys.path>/tensorflow/python/framework/ops.py:1221:1",
          "<sys.path>/tensorflow/python/ops/nn_ops.py:3043:1")  # fmt: skip
KERAS_NN = "<sys.path>/keras/src/backend/tensorflow/nn.py:1038:1"


def op(chain_outermost_first: tuple[str, ...]) -> ProfiledOp:
    return ProfiledOp(
        index=0, op_name="tf.Conv2D", function="f", runtime_name="conv/Conv2D", scope="conv",
        source=chain_outermost_first[0] if chain_outermost_first else "",
        chain=chain_outermost_first, location="loc", profile=None, trivial=False,
    )  # fmt: skip


def test_no_user_frame_shows_the_innermost_frame_outside_tensorflow() -> None:
    (record,) = innermost_first([op((ENTRY, KERAS_NN, *TF_OPS[::-1]))], "tf")
    assert record.chain == (*TF_OPS, KERAS_NN, ENTRY)  # innermost first
    assert record.user_source == KERAS_NN
    assert record.site_source == KERAS_NN


def test_a_user_frame_still_wins() -> None:
    (record,) = innermost_first([op((ENTRY, "model.py:12:5", KERAS_NN, *TF_OPS[::-1]))], "tf")
    assert record.user_source == "model.py:12:5"
    assert record.model_frame == ""


def test_only_tensorflow_frames_fall_back_to_the_key_source() -> None:
    (record,) = innermost_first([op(TF_OPS[::-1])], "tf")
    assert record.user_source == TF_OPS[1]  # the IR's first frame, the key's source


def test_other_frameworks_keep_their_chains_and_sources() -> None:
    chain = (KERAS_NN, ENTRY)
    (record,) = innermost_first([op(chain)], "torch")
    assert record.chain == chain and record.model_frame == ""
    assert record.user_source == KERAS_NN  # the key's source: torch chains are innermost first
