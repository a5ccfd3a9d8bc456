"""Child process of `irprof capture onnx`; it alone imports onnx, onnxruntime and the importer.

It names every node (ORT's events and the importer's locations both use node names), runs the
model under ORT's profiler (CPU execution provider) for warm-up plus profiled runs, saves ORT's
optimized graph, imports the model to MLIR with locations, and writes the bundle. See
docs/onnx.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]  # ships no stubs or py.typed
import orjson
from iree.compiler import ir
from iree.compiler.extras import onnx_importer

from irprof.bundle import Manifest, RunBundle, file_fingerprint, fingerprint_files
from irprof.capture.entry import EntryError, load_entry, package_versions
from irprof.capture.subprocess_run import ERROR_PREFIX  # the parent shows such lines as the error
from irprof.errors import UsageError
from irprof.fileio import write_bytes_atomic, write_text_atomic
from irprof.frameworks.onnx.index_inputs import index_bounds
from irprof.frameworks.onnx.inputs import (
    INTEGER_HIGH,
    InputSpec,
    npz_inputs,
    parse_dims,
    random_inputs,
)
from irprof.frameworks.onnx.paths import (
    FULL_TRACE_FILE,
    GRAPHS_FILE,
    GRAPHS_FORMAT,
    GRAPHS_VERSION,
    LEVEL,
    OPTIMIZED_MODEL,
    SOURCE_MODEL,
    TRACE_FILE,
)
from irprof.frameworks.onnx.subgraphs import node_subgraphs
from irprof.frameworks.onnx.torch_export import stamp_torch_export_locations

OPTIMIZATION_LEVELS = {
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}
RUN_EVENT = "model_run"


class RunnerError(Exception):
    """The model, its inputs or ORT's run cannot be used; the message names what and the fix."""


def load_model(path: Path, entry: str) -> onnx.ModelProto:
    """The model of an .onnx file, or what a script's `entry()` returns (a ModelProto)."""
    if path.suffix == ".py":
        try:
            built = load_entry(path, entry, module_name=f"irprof_onnx_{path.stem}")()
        except EntryError as error:
            raise RunnerError(str(error)) from error
        if not isinstance(built, onnx.ModelProto):
            raise RunnerError(
                f"{path}: {entry}() returned {type(built).__name__}, not an onnx.ModelProto"
            )
        return built
    try:
        return onnx.load(str(path))
    except Exception as error:  # onnx raises DecodeError, ValueError, OSError...
        raise RunnerError(f"{path}: not a readable ONNX model ({error})") from error


def name_nodes(graph: onnx.GraphProto, taken: set[str]) -> list[str]:
    """Give every node without a name, or with one an earlier node took, a unique name
    (`<op type>_<position>`), in this graph and its subgraphs; returns the names given."""
    stamped: list[str] = []
    for position, node in enumerate(graph.node):
        if not node.name or node.name in taken:
            base = f"{node.name or node.op_type}_{position}"
            name, suffix = base, 1
            while name in taken:
                name, suffix = f"{base}_{suffix}", suffix + 1
            node.name = name
            stamped.append(name)
        taken.add(node.name)
        for _, subgraph in node_subgraphs(node):
            stamped += name_nodes(subgraph, taken)
    return stamped


def input_specs(graph: onnx.GraphProto) -> list[InputSpec]:
    """The graph's real inputs (initializers listed as inputs are weights, not fed); an integer
    input that indexes a table takes random values below its size (`index_inputs.py`)."""
    weights = {init.name for init in graph.initializer}
    bounds = index_bounds(graph)
    specs = []
    for value in graph.input:
        if value.name in weights:
            continue
        tensor = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            raise RunnerError(f"input {value.name!r} is not a tensor; give --inputs FILE.npz")
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name
        dims: list[int | str | None] = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value"):
                dims.append(int(dim.dim_value))
            else:
                dims.append(dim.dim_param or None)
        high = min(INTEGER_HIGH, bounds.get(value.name, INTEGER_HIGH))
        specs.append(InputSpec(value.name, dtype, tuple(dims), high))
    return specs


def output_bytes(model: onnx.ModelProto, feeds: dict[str, Any]) -> dict[str, int]:
    """Node name -> bytes of its outputs at the fed shapes (ONNX shape inference; nodes whose
    outputs stay unknown are left out)."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for value in fixed.graph.input:
        if value.name in feeds:
            shape = value.type.tensor_type.shape
            shape.ClearField("dim")
            for size in feeds[value.name].shape:
                shape.dim.add().dim_value = int(size)
    try:
        inferred = onnx.shape_inference.infer_shapes(fixed, data_prop=True)
    except Exception:  # inference is best effort: sizes only weight shares
        return {}
    sizes: dict[str, int] = {}
    graph = inferred.graph
    for value in (*graph.value_info, *graph.output):
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        if tensor.elem_type and all(d >= 0 for d in dims) and tensor.HasField("shape"):
            itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).itemsize
            sizes[value.name] = int(np.prod(dims, dtype=np.int64)) * itemsize
    found: dict[str, int] = {}
    for node in graph.node:
        known = [sizes[name] for name in node.output if name in sizes]
        if known:
            found[node.name] = sum(known)
    return found


def attribute_digest(node: onnx.NodeProto) -> str:
    """A digest of the node's attributes: two nodes of one op type on the same inputs with the
    same digest compute the same tensors (ORT's common-subexpression elimination keeps one)."""
    data = b"".join(attribute.SerializeToString(deterministic=True) for attribute in node.attribute)
    return hashlib.sha256(data).hexdigest()[:16]


def graph_record(graph: onnx.GraphProto, sizes: dict[str, int]) -> dict[str, Any]:
    """One graph's structure for `ir/onnx.graphs.json` (`frameworks/onnx/graph.py` reads it),
    its nodes' subgraphs (`If` branches, `Loop` and `Scan` bodies) included."""
    return {
        "name": graph.name,
        "inputs": [value.name for value in graph.input],
        "initializers": [init.name for init in graph.initializer],
        "outputs": [value.name for value in graph.output],
        "nodes": [
            {
                "name": node.name,
                "op_type": node.op_type,
                "domain": node.domain,
                "inputs": list(node.input),
                "outputs": list(node.output),
                "attributes": attribute_digest(node),
                **({"output_bytes": sizes[node.name]} if node.name in sizes else {}),
            }
            for node in graph.node
        ],
        "subgraphs": [
            {"owner": node.name, "attribute": attribute, "graph": graph_record(sub, sizes)}
            for node in graph.node
            for attribute, sub in node_subgraphs(node)
        ],
    }


def profile_model(
    model_path: Path, optimized_path: Path, feeds: dict[str, Any], args: argparse.Namespace
) -> Path:
    """Run the model under ORT's profiler: warm-up and profiled runs in one session."""
    options = ort.SessionOptions()
    options.enable_profiling = True
    work = Path(tempfile.mkdtemp(prefix="irprof-ort-"))
    options.profile_file_prefix = str(work / "onnxruntime")
    options.optimized_model_filepath = str(optimized_path)
    options.graph_optimization_level = OPTIMIZATION_LEVELS[args.optimization]
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # ORT warns on every optimized-model save
    try:
        session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        for _ in range(args.warmup + args.steps):
            session.run(None, feeds)
        written = Path(session.end_profiling())
    except Exception as error:  # ORT's errors are plain RuntimeErrors / its own Fail classes
        shutil.rmtree(work, ignore_errors=True)
        raise RunnerError(f"{args.model}: ONNX Runtime failed: {error}") from error
    return written


def split_profile(full: Path, profiled: Path, warmup: int, runs: int) -> int:
    """Write the events of the profiled runs (from the first profiled `model_run` on) to
    `profiled`; returns that run's start in ns. The full profile stays as ORT wrote it."""
    events = orjson.loads(full.read_bytes())
    starts = sorted(int(e["ts"]) for e in events if e.get("name") == RUN_EVENT)
    if len(starts) != runs:
        raise RunnerError(f"{full}: {len(starts)} {RUN_EVENT} events for {runs} runs")
    boundary = starts[warmup]
    kept = [orjson.dumps(event) for event in events if int(event.get("ts", -1)) >= boundary]
    write_bytes_atomic(profiled, b"[\n" + b",\n".join(kept) + b"\n]\n")
    return boundary * 1000


def import_mlir(model: onnx.ModelProto) -> str:
    """The model as torch-dialect MLIR (`torch.operator "onnx.*"`), each op located by its
    node's name (the importer's `Location.name(node.name)`; with the module path and Python
    frames of a torch.onnx export, see `torch_export.py`), printed with locations."""
    inferred = onnx.shape_inference.infer_shapes(model)
    context = ir.Context()
    info = onnx_importer.ModelInfo(inferred)
    module = info.create_module(context=context).operation
    importer = onnx_importer.NodeImporter.define_function(info.main_graph, module)
    importer.import_all()
    module.verify()
    stamp_constant_nodes(module, model.graph)
    stamp_torch_export_locations(module, model.graph)
    return str(module.get_asm(enable_debug_info=True))


def describe_type(value_type: onnx.TypeProto) -> str:
    """`sequence of map(int64 -> tensor(float))`: an ONNX value type in words."""
    kind = value_type.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({onnx.helper.tensor_dtype_to_np_dtype(value_type.tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"sequence of {describe_type(value_type.sequence_type.elem_type)}"
    if kind == "map_type":
        key = onnx.helper.tensor_dtype_to_np_dtype(value_type.map_type.key_type)
        return f"map({key} -> {describe_type(value_type.map_type.value_type)})"
    if kind == "optional_type":
        return f"optional {describe_type(value_type.optional_type.elem_type)}"
    return kind.removesuffix("_type").replace("_", " ") if kind else "untyped"


def non_tensor_values(graph: onnx.GraphProto, limit: int = 3) -> list[str]:
    """The graph's inputs, outputs and typed values that are not tensors (what the importer,
    which takes tensors only, fails on), each with the node that makes it."""
    maker = {output: node for node in graph.node for output in node.output}
    found: list[str] = []
    for role, values in (
        ("input", graph.input),
        ("output", graph.output),
        ("value", graph.value_info),
    ):
        for value in values:
            if value.type.WhichOneof("value") in ("tensor_type", None):
                continue
            node = maker.get(value.name)
            made = f", made by {node.op_type} node {node.name!r}" if node is not None else ""
            found.append(f"{role} {value.name!r} ({describe_type(value.type)}{made})")
    return found[:limit] + ([f"{len(found) - limit} more"] if len(found) > limit else [])


def constant_outputs(graph: onnx.GraphProto) -> dict[str, str]:
    """Output tensor -> name of the `Constant` node making it, in `graph` and its subgraphs."""
    found: dict[str, str] = {}
    for node in graph.node:
        if node.op_type == "Constant" and not node.domain and len(node.output) == 1:
            found[node.output[0]] = node.name
        for _, subgraph in node_subgraphs(node):
            found.update(constant_outputs(subgraph))
    return found


def stamp_constant_nodes(module: ir.Operation, graph: onnx.GraphProto) -> int:
    """Locate the ops of `Constant` nodes by the node's name, as every other node's op is.

    The importer turns a `Constant` node with a `value` into an initializer located by its
    output tensor's name; the stamp puts the node's name outside it (`loc("node"("tensor"))`).
    """
    outputs = constant_outputs(graph)
    stamped = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal stamped
        location = op.location
        try:
            tensor = str(location.name_str)
        except (AttributeError, ValueError, TypeError):  # not a NameLoc
            return ir.WalkResult.ADVANCE
        if op.name == "torch.operator" and tensor in outputs:
            op.location = ir.Location.name(outputs[tensor], childLoc=location, context=op.context)
            stamped += 1
        return ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return stamped


def run(args: argparse.Namespace) -> None:
    """Capture into the staging folder."""
    staging: Path = args.staging
    model = load_model(args.model, args.entry)
    stamped = name_nodes(model.graph, set())
    (staging / "ir").mkdir(parents=True, exist_ok=True)
    (staging / "trace").mkdir(exist_ok=True)
    source_path = staging / SOURCE_MODEL
    onnx.save(model, str(source_path))
    specs = input_specs(model.graph)
    try:
        if args.inputs:
            feeds, defaulted = npz_inputs(Path(args.inputs), specs), list[str]()
        else:
            feeds, defaulted = random_inputs(specs, parse_dims(args.dim), args.seed)
    except UsageError as error:
        raise RunnerError(str(error)) from error
    optimized_path = staging / OPTIMIZED_MODEL
    written = profile_model(source_path, optimized_path, feeds, args)
    shutil.move(str(written), staging / FULL_TRACE_FILE)
    shutil.rmtree(written.parent, ignore_errors=True)
    profiled_from_ns = split_profile(
        staging / FULL_TRACE_FILE, staging / TRACE_FILE, args.warmup, args.warmup + args.steps
    )
    try:
        text = import_mlir(model)
    except Exception as error:  # the importer raises OnnxImportError, MLIRError, ValueError
        values = non_tensor_values(model.graph)
        why = (
            f"; it takes tensors only, and the model has {', '.join(values)} (export the model "
            "with tensor outputs, e.g. skl2onnx's options={'zipmap': False})"
            if values
            else ""
        )
        raise RunnerError(
            f"{args.model}: iree-import-onnx could not import it: {error}{why}"
        ) from error
    write_text_atomic(staging / f"ir/{LEVEL}.mlir", text)
    optimized = onnx.load(str(optimized_path), load_external_data=False)
    document = {
        "format": GRAPHS_FORMAT,
        "version": GRAPHS_VERSION,
        "source": graph_record(model.graph, output_bytes(model, feeds)),
        "optimized": graph_record(optimized.graph, {}),
    }
    write_bytes_atomic(staging / GRAPHS_FILE, orjson.dumps(document, option=orjson.OPT_INDENT_2))
    bundle = RunBundle(staging)
    manifest = Manifest(
        framework="onnx",
        model=args.model_label or args.model.name,
        entry=model.graph.name or args.entry,
        steps=args.steps,
        device="onnxruntime CPUExecutionProvider",
        versions=package_versions(
            {"onnx": onnx.__version__, "onnxruntime": ort.__version__},
            ("iree-base-compiler", "irprof"),
        ),
        ir_levels=(LEVEL,),
        trace_files=(TRACE_FILE, FULL_TRACE_FILE),
        options={
            "warmup": args.warmup,
            "threads": args.threads,
            "optimization": args.optimization,
            "inputs": "npz" if args.inputs else f"random (seed {args.seed})",
            "signature": [spec.render() for spec in specs],
            "fed_shapes": {name: list(array.shape) for name, array in feeds.items()},
            "dims_defaulted_to_1": defaulted,
            "named_nodes": len(stamped),
            "profiled_from_ns": profiled_from_ns,
            "source_model": SOURCE_MODEL,
            "optimized_model": OPTIMIZED_MODEL,
            "runtime_graph": GRAPHS_FILE,
        },
    )
    manifest = fingerprint_files(bundle, manifest)
    # The two models are not levels or traces: fingerprinted by name, as IREE's regions are.
    models = {name: file_fingerprint(staging / name) for name in (SOURCE_MODEL, OPTIMIZED_MODEL)}
    bundle.write_manifest(
        dataclasses.replace(manifest, fingerprints={**manifest.fingerprints, **models})
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The child's command line (see `frameworks/onnx/capture.runner_command`)."""
    parser = argparse.ArgumentParser(prog="irprof.frameworks.onnx.runner")
    parser.add_argument("model", type=Path)
    parser.add_argument("staging", type=Path)
    parser.add_argument("--entry", default="irprof_model")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--optimization", choices=tuple(OPTIMIZATION_LEVELS), default="all")
    parser.add_argument("--dim", action="append", default=[])
    parser.add_argument("--inputs", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-label", default="")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Capture; the exit code tells the parent whether it worked."""
    args = parse_args(argv)
    try:
        run(args)
    except RunnerError as error:
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
