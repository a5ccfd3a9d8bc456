"""FX node -> location helpers of the torch capture (no torch needed)."""

from __future__ import annotations

from iree.compiler import ir

from irprof.frameworks.torch.locations import (
    FxNodeName,
    aten_event_name,
    format_stack_trace,
    node_location,
    user_frames,
)
from irprof.mlir.keys import location_keys
from irprof.mlir.locations import from_ir
from irprof.mlir.python_frames import SourceFrame, parse_stack_trace

TRACE = (
    '  File "/srv/u/proj/model.py", line 21, in forward\n'
    "    x = self.fc2(torch.relu(self.fc1(x)))\n"
    '  File "/venv/site-packages/torch/nn/modules/linear.py", line 134, in forward\n'
    "    return F.linear(input, self.weight, self.bias)\n"
)


def test_parse_stack_trace_reads_frames_outermost_first() -> None:
    """Python traceback text -> (file, line, function)."""
    assert parse_stack_trace(TRACE) == [
        ("/srv/u/proj/model.py", 21, "forward"),
        ("/venv/site-packages/torch/nn/modules/linear.py", 134, "forward"),
    ]
    assert parse_stack_trace(None) == []


TORCH_DIR = "/venv/site-packages/torch"
LIBRARY_TRACE = (
    '  File "/srv/u/proj/script.py", line 21, in forward\n'
    '  File "/venv/site-packages/transformers/models/gpt2/modeling_gpt2.py", line 223, in forward\n'
    '  File "/venv/site-packages/torch/nn/modules/linear.py", line 134, in forward\n'
)


def test_user_frames_keep_the_script_folder_relative() -> None:
    """The script's frames relative to its folder; torch's own frames dropped unless there is
    nothing else."""
    frames = parse_stack_trace(TRACE)
    assert user_frames(frames, "/srv/u/proj", ["/venv/site-packages"], [TORCH_DIR]) == (
        SourceFrame("model.py", 21, "forward"),
    )
    library_only = user_frames(frames[1:], "/srv/u/proj", ["/venv/site-packages"], [TORCH_DIR])
    assert library_only == (SourceFrame("torch/nn/modules/linear.py", 134, "forward"),)


def test_user_frames_end_at_the_library_model_line() -> None:
    """A library model wrapped by the script: the chain runs from the script's line to the
    library model's line (innermost), not the wrapper's line alone, nor torch's `linear.py`."""
    frames = user_frames(
        parse_stack_trace(LIBRARY_TRACE), "/srv/u/proj", ["/venv/site-packages"], [TORCH_DIR]
    )
    assert frames == (
        SourceFrame("script.py", 21, "forward"),
        SourceFrame("transformers/models/gpt2/modeling_gpt2.py", 223, "forward"),
    )
    keys = location_keys(
        from_ir(
            node_location(FxNodeName("lm", "linear", "aten.linear.default"), frames, ir.Context())
        )
    )
    assert keys.source == "transformers/models/gpt2/modeling_gpt2.py:223:0"


def test_format_stack_trace_round_trips() -> None:
    """Relative frames written back parse to the same frames."""
    frames = (SourceFrame("pkg/model.py", 3, "forward"), SourceFrame("model.py", 9, "block"))
    parsed = parse_stack_trace(format_stack_trace(frames))
    assert tuple(SourceFrame(*frame) for frame in parsed) == frames


def test_fx_node_name_round_trip_and_rejects_other_names() -> None:
    """`module|node|target`; the root module is an empty path."""
    name = FxNodeName("blocks.1.query", "linear_4", "aten.addmm.default")
    assert str(name) == "blocks.1.query|linear_4|aten.addmm.default"
    assert FxNodeName.parse(str(name)) == name
    assert FxNodeName.parse("|relu|aten.relu.default") == FxNodeName(
        "", "relu", "aten.relu.default"
    )
    assert FxNodeName.parse("jit(f)/dot_general") is None


def test_node_location_keys_on_name_and_innermost_user_line() -> None:
    """The NameLoc is the op's key name; the innermost frame its source."""
    context = ir.Context()
    frames = (SourceFrame("model.py", 40, "forward"), SourceFrame("model.py", 21, "forward"))
    location = node_location(FxNodeName("fc1", "linear", "aten.linear.default"), frames, context)
    keys = location_keys(from_ir(location))
    assert keys.name == "fc1|linear|aten.linear.default"
    assert keys.source == "model.py:21:0"
    assert keys.chain == ("model.py:21:0", "model.py:40:0")


def test_aten_event_name_matches_profiler_names() -> None:
    """FX targets -> the names torch.profiler records."""
    assert aten_event_name("aten.linear.default") == "aten::linear"
    assert aten_event_name("aten.softmax.int") == "aten::softmax"
    assert aten_event_name("<built-in function getitem>") == "<built-in function getitem>"
