"""Torch correlator on shipped captures (tests/fixtures/torch) and on events built in code."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.errors import CorrelationError
from irprof.frameworks import get_all_frameworks
from irprof.frameworks.torch.correlate import CORRELATOR
from irprof.frameworks.torch.events import (
    FxCall,
    OpEvent,
    load_fx_calls,
    match_events,
    module_chain,
    python_frames,
    top_level_op_events,
)
from irprof.frameworks.torch.locations import FxNodeName
from irprof.opprofile import OpProfile, OpProfileEntry
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind

TORCH_FIXTURES = Path(__file__).parents[2] / "fixtures" / "torch"


@pytest.fixture(scope="module")
def results() -> dict[tuple[str, str], object]:
    """Correlation of every fixture bundle at both levels (read-only inputs)."""
    out: dict[tuple[str, str], object] = {}
    for name in ("cnn", "cnn_nodecomp", "attention"):
        bundle = RunBundle(TORCH_FIXTURES / name)
        for level in ("torch", "linalg"):
            out[(name, level)] = CORRELATOR.correlate(bundle, level, CorrelationOptions())
    return out


def _entries_by_node(profile: OpProfile) -> dict[str, list[OpProfileEntry]]:
    grouped: dict[str, list[OpProfileEntry]] = defaultdict(list)
    for entry in profile.entries:
        parsed = FxNodeName.parse(entry.key.name or "")
        assert parsed is not None, entry.key
        grouped[f"{parsed.module_path}|{parsed.node}"].append(entry)
    return grouped


def test_registry_resolves_torch_correlator() -> None:
    """GIVEN the correlator registry WHEN asking for torch THEN it is this module's CORRELATOR."""
    correlator = get_all_frameworks().get("torch").load_correlator()
    assert correlator is CORRELATOR
    assert correlator.levels == ("torch", "linalg")


@pytest.mark.parametrize("name", ["cnn", "cnn_nodecomp", "attention"])
def test_torch_level_covers_all_profiled_time_and_ops(results: dict, name: str) -> None:
    """Every top-level aten event and every non-trivial torch op finds its partner."""
    coverage = results[(name, "torch")].coverage
    assert coverage.profiled_ns > 0
    assert coverage.time_coverage >= 0.99
    assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial
    assert coverage.unmatched_events == ()
    assert coverage.warnings == ()  # every joined event has its node's source frame


@pytest.mark.parametrize("name", ["cnn", "attention"])
def test_linalg_level_annotates_every_located_top_level_op(results: dict, name: str) -> None:
    """Lowered ops get their torch origin's data; body ops of named ops are explained."""
    coverage = results[(name, "linalg")].coverage
    extra = coverage.extra
    assert extra["nonbody_located_ops"] > 0
    assert extra["nonbody_located_annotated"] == extra["nonbody_located_ops"]
    assert extra["implicit_body_ops"] > 0  # linalg.matmul's mulf/addf: not in the printed IR
    assert coverage.time_coverage >= 0.99
    assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial


def test_kernels_are_exact_event_names(results: dict) -> None:
    """ProfileData.kernels holds the trace's own event names (aten::...)."""
    profile = results[("cnn", "torch")].opprofile
    kernels = {k for entry in profile.entries for k in entry.data.kernels}
    assert kernels == {
        "aten::conv2d",
        "aten::relu",
        "aten::max_pool2d",
        "aten::flatten",
        "aten::linear",
        "aten::softmax",
    }


def test_decomposed_linear_shares_its_event_between_ops(results: dict) -> None:
    """GIVEN default decomposition WHEN aten::linear became permute + addmm THEN both share it."""
    grouped = _entries_by_node(results[("cnn", "torch")].opprofile)
    fc1 = grouped["fc1|linear"]
    assert sorted(e.op_name for e in fc1) == ["torch.aten.addmm", "torch.aten.permute"]
    names = {e.key.name for e in fc1}
    for entry in fc1:
        assert entry.data.kernels == ("aten::linear",)
        assert set(entry.data.fused_with) == names - {entry.key.name}
        assert entry.data.count == 2  # two profiled steps
    # Default rule: the compute op (addmm) takes the time, the view op (permute) 0 ns.
    by_op = {e.op_name: e.data.total_ns for e in fc1}
    assert by_op["torch.aten.permute"] == 0
    assert by_op["torch.aten.addmm"] > 0


def test_split_rule_shares_a_decomposed_call_equally() -> None:
    """GIVEN fused_time_rule=split THEN permute and addmm get equal shares of aten::linear."""
    result = CORRELATOR.correlate(
        RunBundle(TORCH_FIXTURES / "cnn"), "torch", CorrelationOptions(fused_time_rule="split")
    )
    fc1 = _entries_by_node(result.opprofile)["fc1|linear"]
    totals = [e.data.total_ns for e in fc1]
    assert min(totals) > 0
    assert max(totals) - min(totals) <= 2  # integer shares of two events
    assert result.coverage.time_coverage >= 0.99


def test_unknown_fused_time_rule_is_refused() -> None:
    """A rule the torch correlator does not know is a clear error."""
    with pytest.raises(CorrelationError, match="fused_time_rule"):
        CORRELATOR.correlate(
            RunBundle(TORCH_FIXTURES / "cnn"), "torch", CorrelationOptions(fused_time_rule="x")
        )


def test_no_decomposition_keeps_linear_whole(results: dict) -> None:
    """GIVEN --decompose none THEN torch.aten.linear carries the whole event, fused with none."""
    grouped = _entries_by_node(results[("cnn_nodecomp", "torch")].opprofile)
    (fc1,) = grouped["fc1|linear"]
    assert fc1.op_name == "torch.aten.linear"
    assert fc1.data.fused_with == ()
    (softmax,) = grouped["|softmax"]
    assert softmax.op_name == "torch.aten.softmax.int"


def test_repeated_identical_layers_from_python_loop_stay_apart(results: dict) -> None:
    """The loop over 3 identical blocks: each block's query layer gets its own events."""
    grouped = _entries_by_node(results[("attention", "torch")].opprofile)
    addmm_by_path = {
        key.split("|")[0]: entry
        for key, entries in grouped.items()
        if key.split("|")[0].endswith(".query")
        for entry in entries
        if entry.op_name == "torch.aten.addmm"
    }
    assert sorted(addmm_by_path) == ["blocks.0.query", "blocks.1.query", "blocks.2.query"]
    assert all(entry.data.count == 2 for entry in addmm_by_path.values())
    # Execution order: block 0 runs before block 1 before block 2.
    first_seen = [addmm_by_path[f"blocks.{i}.query"].data.first_ts_ns for i in range(3)]
    assert first_seen == sorted(first_seen)
    assert len(set(first_seen)) == 3


def test_identical_calls_on_one_source_line_are_told_apart(results: dict) -> None:
    """q, k, v projections run on one line: one NameLoc each, one event each per step."""
    grouped = _entries_by_node(results[("attention", "torch")].opprofile)
    layers = ("blocks.1.query", "blocks.1.key", "blocks.1.value")
    sources = {
        entry.key.source
        for key, entries in grouped.items()
        if key.split("|")[0] in layers
        for entry in entries
    }
    example = (TORCH_FIXTURES.parents[2] / "examples" / "torch_attention.py").read_text()
    line = next(
        number
        for number, text in enumerate(example.splitlines(), start=1)
        if "q, k, v = self.query(tokens)" in text
    )
    assert sources == {f"torch_attention.py:{line}:0"}
    per_layer = {k.split("|")[0]: sum(e.data.count for e in v) for k, v in grouped.items()}
    assert per_layer["blocks.1.query"] == per_layer["blocks.1.key"] == per_layer["blocks.1.value"]


def test_bundle_inputs_are_not_modified(tmp_path: Path) -> None:
    """Correlating reads the bundle; it writes nothing."""
    copy = tmp_path / "cnn"
    shutil.copytree(TORCH_FIXTURES / "cnn", copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    CORRELATOR.correlate(RunBundle(copy), "torch", CorrelationOptions())
    after = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert before == after


# The cnn fixture's `flatten` call is one aten.view (#loc50) fed by constants (#loc48, #loc49),
# all named `|flatten|aten.view.default` (#loc8).
FLATTEN_VIEW_LOC = '#loc50 = loc("irprof.origin=torch#36"(#loc8))'
FLATTEN_NAME = '"|flatten|aten.view.default"'


@pytest.mark.parametrize(
    ("edits", "reason"),
    [
        # The view named after another call: nothing at all is named `flatten`.
        (
            {FLATTEN_NAME: '"|relu_1|aten.view.default"'},
            "no op of the torch-level IR is named after FX node(s) ('flatten',): the "
            "decomposition removed the call or named its ops after another node",
        ),
        # Only the view loses the name: the constants that built its shape keep it.
        (
            {FLATTEN_VIEW_LOC: FLATTEN_VIEW_LOC.replace("#loc8", "#loc2")},
            "FX node(s) ('flatten',) became only constants or other trivial ops",
        ),
    ],
)
def test_event_of_a_call_without_ops_says_what_happened(
    tmp_path: Path, edits: dict[str, str], reason: str
) -> None:
    """GIVEN an IR where no compute op names the call THEN the unmatched event says which case."""
    copy = tmp_path / "cnn"
    shutil.copytree(TORCH_FIXTURES / "cnn", copy)
    ir_path = copy / "ir" / "torch.mlir"
    text = ir_path.read_text()
    for old, new in edits.items():
        assert text.count(old) == 1
        text = text.replace(old, new)
    ir_path.write_text(text)
    coverage = CORRELATOR.correlate(RunBundle(copy), "torch", CorrelationOptions()).coverage
    (lost,) = coverage.unmatched_events
    assert lost.name == "aten::flatten"
    assert lost.reason == reason


def with_def_use(fx_path: Path, dead: str) -> None:
    """Give the fixture's FX file the def-use fields of current captures: a chain through every
    call, except that nothing reads `dead`; the last call is the output."""
    document = json.loads(fx_path.read_text())
    names = [node["name"] for node in document["nodes"]]
    previous = ""
    for node in document["nodes"]:
        node["inputs"] = [previous] if previous else []
        if node["name"] != dead:
            previous = node["name"]
    document["outputs"] = [names[-1]]
    fx_path.write_text(json.dumps(document))


def test_event_of_a_dead_call_says_no_output_uses_it(tmp_path: Path) -> None:
    """GIVEN a call whose value reaches no output (eager runs it; decomposition drops it) THEN
    its event is listed as dead code, not as a call decomposition renamed."""
    copy = tmp_path / "cnn"
    shutil.copytree(TORCH_FIXTURES / "cnn", copy)
    ir_path = copy / "ir" / "torch.mlir"
    ir_path.write_text(ir_path.read_text().replace(FLATTEN_NAME, '"|relu_1|aten.view.default"'))
    with_def_use(copy / "ir" / "torch.fx.json", dead="flatten")
    coverage = CORRELATOR.correlate(RunBundle(copy), "torch", CorrelationOptions()).coverage
    (lost,) = coverage.unmatched_events
    assert lost.name == "aten::flatten"
    assert lost.reason == (
        "FX node(s) ('flatten',) compute a value no output of the model uses: eager runs it, "
        "the decomposition removes it as dead code"
    )


def test_fx_calls_number_module_instances_per_class_in_call_order() -> None:
    """Profiler names (`Linear_1`) come from class + order of first call."""
    calls = load_fx_calls(TORCH_FIXTURES / "attention" / "ir" / "torch.fx.json")
    chains = {call.node: call.chain for call in calls}
    assert chains["embedding"] == ("TinyEncoder_0", "Embedding_0")
    assert chains["linear_4"] == ("TinyEncoder_0", "EncoderBlock_1", "Linear_4")
    assert calls[-1].chain == ("TinyEncoder_0", "Linear_12")


def test_module_chain_reads_verbose_call_stack() -> None:
    """Innermost-first call stack -> outermost-first module instances."""
    stack = (
        "<built-in function linear>;torch/nn/modules/linear.py(130): forward;"
        "nn.Module: Linear_1;m.py(20): forward;nn.Module: Net_0;m.py(40): <module>;"
    )
    assert module_chain(stack) == ("Net_0", "Linear_1")
    assert module_chain(None) == ()


def test_match_events_breaks_ties_by_execution_order_across_steps() -> None:
    """A shared layer called 3 times per step: the k-th call goes to the k-th node, per step."""
    calls = [FxCall(i, f"linear_{i}", "aten::linear", ("Net_0", "Linear_0")) for i in range(3)]
    events = [OpEvent(row, "aten::linear", row * 10, 5, ("Net_0", "Linear_0")) for row in range(6)]
    matched = match_events(events, calls)
    assert [matched.nodes_of[row] for row in range(6)] == [
        ("linear_0",), ("linear_1",), ("linear_2",), ("linear_0",), ("linear_1",), ("linear_2",)
    ]  # fmt: skip


def test_match_events_falls_back_to_op_name_and_reports_strangers() -> None:
    """An unexpected module chain falls back to the aten name; an unknown op is unmatched."""
    calls = [FxCall(0, "relu", "aten::relu", ("Net_0",))]
    events = [
        OpEvent(1, "aten::relu", 0, 5, ("Net_0", "Wrapper_0")),
        OpEvent(2, "aten::gelu", 10, 5, ("Net_0",)),
    ]
    matched = match_events(events, calls)
    assert matched.nodes_of == {1: ("relu",)}
    assert "no call of this op" in matched.unmatched[2]


def test_name_fallback_keeps_to_calls_of_the_events_module_classes() -> None:
    """GPT-NeoX's attention runs a no-op `aten::to` the export drops: the only `to` calls left
    are the rotary embedding's, in another module, and must not take its time. A shifted
    instance number (same classes) and a module level the export never saw (Keras layers on
    the torch backend) still fall back, and say so."""
    calls = [
        FxCall(0, "to", "aten::to", ("M_0", "Model_0", "Rotary_0")),
        FxCall(1, "linear", "aten::linear", ("M_0", "Model_0", "Layer_0", "Linear_0")),
        FxCall(2, "conv2d", "aten::conv2d", ("Functional_0",)),
        FxCall(3, "conv2d_1", "aten::conv2d", ("Functional_0",)),
    ]
    events = [
        OpEvent(1, "aten::to", 0, 5, ("M_0", "Model_0", "Layer_0", "Attention_0")),
        OpEvent(2, "aten::linear", 10, 5, ("M_0", "Model_0", "Layer_0", "Linear_1")),
        OpEvent(3, "aten::conv2d", 20, 5, ("Functional_0", "Conv2D_0")),
        OpEvent(4, "aten::to", 30, 5, ("M_0", "Model_0", "Rotary_0")),
    ]
    matched = match_events(events, calls)
    assert matched.nodes_of == {2: ("linear",), 3: ("conv2d",), 4: ("to",)}
    assert matched.unmatched[1] == (
        "no call of aten::to in M_0/Model_0/Layer_0/Attention_0 in the exported program: eager "
        "ran a call the export dropped (a no-op such as `.to()` to the same dtype) or code only "
        "eager runs"
    )
    assert matched.by_name_only == {2: "aten::linear", 3: "aten::conv2d"}


def test_name_fallback_descends_only_into_modules_the_export_never_registered() -> None:
    """HF BART trained: its decoder runs an `aten::eq` mask check that the export drops (it
    decides a Python branch), while the model's own `eq` (shift_tokens_right) is exported one
    level up. The decoder is a registered module, so the export dropped that call: it must not
    take the model's `eq`. A loss module built inside `forward` is registered nowhere: its
    call joins the call of the level above, the only one there (so not a guess by name)."""
    calls = [
        FxCall(0, "eq", "aten::eq", ("Loss_0", "Bart_0")),
        FxCall(1, "ce", "aten::cross_entropy_loss", ("Loss_0", "Bart_0")),
        FxCall(2, "linear", "aten::linear", ("Loss_0", "Bart_0", "Model_0", "Decoder_0")),
    ]
    events = [
        OpEvent(1, "aten::eq", 0, 5, ("Loss_0", "Bart_0")),
        OpEvent(2, "aten::eq", 10, 5, ("Loss_0", "Bart_0", "Model_0", "Decoder_0")),
        OpEvent(3, "aten::cross_entropy_loss", 20, 5, ("Loss_0", "Bart_0", "CrossEntropyLoss_0")),
    ]
    matched = match_events(events, calls)
    assert matched.nodes_of == {1: ("eq",), 3: ("ce",)}
    assert matched.unmatched[2].startswith(
        "no call of aten::eq in Loss_0/Bart_0/Model_0/Decoder_0 in the exported program"
    )
    assert matched.by_name_only == {}


def test_name_fallback_to_the_only_call_of_the_events_own_module_is_not_a_guess() -> None:
    """HF Mamba2: each mixer's conv activation is a module made on the fly (never registered),
    so its event's chain ends one level below the mixer's call. Every mixer has one such call:
    the event's own mixer instance decides, not the order of events (here a step whose first
    event was lost), and the join is not reported as by name only. The gated norm's call (a
    registered submodule) is no candidate."""
    calls = []
    for block in range(2):
        mixer = ("Net_0", f"Mixer_{block}")
        calls += [
            FxCall(2 * block, f"silu_{block}", "aten::silu", mixer),
            FxCall(2 * block + 1, f"norm_silu_{block}", "aten::silu", (*mixer, "Norm_0")),
        ]
    events = [
        OpEvent(1, "aten::silu", 0, 5, ("Net_0", "Mixer_1", "SiLUActivation_1")),
        OpEvent(2, "aten::silu", 10, 5, ("Net_0", "Mixer_0", "SiLUActivation_0")),
        OpEvent(3, "aten::silu", 20, 5, ("Net_0", "Mixer_0", "Norm_0")),
        OpEvent(4, "aten::silu", 30, 5, ("Net_0", "Mixer_1", "SiLUActivation_1")),
    ]
    matched = match_events(events, calls)
    assert matched.nodes_of == {
        1: ("silu_1",), 2: ("silu_0",), 3: ("norm_silu_0",), 4: ("silu_1",)
    }  # fmt: skip
    assert matched.by_name_only == {}


def test_name_fallback_prefers_the_node_whose_source_frame_is_on_the_call_stack() -> None:
    """Without a usable module chain, the Python frame (file, function) picks the node."""
    calls = [
        FxCall(0, "relu", "aten::relu", ("Net_0", "Block_0"), ("model.py", "block")),
        FxCall(1, "relu_1", "aten::relu", ("Net_0",), ("model.py", "forward")),
    ]
    event = OpEvent(
        7, "aten::relu", 0, 5, ("Net_1",), (("model.py", "forward"), ("run.py", "main"))
    )
    matched = match_events([event], calls)
    assert matched.nodes_of == {7: ("relu_1",)}
    assert matched.source_disagreements == []


def test_join_that_contradicts_the_call_stack_is_flagged() -> None:
    """An exact-signature join whose node's frame is absent from the stack is reported."""
    calls = [FxCall(0, "relu", "aten::relu", ("Net_0",), ("model.py", "forward"))]
    event = OpEvent(3, "aten::relu", 0, 5, ("Net_0",), (("other.py", "forward"),))
    matched = match_events([event], calls)
    assert matched.nodes_of == {3: ("relu",)}
    assert matched.source_disagreements == [3]


def test_python_frames_read_file_and_function() -> None:
    """`file(N): function` frames; N (the def line) is dropped."""
    stack = "<built-in function linear>;nn.Module: Linear_0;pkg/model.py(20): forward;"
    assert python_frames(stack) == (("pkg/model.py", "forward"),)


def test_python_frames_are_innermost_first_each_once() -> None:
    """A function met twice (recursion, two `forward`s of one file) keeps its innermost place."""
    stack = (
        "<built-in method silu>;act.py(100): forward;nn.Module: Act_0;m.py(30): scan;"
        "m.py(10): forward;nn.Module: Block_0;m.py(10): forward;run.py(1): main;"
    )
    assert python_frames(stack) == (
        ("act.py", "forward"), ("m.py", "scan"), ("m.py", "forward"), ("run.py", "main")
    )  # fmt: skip


def test_calls_of_one_chain_are_told_apart_by_the_innermost_frame() -> None:
    """HF Mamba: each mixer calls silu twice, once through a global activation module the
    exported program never registered (its event's chain has the module, the node's has not)
    and once in the scan. Both nodes share the mixer's chain; every `forward` of the file is
    on both stacks, so only the innermost frame of a node on the stack picks it. Ranking the
    scan's event by chain alone gave it the activation's node, and the next block's activation
    event the first block's scan node."""
    act, forward, scan = ("act.py", "forward"), ("m.py", "forward"), ("m.py", "scan")
    calls = []
    for block in range(2):
        mixer = ("Net_0", f"Mixer_{block}")
        calls += [
            FxCall(2 * block, f"silu_act_{block}", "aten::silu", mixer, act),
            FxCall(2 * block + 1, f"silu_scan_{block}", "aten::silu", mixer, forward),
        ]
    events = []
    for step in range(2):
        for block in range(2):
            mixer = ("Net_0", f"Mixer_{block}")
            row = 10 * step + 2 * block
            events += [
                OpEvent(row, "aten::silu", row * 10, 5, (*mixer, "Act_0"), (act, forward)),
                OpEvent(row + 1, "aten::silu", row * 10 + 5, 5, mixer, (scan, forward)),
            ]
    matched = match_events(events, calls)
    assert {row: nodes[0] for row, nodes in matched.nodes_of.items()} == {
        10 * step + 2 * block + kind: f"silu_{('act', 'scan')[kind]}_{block}"
        for step in range(2)
        for block in range(2)
        for kind in range(2)
    }
    assert matched.source_disagreements == []


def test_eager_fused_kernel_covers_its_modules_unaccounted_calls() -> None:
    """nn.MultiheadAttention's eager fast path is one event for the module's exported calls."""
    mha = ("Net_0", "MultiheadAttention_0")
    calls = [
        FxCall(0, "linear", "aten::linear", mha),
        FxCall(1, "bmm", "aten::bmm", mha),
        FxCall(2, "softmax", "aten::softmax", mha),
        FxCall(3, "relu", "aten::relu", ("Net_0",)),
    ]
    events = [
        OpEvent(1, "aten::_native_multi_head_attention", 0, 50, mha),
        OpEvent(2, "aten::relu", 60, 5, ("Net_0",)),
    ]
    matched = match_events(events, calls)
    assert matched.nodes_of == {1: ("linear", "bmm", "softmax"), 2: ("relu",)}
    assert matched.unmatched == {}


def test_top_level_events_skip_nested_aten_children_on_the_same_thread() -> None:
    """aten::linear contains aten::addmm: only the parent counts; other threads stand alone."""
    builder = TraceBuilder()
    main = builder.track(1, 1)
    worker = builder.track(1, 2)
    op = EventKind.FRAMEWORK_OP
    builder.add(1000, 500, main, "aten::linear", op, {"Call stack": "nn.Module: Net_0;"})
    builder.add(1100, 300, main, "aten::addmm", op)
    builder.add(1200, 50, worker, "aten::copy_", op)
    builder.add(1600, 100, main, "aten::relu", op)
    trace = builder.build()
    events = top_level_op_events(trace)
    assert [e.name for e in events] == ["aten::linear", "aten::copy_", "aten::relu"]
    assert events[0].chain == ("Net_0",)


@pytest.mark.parametrize("name", ["cnn", "attention"])
def test_torch_level_op_time_fits_each_profiler_step(results: dict, name: str) -> None:
    """The step-time check: per `ProfilerStep#N` window, the op time the correlator counted, as
    summed here from the trace's own events in the window, fits the window."""
    bundle = RunBundle(TORCH_FIXTURES / name)
    check = results[(name, "torch")].coverage.extra["step_check"]
    trace = bundle.trace()
    steps = [
        (int(trace.ts_ns[r]), int(trace.end_ns[r]))
        for r in trace.rows_of_kind(EventKind.STEP).tolist()
        if trace.name_of(r).startswith("ProfilerStep#")
    ]
    assert len(check["step_ns"]) == len(steps) >= 2
    assert check["step_ns"] == [end - begin for begin, end in sorted(steps)]
    assert check["over_steps"] == []
    assert all(c <= s for c, s in zip(check["counted_ns"], check["step_ns"], strict=True))
