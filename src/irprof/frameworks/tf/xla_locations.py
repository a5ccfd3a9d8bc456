"""The `xla` level's ops take the call-site chains of the TF ops they were compiled from.

`experimental_get_compiler_ir(stage="stablehlo")` locates each op by XLA's metadata: the TF node
name and the one frame TF recorded when it created the node, inside TensorFlow itself
(`fused["model/conv/Conv2D", "<sys.path>/tensorflow/python/framework/ops.py":1221:0]`), so every
op of the level had that same frame and none of the model's lines. The `tf` level holds the
node's whole chain; an op of the `xla` level whose location is exactly a node name and one
frame, and whose node the `tf` level has, takes that op's location: the same name (correlation
joins by it), the model's frames, and the node's type (`"Conv2D:"`) as the `tf` level shows it.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.mlir.op_index import derive_op_infos


def borrow_tf_locations(xla: ir.Module, tf: ir.Module) -> int:
    """Give each `xla` op located by a bare node name and one frame the location of the `tf`
    op of that node (the first, in walk order); returns how many ops changed."""
    chains: dict[str, ir.Location] = {}
    for info in derive_op_infos(tf):
        name = info.keys.name
        if name and name not in chains:
            chains[name] = info.op.location
    changed = 0
    for info in derive_op_infos(xla):
        node = _node_of(info.op.location)
        if node is not None and node in chains:
            info.op.operation.location = chains[node]
            changed += 1
    return changed


def _node_of(location: ir.Location) -> str | None:
    """The node name of `fused[NameLoc(node), FileLineColLoc]` (XLA's metadata), else None."""
    if not isinstance(location, ir.FusedLoc):
        return None
    parts = list(location.locations)
    if len(parts) != 2 or not isinstance(parts[1], ir.FileLineColLoc):
        return None
    name = parts[0]
    if not isinstance(name, ir.NameLoc) or not isinstance(name.child_loc, ir.UnknownLoc):
        return None
    return str(name.name_str)
