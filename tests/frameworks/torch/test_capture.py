"""End to end with the real torch CPU wheel: capture a model in a child process, annotate it.

One capture per session (a few seconds): a model whose forward loops in Python over one shared
layer, calls two different layers on one source line, and uses modules whose eager execution
differs from the exported program (BatchNorm in eval, in-place ReLU, an LSTM, and
nn.MultiheadAttention, which eager runs as one fused `aten::_native_multi_head_attention`).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.errors import CaptureError, UsageError
from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch
from irprof.frameworks.torch.correlate import CORRELATOR
from irprof.frameworks.torch.events import load_fx_calls
from irprof.frameworks.torch.locations import FxNodeName
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import get_profile
from irprof.opprofile import OpProfile

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LOOP_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Looped(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Linear(16, 16)
            self.left = nn.Linear(16, 8)
            self.right = nn.Linear(16, 8)
            self.norm = nn.BatchNorm1d(16)
            self.act = nn.ReLU(inplace=True)
            self.lstm = nn.LSTM(16, 16, batch_first=True)
            self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            for _ in range(3):
                x = torch.tanh(self.shared(x))
            x = self.act(self.norm(x))
            seq, _ = self.lstm(x.unsqueeze(0))
            seq, _ = self.mha(seq, seq, seq)
            x = seq.squeeze(0)
            return self.left(x) + self.right(x)


    def build():
        torch.manual_seed(0)
        return Looped(), (torch.randn(4, 16),)
    """
)


@pytest.fixture(scope="session")
def loop_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The session's one real capture."""
    folder = tmp_path_factory.mktemp("torch_loop")
    script = folder / "looped.py"
    script.write_text(LOOP_MODEL)
    options = TorchCaptureOptions(entry="build", steps=3, warmup=1)
    return capture_torch(script, folder / "run", options)


def test_capture_writes_a_complete_bundle(loop_bundle: RunBundle) -> None:
    """Manifest, both IR levels, the FX node list and the gzipped Chrome trace."""
    manifest = loop_bundle.manifest()
    assert manifest.framework == "torch"
    assert manifest.ir_levels == ("torch", "linalg")
    assert manifest.steps == 3
    assert manifest.options["threads"] == 1
    assert manifest.versions["torch"].startswith("2.13.0")
    files = (
        loop_bundle.ir_path("torch"),
        loop_bundle.ir_path("linalg"),
        loop_bundle.root / "ir" / "torch.fx.json",
        *loop_bundle.trace_paths(),
    )
    for path in files:
        assert path.is_file() and path.stat().st_size > 0
    assert loop_bundle.trace_paths()[0].read_bytes()[:2] == b"\x1f\x8b"


def test_locations_name_fx_nodes_with_paths_relative_to_the_script(loop_bundle: RunBundle) -> None:
    """Every op location is relative (no machine path); each call node has its own NameLoc."""
    text = loop_bundle.ir_path("torch").read_text()
    assert str(loop_bundle.root.parent) not in text
    module = load_module(loop_bundle.ir_path("torch"), make_context())
    names = {info.key.name or "" for info in derive_op_infos(module)}
    addmm_names = {name for name in names if name.endswith("|aten.addmm.default")}
    assert {name for name in addmm_names if name.startswith(("shared|", "left|", "right|"))} == {
        "shared|linear|aten.addmm.default",
        "shared|linear_1|aten.addmm.default",
        "shared|linear_2|aten.addmm.default",
        "left|linear_5|aten.addmm.default",
        "right|linear_6|aten.addmm.default",
    }
    sources = {info.key.source for info in derive_op_infos(module) if info.key.source}
    assert all(source.startswith("looped.py:") for source in sources)


def test_every_live_exported_call_names_an_op(loop_bundle: RunBundle) -> None:
    """The input's `unsqueeze` (replayed by functionalization after the in-place ReLU) has its op.

    Only calls that yield no tensor op have none: tuple indexing (`getitem`) and the attention
    weights nn.MultiheadAttention averages (`view_4`, `mean`), which `seq, _ =` discards.
    """
    module = load_module(loop_bundle.ir_path("torch"), make_context())
    infos = derive_op_infos(module)
    named = {parsed.node for info in infos if (parsed := FxNodeName.parse(info.key.name or ""))}
    calls = {call.node for call in load_fx_calls(loop_bundle.root / "ir" / "torch.fx.json")}
    assert calls - named == {"getitem", "getitem_1", "getitem_2", "view_4", "mean"}
    own = [info for info in infos if info.key.name == "|unsqueeze|aten.unsqueeze.default"]
    (unsqueeze,) = [info for info in own if info.op_name == "torch.aten.unsqueeze"]
    assert unsqueeze.key.source == "looped.py:21:0"  # the `self.lstm(x.unsqueeze(0))` line


def test_annotate_torch_level_covers_the_profile(loop_bundle: RunBundle) -> None:
    """>= 99% of profiled aten time lands on torch ops; each loop iteration on its own op."""
    outcome = annotate_bundle(loop_bundle, level="torch")
    assert outcome.coverage.time_coverage >= 0.99
    assert outcome.coverage.warnings == ()
    assert outcome.coverage.ops_nontrivial_annotated == outcome.coverage.ops_nontrivial
    module = load_module(outcome.annotated_path, make_context())
    addmm = {
        info.key.name: get_profile(info.op)
        for info in derive_op_infos(module)
        if info.op_name == "torch.aten.addmm"
    }
    loop_ops = [
        addmm[f"shared|{node}|aten.addmm.default"] for node in ("linear", "linear_1", "linear_2")
    ]
    assert all(data is not None and data.count == 3 for data in loop_ops)
    firsts = [data.first_ts_ns for data in loop_ops if data is not None]
    assert firsts == sorted(firsts) and len(set(firsts)) == 3
    assert loop_bundle.opprofile_level_path("torch").is_file()
    assert loop_bundle.coverage_path.is_file()


def test_eager_fused_attention_kernel_lands_on_the_exported_attention_ops(
    loop_bundle: RunBundle,
) -> None:
    """The fast-path event has no exported twin: it is shared by the mha module's ops."""
    result = CORRELATOR.correlate(loop_bundle, "torch", CorrelationOptions())
    fused = [
        entry
        for entry in result.opprofile.entries
        if "aten::_native_multi_head_attention" in entry.data.kernels
    ]
    assert len(fused) > 3
    assert all((entry.key.name or "").startswith("mha|") for entry in fused)
    assert all(entry.data.fused_with for entry in fused)
    assert sum(entry.data.total_ns for entry in fused) > 0


def test_annotate_linalg_level_reaches_every_located_op(loop_bundle: RunBundle) -> None:
    """Lowered ops carry their torch origin's profile."""
    outcome = annotate_bundle(loop_bundle, level="linalg")
    extra = outcome.coverage.extra
    assert extra["nonbody_located_annotated"] == extra["nonbody_located_ops"] > 0
    assert outcome.annotated_path.is_file()
    assert "irprof.profile" in outcome.annotated_path.read_text()


def test_bad_entry_is_a_capture_error_and_leaves_no_bundle(tmp_path: Path) -> None:
    """The child's message names the script and the fix; nothing is written."""
    script = tmp_path / "model.py"
    script.write_text("x = 1\n")
    with pytest.raises(CaptureError, match="no callable 'irprof_model'"):
        capture_torch(script, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.py"]


def test_bad_options_are_refused_before_running(tmp_path: Path) -> None:
    """Usage errors need no child process."""
    script = tmp_path / "model.py"
    script.write_text("x = 1\n")
    with pytest.raises(UsageError, match="--levels"):
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(levels=("linalg",)))
    with pytest.raises(UsageError, match="--decompose"):
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(decompose="all"))
    with pytest.raises(UsageError, match="no such script"):
        capture_torch(tmp_path / "missing.py", tmp_path / "run")


def test_model_torch_export_cannot_handle_is_one_clear_error(tmp_path: Path) -> None:
    """Data-dependent control flow: the error names the script and torch.export's complaint."""
    script = tmp_path / "branchy.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn


            class Branchy(nn.Module):
                def forward(self, x):
                    if x.sum() > 0:
                        return x * 2
                    return x - 1


            def irprof_model():
                return Branchy(), (torch.randn(3),)
            """
        )
    )
    with pytest.raises(
        CaptureError, match=r"branchy\.py: torch\.export could not export"
    ) as raised:
        capture_torch(script, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    # and it names the model's line that stopped the export, with its code
    line = script.read_text().splitlines().index("        if x.sum() > 0:") + 1
    assert f"branchy.py:{line} in forward: `if x.sum() > 0:`" in str(raised.value)


KEYWORD_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Scored(nn.Module):
        '''Named inputs, as a Hugging Face model takes what its tokenizer returns.'''

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 16)
            self.head = nn.Linear(16, 3)

        def forward(self, input_ids, attention_mask=None, scale=1.0):
            hidden = self.embed(input_ids) * attention_mask.unsqueeze(-1)
            return self.head(hidden.mean(1)) * scale


    def irprof_model(mode="infer"):
        torch.manual_seed(0)
        model = Scored()
        ids = torch.randint(0, 50, (2, 6))
        inputs = {"attention_mask": torch.ones(2, 6), "input_ids": ids}  # not in argument order
        if mode == "infer":
            return {"model": model, "inputs": inputs}
        return {
            "model": model,
            "inputs": inputs,
            "targets": (torch.tensor([0, 2]),),
            "loss": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1),
        }
    """
)


@pytest.mark.parametrize("mode", ["infer", "train"])
def test_inputs_given_by_name_are_passed_as_keywords(tmp_path: Path, mode: str) -> None:
    """`"inputs"` as a mapping: the export and every profiled step call `model(**inputs)`."""
    script = tmp_path / "scored.py"
    script.write_text(KEYWORD_MODEL)
    options = TorchCaptureOptions(mode=mode, steps=2, warmup=1, levels=("torch",))
    bundle = capture_torch(script, tmp_path / "run", options)
    calls = {call.node for call in load_fx_calls(bundle.root / "ir" / "torch.fx.json")}
    assert {"embedding", "mul", "linear"} <= calls  # the masked embedding and the head ran
    coverage = CORRELATOR.correlate(bundle, "torch", CorrelationOptions()).coverage
    assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial > 0


STEPS = 3  # profiled steps of the small models below


def correlated(tmp_path: Path, source: str) -> CorrelationResult:
    """`source` captured at the torch level (STEPS steps) and correlated."""
    script = tmp_path / "model.py"
    script.write_text(source)
    options = TorchCaptureOptions(steps=STEPS, warmup=1, levels=("torch",))
    bundle = capture_torch(script, tmp_path / "run", options)
    return CORRELATOR.correlate(bundle, "torch", CorrelationOptions())


def event_counts(profile: OpProfile, target: str) -> list[tuple[FxNodeName, int]]:
    """Each op of FX target `target` (`aten.addmm.default`: a linear layer's matmul) with the
    number of events it received."""
    found = []
    for entry in profile.entries:
        name = FxNodeName.parse(entry.key.name or "")
        if name is not None and name.target == target:
            found.append((name, entry.data.count))
    return found


AUTOCAST_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Mixed(nn.Module):
        '''Two linear layers, the second in a bf16 autocast region (its own module path).'''

        def __init__(self):
            super().__init__()
            self.first = nn.Linear(16, 16)
            self.second = nn.Linear(16, 16)

        def forward(self, x):
            x = self.first(x)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                x = self.second(x)
            return x.float().relu()


    def irprof_model():
        torch.manual_seed(0)
        return Mixed(), (torch.randn(4, 16),)
    """
)


def test_an_autocast_region_takes_its_own_calls_events(tmp_path: Path) -> None:
    """The region is one call group after decomposition; the eager `aten::linear` inside it
    joins the region's ops, never the other layer's linear (one event per step each)."""
    result = correlated(tmp_path, AUTOCAST_MODEL)
    addmm = event_counts(result.opprofile, "aten.addmm.default")
    counts = {name.node: count for name, count in addmm}
    # `first`'s own linear, and the region's (named after the region's node, not `linear`)
    assert counts.pop("linear") == STEPS
    (region_count,) = counts.values()
    assert region_count == STEPS
    coverage = result.coverage
    assert coverage.ops_nontrivial_annotated == coverage.ops_nontrivial


def test_an_importer_failure_names_the_node_and_its_line(tmp_path: Path) -> None:
    """A complex scalar has no literal in IREE's FX importer: the error says which call."""
    script = tmp_path / "rotate.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn


            class Rotate(nn.Module):
                def forward(self, x):
                    spectrum = torch.fft.rfft(x)
                    return torch.view_as_real(spectrum * 1j)


            def irprof_model():
                return Rotate(), (torch.randn(2, 8),)
            """
        )
    )
    with pytest.raises(CaptureError) as raised:
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(levels=("torch",)))
    message = str(raised.value)
    assert "rotate.py: IREE's FX importer failed on FX node 'mul' (aten.mul.Tensor at " in message
    assert "rotate.py:9)" in message  # the line of `spectrum * 1j`
    assert "its argument 1j is a complex scalar" in message
    assert not (tmp_path / "run").exists()


SHARED_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Shared(nn.Module):
        '''One Linear registered as `enc` and `dec` and called through both, then two heads.'''

        def __init__(self):
            super().__init__()
            self.first = nn.Linear(8, 8)
            shared = nn.Linear(8, 8)
            self.enc = shared
            self.dec = shared
            self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})

        def forward(self, x):
            x = self.dec(torch.tanh(self.enc(self.first(x))))
            return self.heads["b"](x), self.heads["a"](x)


    def irprof_model():
        torch.manual_seed(0)
        return Shared(), (torch.randn(4, 8),)
    """
)


def test_a_module_under_two_names_is_one_instance_and_later_layers_keep_their_events(
    tmp_path: Path,
) -> None:
    """The profiler numbers module objects; the export records the path a call went through.
    Counting `dec` as a new instance shifted every later Linear by one: `heads.b`'s event went
    to `dec`, `heads.a`'s to `heads.b`, and `enc` got two a step."""
    result = correlated(tmp_path, SHARED_MODEL)
    addmm = event_counts(result.opprofile, "aten.addmm.default")
    counts = {name.module_path: count for name, count in addmm}
    assert counts == {path: STEPS for path in ("first", "enc", "dec", "heads.b", "heads.a")}


EAGER_ONLY_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Child(nn.Module):
        '''Runs a mask check (`aten::eq`) only in eager: the export takes the other branch.'''

        def forward(self, x):
            if not torch.compiler.is_exporting():
                self.seen = bool((x == 3.0).any())
            return x * 2


    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.child = Child()

        def forward(self, x):
            return self.child(torch.where(x == 0.5, 0.0, x))


    def irprof_model():
        torch.manual_seed(0)
        return Top(), (torch.randn(4, 8),)
    """
)


def test_a_call_only_eager_runs_in_a_registered_submodule_stays_unmatched(
    tmp_path: Path,
) -> None:
    """The child's eager-only `eq` has no exported call in its module. Its parent's `eq` one
    level up is another call: it keeps its own one event per step and the child's events are
    unmatched, with the reason (they had been joined to the parent's by aten name)."""
    result = correlated(tmp_path, EAGER_ONLY_MODEL)
    eq = event_counts(result.opprofile, "aten.eq.Scalar")
    assert {(name.module_path, name.node): count for name, count in eq} == {("", "eq"): STEPS}
    unmatched = [e for e in result.coverage.unmatched_events if e.name == "aten::eq"]
    assert sum(e.count for e in unmatched) == STEPS
    assert all("no call of aten::eq in Top_0/Child_0" in e.reason for e in unmatched)


@pytest.mark.parametrize(
    ("returned", "described"), [("None", "None"), ("x", "input 'x'"), ("3", "3")]
)
def test_a_model_that_returns_nothing_it_computes_is_refused(
    tmp_path: Path, returned: str, described: str
) -> None:
    """HF's AutoformerModel without `future_values` returns no hidden state: every call was
    dead code, the IR kept none, and annotate showed 23% time coverage with each event
    "renamed by decomposition". The capture now says what the model returned."""
    script = tmp_path / "nothing.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import torch
            from torch import nn


            class Nothing(nn.Module):
                def forward(self, x):
                    self.kept = (x * 2).relu()
                    return {returned}


            def irprof_model():
                return Nothing(), (torch.randn(2, 8),)
            """
        )
    )
    with pytest.raises(CaptureError) as raised:
        capture_torch(script, tmp_path / "run", TorchCaptureOptions(levels=("torch",)))
    assert f"the model returns nothing it computes (forward returned {described})" in str(
        raised.value
    )
    assert not (tmp_path / "run").exists()


SCRATCH_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Scratch(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.register_buffer("seen", torch.zeros(8))

        def forward(self, x):
            h = self.proj(x).softmax(-1)
            probs = torch.zeros(4, 8)
            probs[:, :4].copy_(h[:, :4])
            self.seen.add_(1.0)
            return h.relu()


    def irprof_model():
        torch.manual_seed(0)
        return Scratch().eval(), (torch.randn(4, 8),)
    """
)


def test_writes_into_a_tensor_nothing_returns_are_listed_as_dead_code(tmp_path: Path) -> None:
    """HF BigBird fills attention probabilities nobody asked for: eager runs the `zeros`, the
    `slice` view and the in-place `copy_`; the export's decomposition drops them. Their events
    were "the decomposition removed the call or named its ops after another node", since any
    in-place call counted as live; the capture now records what each call writes and views
    (from its schema), so they are dead code. The buffer's `add_` is visible to the caller:
    live, and timed."""
    result = correlated(tmp_path, SCRATCH_MODEL)
    nodes = json.loads((tmp_path / "run" / "ir" / "torch.fx.json").read_text())["nodes"]
    by_target = {node["target"]: node for node in nodes}
    by_name = {node["name"]: node for node in nodes}
    (written,) = by_target["aten.copy_.default"]["writes"]
    chain = [by_name[written]["target"]]  # the views from the written tensor to its root
    while by_name[written].get("aliases"):
        written = by_name[written]["aliases"]
        chain.append(by_name[written]["target"])
    assert chain[-1] == "aten.zeros.default" and set(chain[:-1]) == {"aten.slice.Tensor"}
    assert by_target["aten.add_.Tensor"]["writes"] == [""]  # the buffer
    reasons = {event.name: event.reason for event in result.coverage.unmatched_events}
    for name in ("aten::zeros", "aten::copy_"):
        assert "compute a value no output of the model uses" in reasons[name], reasons
    assert "aten::add_" not in reasons
    ((_, count),) = event_counts(result.opprofile, "aten.add.Tensor")  # add_ decomposed
    assert count == STEPS
