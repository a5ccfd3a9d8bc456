"""Child process of `irprof capture tf`; it and `tf_steps_runner` alone import TensorFlow and
xprof.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/runner.py`.
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
from tensorflow.python.grappler import tf_optimizer
from tensorflow.tsl.profiler.protobuf import profiler_options_pb2, xplane_pb2

from irprof.capture.entry import EntryError, load_entry, package_versions
from irprof.frameworks.tf.options import tracer_options_mismatch
from irprof.frameworks.tf.steps_runner import STEP_MARKER, profile

# `convert_function` returns tf_executor islands, a custom syntax only TensorFlow can parse; this
# pass unwraps them into plain generic `tf.*` ops without renaming, reordering or folding.
RAW_PIPELINE = "func.func(tf-executor-to-functional-conversion)"
STANDARD_PIPELINE = "tf-standard-pipeline"
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def resolve_model(entry_fn: Callable[..., Any], mode: str) -> tuple[Any, tuple[Any, ...]]:
    """Call the entry and return (tf.function, positional inputs)."""
    if "mode" in inspect.signature(entry_fn).parameters:
        produced = entry_fn(mode=mode)
    elif mode == "infer":
        produced = entry_fn()
    else:
        raise SystemExit(f"entry {entry_fn.__name__}() takes no `mode` argument; cannot run {mode}")
    if not (isinstance(produced, tuple) and len(produced) == 2):
        raise SystemExit("the entry must return (callable, example_inputs)")
    model, inputs = produced
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if isinstance(model, tf.keras.Model):
        keras_model = model

        # A Keras model is profiled through one tf.function so the IR and the run share names.
        @tf.function  # type: ignore[untyped-decorator]
        def call_model(*args: Any) -> Any:
            return keras_model(*args, training=False)

        return call_model, inputs
    if not hasattr(model, "get_concrete_function"):
        raise SystemExit("the entry must return a tf.function or a Keras model")
    return model, inputs


KERAS_STEP_FUNCTIONS = {"fit": "train_function", "predict": "predict_function"}


def keras_step(entry_fn: Callable[..., Any], mode: str) -> tuple[Any, tuple[Any, ...], Any]:
    """`--mode fit|predict`: (step, inputs, the concrete function Keras runs per batch).

    The entry returns (compiled Keras model, data); a step is one `model.fit(*data, epochs=1,
    verbose=0)` or `model.predict(data[0], verbose=0)` call, as users make it: Keras builds its
    own step function, with the XLA compilation it chooses (`jit_compile="auto"`). The entry
    gives one batch of data, so a step is one batch.
    """
    if "mode" not in inspect.signature(entry_fn).parameters:
        raise SystemExit(f"entry {entry_fn.__name__}() takes no `mode` argument; cannot run {mode}")
    produced = entry_fn(mode=mode)
    if not (isinstance(produced, tuple) and len(produced) == 2):
        raise SystemExit("the entry must return (compiled Keras model, data)")
    model, data = produced
    if not isinstance(model, tf.keras.Model):
        raise SystemExit(f"--mode {mode} needs a Keras model from the entry")
    data = tuple(data) if isinstance(data, (tuple, list)) else (data,)

    def step() -> Any:
        if mode == "fit":
            return model.fit(*data, epochs=1, verbose=0)
        return model.predict(data[0], verbose=0)

    step()  # Keras makes and traces its step function on the first call
    return step, (), traced_concrete(getattr(model, KERAS_STEP_FUNCTIONS[mode]), mode)


def traced_concrete(function: Any, mode: str) -> Any:
    """The concrete function a Keras step function traced: the function itself when it is a
    tf.function, else the tf.function it closes over (Keras wraps it in a Python function)."""
    candidates = [function]
    if inspect.isfunction(function):
        candidates += list(inspect.getclosurevars(function).nonlocals.values())
    for candidate in candidates:
        if isinstance(candidate, tf.types.experimental.PolymorphicFunction):
            # TF has no public list of the signatures a function traced.
            traced = candidate._list_all_concrete_functions()
            if traced:
                return traced[-1]
    raise SystemExit(f"Keras ran {mode} eagerly (run_eagerly=True?): no traced step function")


def xla_level(fn: Any, inputs: tuple[Any, ...]) -> str | None:
    """StableHLO of a `jit_compile=True` tf.function (XLA's compiler IR, TF node names as
    locations), or None when the profiled function is not one XLA compiles whole."""
    if not isinstance(fn, tf.types.experimental.PolymorphicFunction):
        return None
    if not getattr(fn, "_jit_compile", False):
        return None
    text: str = fn.experimental_get_compiler_ir(*inputs)(stage="stablehlo")
    return text


def optimized_graph(concrete: Any) -> Any:
    """The function's graph after grappler, every node pinned to the CPU as the runtime does."""
    graph_def = concrete.graph.as_graph_def()
    for node in graph_def.node:
        # oneDNN/remapper fusions only fire on nodes placed on the CPU.
        node.device = CPU_DEVICE
    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def)
    fetches = [t.op.name for t in concrete.outputs] + [
        op.name for op in concrete.graph.control_outputs
    ]
    meta.collection_def["train_op"].node_list.value.extend(fetches)
    return tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), meta)


def dump_ir(
    concrete: Any, workdir: Path, post_grappler: bool, xla: str | None = None
) -> dict[str, str]:
    """Write the IR levels; returns level -> file name relative to `workdir`."""
    ir_dir = workdir / "ir"
    ir_dir.mkdir(parents=True, exist_ok=True)
    raw = tf.mlir.experimental.convert_function(concrete, pass_pipeline="", show_debug_info=True)
    texts = {
        "tf": tf.mlir.experimental.run_pass_pipeline(raw, RAW_PIPELINE, show_debug_info=True),
        "tf-standard": tf.mlir.experimental.convert_function(
            concrete, pass_pipeline=STANDARD_PIPELINE, show_debug_info=True
        ),
    }
    graph = optimized_graph(concrete)
    if post_grappler:
        texts["post-grappler"] = tf.mlir.experimental.convert_graph_def(
            graph, pass_pipeline=RAW_PIPELINE, show_debug_info=True
        )
    if xla is not None:
        texts["xla"] = xla
    (workdir / "offline_grappler_graph.json").write_text(json.dumps(graph_nodes([graph])))
    written = {}
    for level, text in texts.items():
        path = ir_dir / f"{level}.raw.mlir"
        path.write_text(text)
        written[level] = str(path.relative_to(workdir))
    return written


def fused_op_names(node: Any) -> list[str]:
    """The ops a grappler-made node runs: a fused kernel's `fused_ops` (after its base op), or
    every op of the chain a `_UnaryOpsComposition` composes (`op_names`, innermost first)."""
    for attribute in ("fused_ops", "op_names"):
        if attribute in node.attr:
            return [x.decode() for x in node.attr[attribute].list.s]
    return []


def graph_nodes(graphs: list[Any]) -> dict[str, dict[str, Any]]:
    """Node name -> op type, fused ops and inputs, over one or more GraphDefs."""
    return {
        node.name: {
            "op": node.op,
            "fused_ops": fused_op_names(node),
            "inputs": list(node.input),
        }
        for graph in graphs
        for node in graph.node
    }


def executed_graph(dump_dir: Path, function: str) -> dict[str, Any]:
    """The graph the executor really ran, from TensorFlow's own dump (`TF_DUMP_GRAPH_PREFIX`).

    The runtime dumps each function's per-device partitions after its last rewrite
    (`*_partition_*.after_partition_passes.pbtxt`): grappler, oneDNN layout rewrites and
    constant folding are all applied, so it says which IR ops ran, were fused or were folded.
    Without the dump, offline grappler (`OptimizeGraph`) stands in for it.
    """
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    files = sorted(dump_dir.glob(f"{function}_partition_*.after_partition_passes.pbtxt"))
    graphs = [text_format.Parse(path.read_text(), graph_pb2.GraphDef()) for path in files]
    return {
        "source": "runtime dump after_partition_passes" if graphs else "offline grappler",
        "nodes": graph_nodes(graphs) if graphs else None,
    }


def find_xspace(logdir: Path) -> Path:
    """The one `.xplane.pb` the client wrote (it may appear a moment after the call returns)."""
    deadline = time.monotonic() + 10.0
    while True:
        found = sorted(logdir.rglob("*.xplane.pb"))
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise SystemExit(f"the profiler wrote no .xplane.pb under {logdir}")
        time.sleep(0.1)


def recorded_options(xspace_path: Path) -> tuple[dict[str, int], int]:
    """Tracer levels the profiler says it used, and the number of step markers it recorded."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(xspace_path.read_bytes())
    options: dict[str, int] = {}
    markers = 0
    for plane in space.planes:
        if plane.name == "Task Environment":
            for stat in plane.stats:
                if plane.stat_metadata[stat.metadata_id].name == "profile_options":
                    parsed = profiler_options_pb2.ProfileOptions()
                    parsed.ParseFromString(stat.bytes_value)
                    options = {
                        "host_tracer_level": parsed.host_tracer_level,
                        "python_tracer_level": parsed.python_tracer_level,
                        "device_tracer_level": parsed.device_tracer_level,
                    }
        marker_ids = {k for k, m in plane.event_metadata.items() if m.name == STEP_MARKER}
        markers += sum(e.metadata_id in marker_ids for line in plane.lines for e in line.events)
    return options, markers


def checked_window(logdir: Path, requested: dict[str, int], steps: int) -> dict[str, int]:
    """The tracer levels a window's XSpace recorded; refused unless they are the requested ones
    and it holds one step marker per step."""
    xspace = find_xspace(logdir)
    options, markers = recorded_options(xspace)
    mismatch = tracer_options_mismatch(requested, options, xspace.name)
    if mismatch is not None:
        raise SystemExit(mismatch)
    if markers != steps:
        raise SystemExit(f"{xspace.name}: {markers} step markers recorded, expected {steps}")
    return options


def onednn_enabled() -> bool:
    """Whether this TensorFlow build runs oneDNN kernels in this process."""
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


def configure_threads(threads: int) -> None:
    """`threads` intra-op threads and one inter-op thread (ops run one at a time), like the
    PyTorch and ONNX captures: an op's time then does not hinge on how many cores are free.
    Must run before TensorFlow's runtime starts (the first op or tensor)."""
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Everything the child does; returns the result record."""
    workdir = Path(spec["workdir"])
    script = Path(spec["script"])
    # Before the script is imported: it may create tensors at import, which starts the runtime.
    configure_threads(spec["threads"])
    try:
        factory = load_entry(script, spec["entry"], module_name=script.stem)
    except EntryError as error:
        raise SystemExit(str(error)) from error
    if spec["mode"] in KERAS_STEP_FUNCTIONS:
        fn, inputs, concrete = keras_step(factory, spec["mode"])
        xla = None
    else:
        fn, inputs = resolve_model(factory, spec["mode"])
        concrete = fn.get_concrete_function(*inputs)
        xla = xla_level(fn, inputs)
    ir_files = dump_ir(concrete, workdir, spec["post_grappler"], xla)
    if spec["eager"]:
        # Eager op-by-op execution: the trace holds `EagerLocalExecute: <Type>`, no node names.
        tf.config.run_functions_eagerly(True)
    # The client records its log directory in the trace (`repository_path`): a relative one
    # keeps machine paths out of bundles.
    os.chdir(workdir)
    logdir, reference_logdir = Path("logdir"), Path("logdir_reference")
    steps = profile(fn, inputs, spec, logdir, reference_logdir)
    options = checked_window(logdir, steps.timed_levels, spec["steps"])
    reference_options = (
        checked_window(reference_logdir, steps.reference_levels, steps.reference_steps)
        if steps.reference_levels is not None
        else None
    )
    function = concrete.name.decode() if isinstance(concrete.name, bytes) else concrete.name
    executed = executed_graph(Path(spec["graph_dump_dir"]), function)
    if executed["nodes"] is None:
        executed["nodes"] = json.loads((workdir / "offline_grappler_graph.json").read_text())
    (workdir / "runtime_graph.json").write_text(json.dumps(executed, indent=1))
    return {
        "versions": package_versions({"tensorflow": tf.__version__}, ("xprof", "keras")),
        "device": f"CPU ({platform.machine()}, {os.cpu_count()} cores)",
        "function": function,
        "ir_files": ir_files,
        "logdir": str(logdir),
        "recorded_options": options,
        "reference_logdir": str(reference_logdir) if reference_options is not None else None,
        "reference_options": reference_options,
        "reference_steps": steps.reference_steps,
        "step_markers": spec["steps"],
        "step_marker_name": STEP_MARKER,
        "warmup_step_s": steps.step_s,
        "overhead": steps.overhead,
        "onednn": onednn_enabled(),
        # irprof's own root too: an editable install is not always on sys.path.
        "sys_path": [p for p in sys.path if p] + [str(Path(__file__).resolve().parents[3])],
        # As this process's frames spell it: the parent leaves these frames out of locations.
        "own_code_dir": os.path.normpath(os.path.join(os.path.abspath(__file__), "..", "..", "..")),
    }


def main(argv: list[str]) -> int:
    """Entry of `python -m irprof.frameworks.tf.runner SPEC.json`."""
    if len(argv) != 1:
        print("usage: python -m irprof.frameworks.tf.runner SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text())
    result = run(spec)
    Path(spec["workdir"], "result.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
