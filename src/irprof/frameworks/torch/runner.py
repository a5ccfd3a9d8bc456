"""Child process of `irprof capture torch`; it and `torch_steps_runner` alone import torch.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/runner.py`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import torch
from iree.compiler import ir
from iree.compiler.extras.fx_importer import ContextCache, FxImporter, GraphNodeImporter

from irprof.bundle import Manifest, RunBundle, fingerprint_files
from irprof.capture.entry import (
    EntryError,
    accepts_mode,
    add_entry_options,
    load_entry,
    package_versions,
)
from irprof.capture.subprocess_run import ERROR_PREFIX  # the parent shows such lines as the error
from irprof.fileio import write_bytes_atomic, write_text_atomic
from irprof.frameworks.torch.decomposition import (
    NODE_TAG,
    DecompositionError,
    decompose_recorded,
)
from irprof.frameworks.torch.export_errors import export_failure
from irprof.frameworks.torch.locations import (
    FxNodeName,
    format_stack_trace,
    module_class_name,
    node_location,
    user_frames,
)
from irprof.frameworks.torch.lowering import (
    LINALG_STAGE,
    FailedOp,
    LoweringError,
    lower_file,
    stamp_torch_level,
)
from irprof.frameworks.torch.regions import inline_grad_regions, region_calls
from irprof.frameworks.torch.steps_runner import (
    MODES,
    ModelSpec,
    model_spec,
    profile_model,
)
from irprof.mlir.python_frames import SourceFrame, parse_stack_trace

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
        # Called with mode=MODE when it takes one, as by every capture; either way what it
        # returns decides (a dict with a loss and an optimizer can train).
        produced = factory(mode=mode) if accepts_mode(factory) else factory()
        return model_spec(produced, mode, f"{script}: {entry}()")
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


# torch's own package: its frames (`nn.Linear.forward`) are dropped from node locations, so
# each op is placed at the model code calling it (`user_frames`).
FRAMEWORK_DIRS = tuple(
    dict.fromkeys(
        str(p.parent) for p in (Path(torch.__file__).absolute(), Path(torch.__file__).resolve())
    )
)


def describe_nodes(program: torch.export.ExportedProgram, script_dir: str) -> list[dict[str, Any]]:
    """The exported (pre-decomposition) call nodes: what eager mode runs as one aten call each.

    Tags every node with its own name in `meta["custom"]`, which `run_decompositions` copies to
    the nodes a call is decomposed into, so each imported op can name the call it came from.
    A region left whole (autocast) is described by the calls it runs, each under the region's
    name, which its ops carry after decomposition (`regions.region_calls`).
    """
    roots = library_roots()
    described = []
    index = 0
    for node in (n for n in program.graph.nodes if n.op == "call_function"):
        node.meta["custom"] = {**node.meta.get("custom", {}), NODE_TAG: node.name}
        # def-use: a call that decomposition removes or merges (a no-op `to`) is absorbed by
        # its users, which is where its event's time goes
        inputs = [n.name for n in node.all_input_nodes if n.op == "call_function"]
        writes, aliases = aliasing(node)
        for call in list(region_calls(node)) or [node]:
            frames = user_frames(
                model_frames(call.meta.get("stack_trace")), script_dir, roots, FRAMEWORK_DIRS
            )
            stack = call.meta.get("nn_module_stack") or {}
            described.append(
                {
                    "index": index,
                    "name": node.name,
                    "target": str(call.target),
                    "modules": [[path, module_class_name(str(c))] for path, c in stack.values()],
                    "frames": [[f.file, f.line, f.function] for f in frames],
                    "inputs": inputs,
                    "writes": writes,
                    "aliases": aliases,
                }
            )
            index += 1
    return described


def aliasing(node: torch.fx.Node) -> tuple[list[str], str | None]:
    """What the call's schema says it writes in place and which input its result is a view of:
    call node names, "" for a value that is not one call's (a graph input, parameter or buffer,
    a list of tensors: taken as visible outside the program). None for no view; nothing for a
    call without a schema."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return [], None

    def name_of(position: int, argument: Any) -> str | None:
        value = node.args[position] if position < len(node.args) else node.kwargs.get(argument.name)
        if not isinstance(value, torch.fx.Node):
            return None
        return value.name if value.op == "call_function" else ""

    writes: list[str] = []
    sets: dict[frozenset[str], str] = {}
    for position, argument in enumerate(schema.arguments):
        info = argument.alias_info
        if info is None:
            continue
        named = name_of(position, argument)
        if info.is_write:
            # A list of tensors written in place (`_foreach_add_`) counts as visible outside.
            writes.append("" if named is None else named)
        if named is not None:
            sets.setdefault(frozenset(info.before_set), named)
    returned = schema.returns[0].alias_info if schema.returns else None
    viewed = None
    if returned is not None and not returned.is_write:
        viewed = sets.get(frozenset(returned.before_set))
    return writes, viewed


def module_aliases(model: torch.nn.Module) -> dict[str, str]:
    """Module path -> the first path of the same module object, for every path that names a
    module registered under more than one name (`self.dec = self.enc`). The export's
    `nn_module_stack` says which path a call went through; the profiler numbers module objects
    (`Linear_1`), so both paths of one object must count as one instance."""
    first: dict[int, str] = {}
    aliases: dict[str, str] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        canonical = first.setdefault(id(module), path)
        if canonical != path:
            aliases[path] = canonical
    return aliases


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
        if not node.meta.get("stack_trace"):
            continue
        raw = model_frames(node.meta["stack_trace"])
        if raw:
            node.meta["stack_trace"] = format_stack_trace(
                user_frames(raw, script_dir, roots, FRAMEWORK_DIRS)
            )
        else:  # irprof's frames only (a training loss torch recorded no frame of): none
            del node.meta["stack_trace"]


@dataclass(frozen=True)
class FrozenProgram:
    """What `FxImporter.import_frozen_program` reads of an ExportedProgram, with the value of
    every buffer in `state_dict`.

    The importer looks buffers up in `state_dict` only; torch.export keeps a non-persistent
    buffer (`register_buffer(..., persistent=False)`, BERT's `position_ids`) in `constants`
    instead, so the importer fails with "Could not find state mapping for buffer".
    """

    graph_signature: Any
    state_dict: dict[str, Any]
    constants: dict[str, Any]
    graph: Any


def frozen_program(program: torch.export.ExportedProgram) -> FrozenProgram:
    """`program`'s graph and signature with non-persistent buffers added to its state mapping,
    and state read inside a list argument turned into `get_attr` nodes (in place)."""
    state = dict(program.state_dict)
    constants = dict(program.constants)
    signature = program.graph_signature
    for buffer in signature.inputs_to_buffers.values():
        if buffer not in state and buffer in constants:
            state[buffer] = constants[buffer]
    values = {
        **{name: state[key] for name, key in signature.inputs_to_parameters.items()},
        **{name: state[key] for name, key in signature.inputs_to_buffers.items()},
        **{
            name: constants[key]
            for name, key in signature.inputs_to_lifted_tensor_constants.items()
            if key in constants
        },
    }
    _state_in_lists_as_attributes(program.graph_module, values)
    return FrozenProgram(signature, state, constants, program.graph)


def _state_in_lists_as_attributes(graph_module: Any, values: dict[str, Any]) -> None:
    """Replace each state placeholder that a call reads inside a list argument by a `get_attr`
    node of the same tensor.

    The importer replaces a state placeholder by the tensor itself; as a direct argument it
    becomes a literal, but inside a list (`aten.index.Tensor(table, [index])`: Swin's
    `relative_position_index` buffer) the importer accepts graph nodes only and fails with
    "Heterogeneous lists are not supported". A `get_attr` node is imported as the same literal,
    at the reading op's location, wherever it is used.
    """
    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "placeholder" or node.name not in values:
            continue
        in_list = any(
            item is node
            for user in node.users
            for argument in (*user.args, *user.kwargs.values())
            if isinstance(argument, (list, tuple))
            for item in argument
        )
        if not in_list:
            continue
        attribute = f"_irprof_state_{node.name}"
        graph_module.register_buffer(attribute, values[node.name].detach(), persistent=False)
        with graph.inserting_before(node):
            read = graph.get_attr(attribute)
        read.meta = dict(node.meta)
        node.replace_all_uses_with(read)
        graph.erase_node(node)


class ImportFailure(Exception):
    """The FX importer failed on one call node (named in the message, with its source line)."""


def _described(node: Any) -> str:
    frames = parse_stack_trace(node.meta.get("stack_trace"))
    where = f" at {frames[-1][0]}:{frames[-1][1]}" if frames else ""
    return f"FX node {node.name!r} ({node.target}{where})"


def import_program(program: torch.export.ExportedProgram, context: ir.Context) -> ir.Module:
    """Import `program` with FxImporter; every call node's ops get a NameLoc of the node.

    The importer asks for each call node's location before importing it, so the last node
    asked for is the one an importer error (an argument type it has no converter for, a
    complex scalar) comes from: `ImportFailure` names it. `NotImplementedError` (a construct
    the importer lacks) is raised as it is."""
    importing: list[Any] = [None]

    def locate(node: Any) -> ir.Location:
        importing[0] = node
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
    try:
        importer.import_frozen_program(frozen_program(program))
    except NotImplementedError:
        raise
    except Exception as error:  # the importer raises TypeError, KeyError, MLIRError, ...
        node = importing[0]
        at = f" on {_described(node)}" if node is not None else ""
        summary = (str(error).strip().splitlines() or [""])[0][:300]
        complex_args = [a for a in node.args if isinstance(a, complex)] if node is not None else []
        hint = (
            f" (its argument {complex_args[0]!r} is a complex scalar, which the importer has no "
            "literal for: make the factor a tensor, e.g. with torch.polar or torch.complex)"
            if complex_args
            else ""
        )
        raise ImportFailure(f"failed{at}: {type(error).__name__}: {summary}{hint}") from error
    return importer.module


def describe_signature(
    program: torch.export.ExportedProgram, model: torch.nn.Module
) -> dict[str, Any]:
    """The call nodes that read each parameter and those that produce the outputs.

    A training step's gradient accumulation into a parameter and the seed gradient of the loss
    are backward work with no forward op of their own; these name the calls they belong to.
    Parameters are keyed by identity under the name `model.named_parameters()` gives them (the
    name the gradient accumulation order uses): a tied weight (GPT-2's `wte.weight` is
    `lm_head.weight`) is one parameter with one AccumulateGrad, though export lists it under
    each of its names and may leave one of those placeholders unused.
    """
    canonical = {id(parameter): name for name, parameter in model.named_parameters()}
    parameter_of = {}
    for spec in program.graph_signature.input_specs:
        if spec.kind == torch.export.graph_signature.InputKind.PARAMETER and spec.target:
            tensor = model.get_parameter(spec.target)
            parameter_of[spec.arg.name] = canonical.get(id(tensor), spec.target)
    parameters: dict[str, list[str]] = {}
    outputs: list[str] = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in parameter_of:
            readers = parameters.setdefault(parameter_of[node.name], [])
            readers += [
                user.name
                for user in node.users
                if user.op == "call_function" and user.name not in readers
            ]
        elif node.op == "output":
            for arg in node.all_input_nodes:
                if arg.op == "call_function":
                    outputs.append(arg.name)
    return {"parameters": parameters, "outputs": outputs}


def returned_description(program: torch.export.ExportedProgram) -> str:
    """What the exported program returns when no call computes it: `None`, a constant, an
    input (a placeholder) unchanged."""
    inputs = {node.name for node in program.graph.nodes if node.op == "placeholder"}
    described = []
    for spec in program.graph_signature.output_specs:
        value = getattr(spec.arg, "value", None)
        name = getattr(spec.arg, "name", "")
        described.append(f"input {name!r}" if name in inputs else repr(value))
    return ", ".join(described) or "None"


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
    """`torch.export.export` of the spec's module in the grad mode its profiled steps run in
    (a no-grad region of an inference model is then ordinary code), the grad-mode regions left
    inlined (`regions`); its failures as one ScriptError."""
    try:
        with torch.set_grad_enabled(spec.mode == "train"):
            program = torch.export.export(
                spec.model, spec.inputs, spec.kwargs, dynamic_shapes=spec.dynamic_shapes
            )
    except Exception as error:  # torch.export raises many types; all mean "cannot export"
        raise ScriptError(
            f"{script}: torch.export could not export the model ({export_failure(error)})"
        ) from error
    inline_grad_regions(program)
    return program


@dataclass(frozen=True)
class WrittenIr:
    """What `write_ir` wrote: the levels, how the program was decomposed, the failed levels."""

    levels: tuple[str, ...]
    decomposition: dict[str, Any]
    failed_levels: list[dict[str, Any]]


def write_ir(
    program: torch.export.ExportedProgram, args: argparse.Namespace, levels: tuple[str, ...]
) -> WrittenIr:
    """Decompose, import and (with `linalg` in `levels`) lower; write each level's IR.

    A level whose lowering fails is listed with its stage and the ops the diagnostics name;
    the levels above it are kept, so what could be captured is profiled and annotated.
    """
    script = args.script.resolve()
    bundle = RunBundle(args.staging)
    lowered_program, decomposition = decompose_recorded(program, args.decompose)
    context = ir.Context()
    relativize_stack_traces(lowered_program, str(script.parent))
    try:
        torch_module = import_program(lowered_program, context)
    except NotImplementedError as error:  # the importer's word for a construct it lacks
        raise ScriptError(
            f"{args.script}: IREE's FX importer cannot import the exported program: {error} "
            "(control flow such as torch.cond or torch.while_loop has no torch-dialect form "
            "there; capture the branches as separate models)"
        ) from error
    except ImportFailure as error:
        raise ScriptError(f"{args.script}: IREE's FX importer {error}") from error
    stamp_torch_level(torch_module)
    write_text_atomic(bundle.ir_path("torch"), print_module(torch_module))
    if "linalg" not in levels:
        return WrittenIr(("torch",), decomposition, [])
    try:
        lower_file(bundle.ir_path("torch"), bundle.ir_path("linalg"))
    except LoweringError as error:
        failed = error.failed_ops or (FailedOp("", "", "", str(error).splitlines()[0][:400]),)
        failure = {
            "level": "linalg",
            "stage": LINALG_STAGE,
            "op": failed[0].target,
            "node": failed[0].node,
            "source": failed[0].source,
            "error": failed[0].message,
            "ops": [dataclasses.asdict(op) for op in failed],
        }
        return WrittenIr(("torch",), decomposition, [failure])
    return WrittenIr(("torch", "linalg"), decomposition, [])


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
    signature = describe_signature(exported, spec.model)
    if not signature["outputs"]:
        raise ScriptError(
            f"{script}: the model returns nothing it computes (forward returned "
            f"{returned_description(exported)}): every call is dead code, which the IR drops and "
            "no op could be joined to; return the tensor(s) to profile"
        )
    written = write_ir(exported, args, levels)
    record = profile_model(
        spec, args.steps, args.warmup, args.staging / TRACE_FILE, args.staging / REFERENCE_FILE
    )
    fx_document = {
        "version": 1,
        "mode": spec.mode,
        "nodes": nodes,
        **signature,
        "grad_accumulation_order": record.grad_accumulation_order,
        "module_aliases": module_aliases(spec.model),
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
                ir_levels=written.levels,
                trace_files=(TRACE_FILE, REFERENCE_FILE),
                options={
                    "warmup": args.warmup,
                    "decompose": args.decompose,
                    "decomposition": written.decomposition,
                    "failed_levels": written.failed_levels,
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
    except (ScriptError, DecompositionError) as error:
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        sys.exit(2)
