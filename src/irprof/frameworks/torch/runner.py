"""Child process of `irprof capture torch`; it and `torch_steps_runner` alone import torch.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/runner.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import torch
import torch._decomp
from iree.compiler import ir
from iree.compiler.extras.fx_importer import ContextCache, FxImporter, GraphNodeImporter

from irprof.bundle import Manifest, RunBundle, fingerprint_files
from irprof.capture.entry import EntryError, add_entry_options, load_entry, package_versions
from irprof.capture.subprocess_run import ERROR_PREFIX  # the parent shows such lines as the error
from irprof.errors import PipelineError
from irprof.fileio import write_bytes_atomic, write_text_atomic
from irprof.frameworks.torch.locations import (
    FxNodeName,
    SourceFrame,
    format_stack_trace,
    module_class_name,
    node_location,
    parse_stack_trace,
    user_frames,
)
from irprof.frameworks.torch.lowering import lower_torch_to_linalg, stamp_torch_level
from irprof.frameworks.torch.steps_runner import (
    MODES,
    ModelSpec,
    model_spec,
    profile_model,
)
from irprof.frameworks.torch.view_replay import repair_view_replay

NODE_TAG = "irprof_node"  # key in `node.meta["custom"]`, which decompositions propagate
FX_NODES_FILE = "ir/torch.fx.json"
TRACE_FILE = "trace/torch.pt.trace.json.gz"
# The untimed call-stack reference step (see `torch_steps_runner`); in its own folder so that
# `trace/` holds one trace, as tools that take a folder of traces expect.
REFERENCE_FILE = "trace/reference/torch.stacks.pt.trace.json.gz"


class ScriptError(Exception):
    """The user's script or entry is not usable; the message names the script and the fix."""


def model_spec_of(script: Path, entry: str, mode: str) -> ModelSpec:
    """Call the entry and check what it returned for `mode` (see `torch_steps_runner`)."""
    try:
        factory = load_entry(script, entry, module_name=f"irprof_model_{script.stem}")
        return model_spec(factory(), mode, f"{script}: {entry}()")
    except EntryError as error:
        raise ScriptError(str(error)) from error


IRPROF_PACKAGE = str(Path(__file__).resolve().parents[2])


def model_frames(stack_trace: str | None) -> list[tuple[str, int, str]]:
    """A node's stack trace without irprof's own frames (`TrainingLoss.forward` calling the
    model and the loss is the capture's, not the user's: the loss's ops are then placed at
    the loss module's code, like any other library call)."""
    return [
        frame
        for frame in parse_stack_trace(stack_trace)
        if not frame[0].startswith(IRPROF_PACKAGE + os.sep)
    ]


def library_roots() -> list[str]:
    """sys.path entries that are folders: library frames are shown relative to them."""
    return [p for p in sys.path if p and os.path.isdir(p)]


def describe_nodes(program: torch.export.ExportedProgram, script_dir: str) -> list[dict[str, Any]]:
    """The exported (pre-decomposition) call nodes: what eager mode runs as one aten call each.

    Tags every node with its own name in `meta["custom"]`, which `run_decompositions` copies to
    the nodes a call is decomposed into, so each imported op can name the call it came from.
    """
    roots = library_roots()
    described = []
    for index, node in enumerate(n for n in program.graph.nodes if n.op == "call_function"):
        node.meta["custom"] = {**node.meta.get("custom", {}), NODE_TAG: node.name}
        frames = user_frames(model_frames(node.meta.get("stack_trace")), script_dir, roots)
        stack = node.meta.get("nn_module_stack") or {}
        described.append(
            {
                "index": index,
                "name": node.name,
                "target": str(node.target),
                "modules": [[path, module_class_name(str(cls))] for path, cls in stack.values()],
                "frames": [[f.file, f.line, f.function] for f in frames],
            }
        )
    return described


class _NamedLocations:
    """The importer's ContextCache with `get_node_location` answering our NameLoc.

    The importer asks its cache for each node's location (and keeps the previous node's location
    when the answer is None, which misattributes nodes without a stack trace); answering for
    every node fixes both that and the missing names.
    """

    def __init__(self, inner: ContextCache, locate: Callable[[Any], ir.Location]) -> None:
        self._inner = inner
        self._locate = locate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_node_location(self, node: Any) -> ir.Location:
        """Our NameLoc for call nodes; the importer's own answer for the rest."""
        if node.op == "call_function":
            return self._locate(node)
        return self._inner.get_node_location(node)


def relativize_stack_traces(program: torch.export.ExportedProgram, script_dir: str) -> None:
    """Rewrite every node's stack trace to its user frames with relative paths.

    The importer reads `stack_trace` itself for the function's and arguments' locations; after
    this it finds the same relative frames our NameLocs use, and no machine path.
    """
    roots = library_roots()
    for node in program.graph.nodes:
        raw = model_frames(node.meta.get("stack_trace"))
        if raw:
            node.meta["stack_trace"] = format_stack_trace(user_frames(raw, script_dir, roots))


def import_program(program: torch.export.ExportedProgram, context: ir.Context) -> ir.Module:
    """Import `program` with FxImporter; every call node's ops get a NameLoc of the node."""

    def locate(node: Any) -> ir.Location:
        stack = node.meta.get("nn_module_stack") or {}
        module_path = list(stack.values())[-1][0] if stack else ""
        origin = (node.meta.get("custom") or {}).get(NODE_TAG, node.name)
        frames: tuple[SourceFrame, ...] = tuple(
            SourceFrame(file, line, function)
            for file, line, function in parse_stack_trace(node.meta.get("stack_trace"))
        )
        return node_location(FxNodeName(module_path, origin, str(node.target)), frames, context)

    def node_importer(fx_importer: Any, ctx: Any, cache: Any, block: Any) -> GraphNodeImporter:
        return GraphNodeImporter(fx_importer, ctx, _NamedLocations(cache, locate), block)

    importer = FxImporter(context=context, graph_node_importer_cls=node_importer)
    importer.import_frozen_program(program)
    return importer.module


# Core ATen ops that torch-mlir's linalg conversion cannot lower but torch can decompose; the
# same ops torch-mlir's own `fx_decomp_util.DEFAULT_DECOMPOSITIONS` decomposes for this reason.
UNLOWERABLE_OPS = (
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit.no_stats",
    "native_group_norm",
    "squeeze.dims",
    "_adaptive_avg_pool2d",
    "_log_softmax",
    "logsumexp",
    "_unsafe_index.Tensor",
    "masked_fill.Tensor",
    "masked_fill.Scalar",
    "unbind",
    "im2col",
    "grid_sampler_2d",
)


def decomposition_table(decompose: str) -> Any:
    """`default`: torch's core ATen table plus the ops torch-mlir cannot lower; `none`: empty.

    An empty table still functionalizes the program but keeps composite ops whole
    (`aten.linear`, `aten.softmax`), which torch-mlir lowers directly.
    """
    if decompose == "none":
        return {}
    table = torch.export.default_decompositions()
    packets = []
    for name in UNLOWERABLE_OPS:
        packet_name, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, packet_name)
        packets.append(getattr(packet, overload) if overload else packet)
    table.update(torch._decomp.get_decompositions(packets))  # type: ignore[no-untyped-call]
    return table


def decompose(
    program: torch.export.ExportedProgram, decompose: str
) -> torch.export.ExportedProgram:
    """Functionalize and decompose `program` (tagged by `describe_nodes`), views retagged.

    Functionalization re-creates the views of tensors mutated in place at their first use and
    names them after that use; `repair_view_replay` gives each back to its own call.
    """
    lowered: torch.export.ExportedProgram = program.run_decompositions(
        decomposition_table(decompose)
    )
    repair_view_replay(program.graph, lowered.graph, NODE_TAG)
    return lowered


def describe_signature(program: torch.export.ExportedProgram) -> dict[str, Any]:
    """The call nodes that read each parameter and those that produce the outputs.

    A training step's gradient accumulation into a parameter and the seed gradient of the loss
    are backward work with no forward op of their own; these name the calls they belong to.
    """
    parameter_of = {
        spec.arg.name: spec.target
        for spec in program.graph_signature.input_specs
        if spec.kind == torch.export.graph_signature.InputKind.PARAMETER
    }
    parameters: dict[str, list[str]] = {}
    outputs: list[str] = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in parameter_of:
            users = [user.name for user in node.users if user.op == "call_function"]
            parameters[parameter_of[node.name]] = users
        elif node.op == "output":
            for arg in node.all_input_nodes:
                if arg.op == "call_function":
                    outputs.append(arg.name)
    return {"parameters": parameters, "outputs": outputs}


def print_module(module: ir.Module) -> str:
    """Module text with locations (`loc(...)`), which every later step keys on."""
    text: str = module.operation.get_asm(enable_debug_info=True)
    return text


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Options mirror `irprof capture torch`."""
    parser = argparse.ArgumentParser(prog="irprof.frameworks.torch.runner")
    parser.add_argument("script", type=Path)
    parser.add_argument("staging", type=Path)
    add_entry_options(parser, MODES)
    parser.add_argument("--levels", default="torch,linalg")
    parser.add_argument("--decompose", choices=("default", "none"), default="default")
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args(argv)


def export_program(spec: ModelSpec, script: Path) -> torch.export.ExportedProgram:
    """`torch.export.export` of the spec's module, its failures as one ScriptError."""
    try:
        return torch.export.export(spec.model, spec.inputs, dynamic_shapes=spec.dynamic_shapes)
    except Exception as error:  # torch.export raises many types; all mean "cannot export"
        summary = (str(error).strip().splitlines() or [""])[0][:300]
        raise ScriptError(
            f"{script}: torch.export could not export the model ({type(error).__name__}: {summary})"
        ) from error


def write_ir(
    program: torch.export.ExportedProgram, args: argparse.Namespace, levels: tuple[str, ...]
) -> None:
    """Decompose, import and (with `linalg` in `levels`) lower; write each level's IR."""
    script = args.script.resolve()
    bundle = RunBundle(args.staging)
    lowered_program = decompose(program, args.decompose)
    context = ir.Context()
    relativize_stack_traces(lowered_program, str(script.parent))
    torch_module = import_program(lowered_program, context)
    stamp_torch_level(torch_module)
    write_text_atomic(bundle.ir_path("torch"), print_module(torch_module))
    if "linalg" in levels:
        try:
            lower_torch_to_linalg(torch_module)
        except PipelineError as error:
            # The parent shows one line: keep MLIR's first diagnostic, which names the op.
            lines = str(error).splitlines()
            first = next((line for line in lines if line.startswith("error:")), lines[0])
            raise ScriptError(
                f"{script}: torch -> linalg lowering failed: {first[:400]} (capture with "
                "--levels torch to skip the linalg level, or try the other --decompose setting)"
            ) from error
        write_text_atomic(bundle.ir_path("linalg"), print_module(torch_module))


def main(argv: list[str] | None = None) -> int:
    """Capture into the staging folder; the exit code tells the parent whether it worked."""
    args = parse_args(argv)
    script = args.script.resolve()
    levels = tuple(level for level in args.levels.split(",") if level)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    spec = model_spec_of(script, args.entry, args.mode)
    bundle = RunBundle(args.staging)
    exported = export_program(spec, script)
    nodes = describe_nodes(exported, str(script.parent))
    signature = describe_signature(exported)
    write_ir(exported, args, levels)
    record = profile_model(
        spec, args.steps, args.warmup, args.staging / TRACE_FILE, args.staging / REFERENCE_FILE
    )
    fx_document = {
        "version": 1,
        "mode": spec.mode,
        "nodes": nodes,
        **signature,
        "grad_accumulation_order": record.grad_accumulation_order,
    }
    write_bytes_atomic(
        args.staging / FX_NODES_FILE, orjson.dumps(fx_document, option=orjson.OPT_INDENT_2)
    )
    bundle.write_manifest(
        fingerprint_files(
            bundle,
            Manifest(
                framework="torch",
                model=args.model_label or script.name,
                entry=args.entry,
                steps=args.steps,
                device="cpu",
                versions=package_versions(
                    {"torch": torch.__version__}, ("iree-base-compiler", "irprof")
                ),
                ir_levels=("torch", "linalg") if "linalg" in levels else ("torch",),
                trace_files=(TRACE_FILE, REFERENCE_FILE),
                options={
                    "warmup": args.warmup,
                    "decompose": args.decompose,
                    "threads": args.threads,
                    "mode": spec.mode,
                    "fx_nodes": FX_NODES_FILE,
                    "reference_trace": REFERENCE_FILE,
                    "overhead": record.overhead,
                },
            ),
        )
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ScriptError as error:
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        sys.exit(2)
