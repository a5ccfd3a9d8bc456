"""Hugging Face models built from public library code (examples/zoo/torch_gpt2.py, torch_bert.py).

One capture per model and mode per module (2 timed steps, tiny configs: a few seconds each),
correlated at the torch and linalg levels. Expected figures come from the capture's own trace
JSON and from `torch.export` run here, never from the correlator. Small unit tests pin each fix
on a tiny module: a non-persistent buffer, tied weights, an SDPA decomposition that breaks a
later view, an op the linalg lowering cannot convert, a model whose lowering crashes.
"""

from __future__ import annotations

import decimal
import gzip
import json
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.frameworks.torch.capture import TorchCaptureOptions
from irprof.frameworks.torch.correlate import CORRELATOR
from irprof.frameworks.torch.locations import FxNodeName
from irprof.frameworks.torch.training import ACCUMULATE_GRAD, ENGINE_PREFIX
from tests.zoo_captures import ZooCaptures

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

ZOO = Path(__file__).parents[3] / "examples" / "zoo"
LEVELS = ("torch", "linalg")
OPTIONS = TorchCaptureOptions(steps=2)  # the e2e zoo test's, so the captures are shared


@pytest.fixture(scope="module")
def captures(zoo_captures: ZooCaptures) -> dict[str, RunBundle]:
    """GPT-2 (inference and a training step) and BERT, each captured once in the session."""
    runs = {
        "gpt2": ("torch_gpt2", OPTIONS),
        "gpt2_train": ("torch_gpt2", TorchCaptureOptions(steps=2, mode="train")),
        "bert": ("torch_bert", OPTIONS),
    }
    return {name: zoo_captures(model, options) for name, (model, options) in runs.items()}


@pytest.fixture(scope="module")
def results(captures: dict[str, RunBundle]) -> dict[tuple[str, str], CorrelationResult]:
    """Every capture correlated at each level it has."""
    return {
        (name, level): CORRELATOR.correlate(bundle, level, CorrelationOptions())
        for name, bundle in captures.items()
        for level in bundle.manifest().ir_levels
    }


def _ns(microseconds: decimal.Decimal) -> int:
    return int((microseconds * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def trace_op_events(bundle: RunBundle) -> list[tuple[str, int]]:
    """(name, dur_ns) of the top-level `cpu_op` events of the timed trace, read from the JSON:
    an event inside another cpu_op of the same thread is that op's own work."""
    path = bundle.root / "trace" / "torch.pt.trace.json.gz"
    document = json.loads(gzip.decompress(path.read_bytes()), parse_float=decimal.Decimal)
    by_thread: dict[tuple[Any, Any], list[tuple[int, int, str]]] = defaultdict(list)
    for event in document["traceEvents"]:
        if event.get("cat") == "cpu_op" and event.get("ph") == "X":
            start, dur = _ns(decimal.Decimal(event["ts"])), _ns(decimal.Decimal(event["dur"]))
            by_thread[(event["pid"], event["tid"])].append((start, dur, event["name"]))
    found = []
    for events in by_thread.values():
        open_end = -1
        for start, dur, name in sorted(events, key=lambda e: (e[0], -e[1])):
            if start >= open_end:
                found.append((name, dur))
                open_end = start + dur
    return found


def _components(result: CorrelationResult) -> Iterator[tuple[set[str], int]]:
    """Event names joined by entries that hold several (an absorbed call), with their total."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for entry in result.opprofile.entries:
        first, *rest = entry.data.kernels or ("",)
        for other in rest:
            parent[find(other)] = find(first)
    totals: Counter[str] = Counter()
    members: dict[str, set[str]] = defaultdict(set)
    for entry in result.opprofile.entries:
        for kernel in entry.data.kernels:
            members[find(kernel)].add(kernel)
        if entry.data.kernels:
            totals[find(entry.data.kernels[0])] += entry.data.total_ns
    for root, names in members.items():
        yield names, totals[root]


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_per_op_totals_are_the_traces_own_sums(results: dict, captures: dict, name: str) -> None:
    """Summed per event name, what the torch ops received is what the trace's events took;
    the linalg ops together receive exactly what their torch op did."""
    torch_level = results[(name, "torch")]
    traced: Counter[str] = Counter()
    for event_name, dur in trace_op_events(captures[name]):
        traced[event_name] += dur
    for lost in torch_level.coverage.unmatched_events:
        traced[lost.name] -= lost.total_ns
    checked = set()
    for names, total in _components(torch_level):
        assert total == sum(traced[n] for n in names), names
        checked |= names
    assert {n for n, dur in traced.items() if dur} <= checked
    # Against the framework's own per-name table (its trace summed by event name): the ops fed
    # by one event name alone never hold more than that name took. (Which name is first is not
    # compared: when two names' totals are close, as `aten::add` and `aten::addmm` on GPT-2, the
    # time a name gave to groups of several kernels decides it, run to run.)
    by_kernel: Counter[str] = Counter()
    for entry in torch_level.opprofile.entries:
        if len(entry.data.kernels) == 1:
            by_kernel[entry.data.kernels[0]] += entry.data.total_ns
    assert by_kernel and all(total <= traced[n] for n, total in by_kernel.items())
    # linalg: an entry's kernels name the torch ops (`op origin`) whose time it carries.
    received = {
        f"{entry.op_name} {entry.key.origin}": entry.data.total_ns
        for entry in torch_level.opprofile.entries
    }
    for names, total in _components(results[(name, "linalg")]):
        assert total == sum(received[n] for n in names), names


@pytest.mark.parametrize("name", ["gpt2", "gpt2_train", "bert"])
def test_time_coverage_at_every_level(results: dict, captures: dict, name: str) -> None:
    """>= 99% of profiled time on ops at each level; a training step's optimizer is its own
    bucket, so forward and backward are what the ops must cover."""
    levels = captures[name].manifest().ir_levels
    assert levels == LEVELS
    for level in levels:
        coverage = results[(name, level)].coverage
        training = coverage.extra.get("training")
        optimizer = training["phases_profiled_ns"]["optimizer"] if training else 0
        assert coverage.attributed_ns >= 0.99 * (coverage.profiled_ns - optimizer), level
    # Every joined event has its call's innermost source frame (the library line) on its stack.
    assert results[(name, "torch")].coverage.warnings == ()


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_no_op_that_ran_is_never_ran(results: dict, captures: dict, name: str) -> None:
    """For each aten op the trace ran k times per step, at least min(k, calls of it in the
    exported program) of those calls have time at torch level."""
    steps = captures[name].manifest().steps
    ran = Counter(event_name for event_name, _ in trace_op_events(captures[name]))
    fx = json.loads((captures[name].root / "ir" / "torch.fx.json").read_bytes())
    calls_of: dict[str, set[str]] = defaultdict(set)
    for node in fx["nodes"]:
        namespace, _, rest = node["target"].partition(".")
        calls_of[f"{namespace}::{rest.split('.')[0]}"].add(node["name"])
    # The calls some op of the torch-level IR is named after (`module|node|target` NameLocs);
    # a call decomposition removed has no op to list as "never ran".
    torch_ir = (captures[name].root / "ir" / "torch.mlir").read_text()
    in_ir = set(re.findall(r'loc\("[^"|]*\|([^"|]+)\|[^"|]*"', torch_ir))
    timed = {
        parsed.node
        for entry in results[(name, "torch")].opprofile.entries
        if entry.data.total_ns > 0 and (parsed := FxNodeName.parse(entry.key.name or ""))
    }
    for event_name, count in ran.items():
        calls = calls_of.get(event_name, set()) & in_ir
        assert len(calls & timed) >= min(count // steps, len(calls)), event_name


@pytest.mark.parametrize(
    ("name", "library_file"), [("gpt2", "modeling_gpt2.py"), ("bert", "modeling_bert.py")]
)
def test_locations_point_at_the_library_models_lines(
    results: dict, name: str, library_file: str
) -> None:
    """Each op's source is the innermost frame outside torch's own package: the library
    model's line, with the chain up to the zoo script kept in the location."""
    entries = results[(name, "torch")].opprofile.entries
    sources = [entry.key.source or "" for entry in entries]
    assert not [s for s in sources if s.startswith("torch/")]
    assert all(s.startswith("transformers/") for s in sources), sources
    in_model = [s for s in sources if s.startswith(f"transformers/models/{name}/{library_file}:")]
    assert len(in_model) > len(sources) / 2
    lines = {s.split(":")[1] for s in in_model}
    assert len(lines) > 10  # not one wrapper line for every op
    script = f"torch_{name}.py:"
    assert all(script in entry.location for entry in entries)  # the chain up to the user's script


def test_failed_decomposition_is_listed_and_sdpa_kept_whole(captures: dict) -> None:
    """GPT-2's SDPA for a batch breaks torch's run_decompositions; the capture names the stage
    and the op, keeps SDPA whole and still captures both levels."""
    decomposition = captures["gpt2"].manifest().options["decomposition"]
    failure = decomposition["failure"]
    assert failure["stage"] == "run_decompositions"
    assert failure["op"] == "aten.view.default"
    assert decomposition["kept_whole"] == ["aten.scaled_dot_product_attention.default"]
    torch_ir = (captures["gpt2"].root / "ir" / "torch.mlir").read_text()
    assert "torch.aten.scaled_dot_product_attention" in torch_ir


def test_tied_weight_accumulate_grad_is_attributed(results: dict, captures: dict) -> None:
    """GPT-2 ties wte.weight to lm_head.weight: its AccumulateGrad goes to the calls reading
    the one tensor (the embedding and the LM head), and no backward event is left over."""
    result = results[("gpt2_train", "torch")]
    assert not [e for e in result.coverage.unmatched_events if ACCUMULATE_GRAD in e.name]
    fx = json.loads((captures["gpt2_train"].root / "ir" / "torch.fx.json").read_bytes())
    readers = fx["parameters"]["model.lm.transformer.wte.weight"]
    targets = {n["name"]: n["target"] for n in fx["nodes"]}
    assert {targets[r] for r in readers} >= {"aten.embedding.default", "aten.linear.default"}
    assert ENGINE_PREFIX + ACCUMULATE_GRAD in {
        k for entry in result.opprofile.entries for k in entry.data.kernels
    }


def test_a_call_removed_by_decomposition_gives_its_time_to_its_users(
    results: dict, captures: dict
) -> None:
    """GPT-2's `to` (a no-op dtype conversion) has no op after decomposition: its event goes to
    the calls reading its result in the exported program (exported here, independently)."""
    result = results[("gpt2", "torch")]
    assert not [e for e in result.coverage.unmatched_events if e.name == "aten::to"]
    with torch.no_grad():
        spec = _load_zoo("torch_gpt2.py")
        exported = torch.export.export(spec["model"].eval(), spec["inputs"])
    (to_node,) = [n for n in exported.graph.nodes if n.name == "to"]
    users = {user.name for user in to_node.users}
    receivers = {
        parsed.node
        for entry in result.opprofile.entries
        if "aten::to" in entry.data.kernels and (parsed := FxNodeName.parse(entry.key.name or ""))
    }
    assert receivers and receivers <= users


def _load_zoo(script: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile((ZOO / script).read_text(), str(ZOO / script), "exec"), namespace)
    return namespace["irprof_model"]()


BUFFER_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Positions(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(16, 4)
            self.register_buffer("position_ids", torch.arange(16).unsqueeze(0), persistent=False)

        def forward(self, x):
            return self.embed(x) + self.embed(self.position_ids[:, : x.shape[1]])


    def irprof_model():
        torch.manual_seed(0)
        return Positions().eval(), (torch.randint(0, 16, (1, 5)),)
    """
)


def test_non_persistent_buffer_is_imported() -> None:
    """A `register_buffer(..., persistent=False)` lives in the program's constants, not its
    state dict: the importer gets it in its state mapping (BERT's position_ids)."""
    from iree.compiler import ir

    from irprof.frameworks.torch.decomposition import decompose
    from irprof.frameworks.torch.runner import import_program

    namespace: dict[str, Any] = {}
    exec(BUFFER_MODEL, namespace)
    model, inputs = namespace["irprof_model"]()
    program = decompose(torch.export.export(model, inputs), "default")
    text = str(import_program(program, ir.Context()))
    assert "torch.aten.embedding" in text
    assert "dense_resource" in text or "dense<" in text  # position_ids, frozen as a literal


class _IndexedByBuffer(torch.nn.Module):
    """Swin's relative position bias: a table indexed by an integer buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.arange(12.0).reshape(4, 3))
        self.register_buffer("index", torch.tensor([3, 0, 2, 2]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table[self.index] + self.index.unsqueeze(1)


def test_state_read_inside_a_list_argument_is_imported() -> None:
    """`table[buffer]` is `aten.index.Tensor(table, [buffer])`: the importer takes only graph
    nodes inside a list, so the buffer is read through a `get_attr` node, imported as the same
    literal (the other read of it, a direct argument, too)."""
    from iree.compiler import ir

    from irprof.frameworks.torch.decomposition import decompose
    from irprof.frameworks.torch.runner import import_program

    program = decompose(
        torch.export.export(_IndexedByBuffer().eval(), (torch.zeros(4, 3),)), "default"
    )
    text = str(import_program(program, ir.Context()))
    assert "torch.aten.index.Tensor" in text
    # the buffer, frozen as a literal: int64 3, 0, 2, 2 after the resource's alignment word
    int64s = "".join(value.to_bytes(8, "little").hex() for value in (3, 0, 2, 2))
    assert f'"0x08000000{int64s.upper()}"' in text
    assert "func.func @main(%arg0: !torch.vtensor<[4,3],f32>)" in text  # no state argument


def test_tied_weights_are_one_parameter_read_by_both_calls() -> None:
    """export lists a tied weight under each name (one placeholder unused); keyed by identity,
    the parameter named as autograd accumulates it has both readers."""
    from irprof.frameworks.torch.runner import describe_signature

    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(10, 4)
            self.head = torch.nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, x: Any) -> Any:
            return self.head(self.embed(x))

    model = Tied()
    signature = describe_signature(torch.export.export(model, (torch.tensor([[1, 2]]),)), model)
    (name,) = [n for n, _ in model.named_parameters()]
    assert sorted(signature["parameters"]) == [name]
    assert len(signature["parameters"][name]) == 2


SDPA_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
            self.out = nn.Linear(8, 8)

        def forward(self, x):
            batch, length, _ = x.shape
            q, k, v = self.qkv(x).view(batch, length, 3, 2, 4).permute(2, 0, 3, 1, 4)
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).reshape(batch, length, 8)
            return self.out(y.view(-1, 8))


    def irprof_model():
        torch.manual_seed(0)
        return Attention().eval(), (torch.randn(2, 5, 8),)
    """
)


def test_decomposition_failure_keeps_the_breaking_op_whole() -> None:
    """torch's SDPA decomposition gives other strides than its kernel, so a later view fails
    in run_decompositions; the op nearest the failing node that the table decomposes is kept
    whole and the failure recorded with its stage and op."""
    from irprof.frameworks.torch.decomposition import decompose_recorded

    namespace: dict[str, Any] = {}
    exec(SDPA_MODEL, namespace)
    model, inputs = namespace["irprof_model"]()
    program, record = decompose_recorded(torch.export.export(model, inputs), "default")
    assert record["failure"]["stage"] == "run_decompositions"
    assert record["failure"]["op"] == "aten.view.default"
    assert record["kept_whole"] == ["aten.scaled_dot_product_attention.default"]
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert "aten.scaled_dot_product_attention.default" in targets


DIFF_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Differences(nn.Module):
        def forward(self, x):
            return torch.diff(x, dim=-1).relu()


    def irprof_model():
        return Differences(), (torch.randn(2, 5),)
    """
)


def test_level_that_fails_to_lower_is_listed_and_the_torch_level_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--decompose none` keeps aten.diff, which the linalg lowering cannot convert: the
    capture succeeds with the torch level, lists linalg with the stage and the op, and the
    torch level annotates."""
    script = tmp_path / "differences.py"
    script.write_text(DIFF_MODEL)
    out = tmp_path / "run"
    code = main(
        ["capture", "torch", str(script), "-o", str(out), "--decompose", "none", "--steps", "2",
         "--warmup", "1"]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    manifest = RunBundle(out).manifest()
    assert manifest.ir_levels == ("torch",)
    (failed,) = manifest.options["failed_levels"]
    assert failed["level"] == "linalg"
    assert failed["stage"] == "torch -> linalg lowering"
    assert failed["op"] == "aten.diff.default"
    assert failed["source"].startswith("differences.py:")
    assert "level linalg not captured: torch -> linalg lowering failed on aten.diff.default" in (
        " ".join(printed.split())
    )
    coverage = CORRELATOR.correlate(RunBundle(out), "torch", CorrelationOptions()).coverage
    assert coverage.attributed_ns >= 0.99 * coverage.profiled_ns
    # Annotating the level that failed says why, instead of only "no IR".
    assert main(["annotate", str(out), "--level", "linalg"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no IR for level 'linalg'" in err
    assert "torch -> linalg lowering failed on aten.diff.default" in err


REFORMER_MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn
    from transformers import ReformerConfig, ReformerModel


    class Reformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = ReformerModel(ReformerConfig(
                vocab_size=100, hidden_size=32, feed_forward_size=64, num_attention_heads=2,
                attention_head_size=16, attn_layers=["local", "lsh"], axial_pos_embds=False,
                max_position_embeddings=64, local_attn_chunk_length=8, lsh_attn_chunk_length=8,
                num_buckets=4, num_hashes=1, pad_token_id=0, is_decoder=False))

        def forward(self, ids):
            return self.m(input_ids=ids).last_hidden_state


    def irprof_model():
        torch.manual_seed(0)
        return Reformer().eval(), (torch.randint(3, 100, (2, 32)),)
    """
)


def test_a_lowering_that_crashes_costs_the_linalg_level_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HF Reformer's torch level makes torch-mlir's linalg lowering (in iree-base-compiler
    3.13) die: a segfault, or "LLVM ERROR: out of memory" and an abort. In the capture's own
    process that took the whole capture down (exit -6, no bundle); the lowering now runs in a
    child of its own, and the capture keeps the torch level and says how the lowering died."""
    script = tmp_path / "reformer.py"
    script.write_text(REFORMER_MODEL)
    out = tmp_path / "run"
    code = main(["capture", "torch", str(script), "-o", str(out), "--steps", "2", "--warmup", "1"])
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 0, printed
    manifest = RunBundle(out).manifest()
    assert manifest.ir_levels == ("torch",)
    (failed,) = manifest.options["failed_levels"]
    assert failed["level"] == "linalg" and failed["op"] == ""
    assert failed["error"].startswith("torch -> linalg lowering crashed (signal SIG")
    assert f"level linalg not captured: {failed['error']}" in printed
    assert main(["annotate", str(out), "--level", "torch"]) == 0
