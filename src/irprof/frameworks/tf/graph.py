"""The IR side of the TF join: ops by runtime name, call graph, fused-kernel chains.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/graph.py`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from iree.compiler import ir

from irprof.correlate.training import DefUse
from irprof.errors import CorrelationError
from irprof.mlir.keys import split_function_suffix
from irprof.mlir.op_index import OpIndex, OpInfo, derive_op_infos

CALL_OPS = frozenset({"tf.StatefulPartitionedCall", "tf.PartitionedCall", "tf.LegacyCall"})
# Function-valued attribute of a control-flow op -> the name its lowered, inlined call gets.
BRANCH_ATTRIBUTES = {
    "then_branch": "then",
    "else_branch": "else",
    "cond": "cond",
    "body": "body",
    "branches": "branch",  # an array: branch0, branch1, ...
}
INLINE_UNIQUIFIER = re.compile(r"^_\d+$")
# Runtime nodes named after another node under a prefix: grappler's constant folding anchors
# control dependencies on `ConstantFoldingCtrl/<node>_<k>`, and function inlining passes a call's
# inputs and outputs through `Func/<call>/input/_<k>` and `Func/<call>/output/_<k>` Identities.
PLUMBING_PREFIXES = ("ConstantFoldingCtrl/", "Func/")
KERNEL_PREFIXES = ("_MklNative", "_Mkl", "_")  # longest first
MAX_CHAIN = 6
ARGUMENT_NAME_INVALID = re.compile(r"[^a-z0-9_]")


def argument_node_name(name: str) -> str:
    """The `_Arg` node name TF gives a graph input called `name`: lower case, every character
    that is not a letter or digit an underscore (`NormalizeName` in TF's `graph_to_functiondef`):
    `mobilenetv2_0.35/x` -> `mobilenetv2_0_35_x`."""
    return ARGUMENT_NAME_INVALID.sub("_", name.lower())


def base_kernel_type(kernel_type: str) -> str:
    """`_MklNativeFusedConv2D` -> `FusedConv2D`, `_MklMatMul` -> `MatMul`."""
    for prefix in KERNEL_PREFIXES:
        if kernel_type.startswith(prefix):
            return kernel_type[len(prefix) :]
    return kernel_type


@dataclass
class TfOpIndex(OpIndex):
    """An `OpIndex` of a TF-dialect level with what the join needs: runtime names, types,
    functions, producers."""

    infos: list[OpInfo]
    position_of: dict[ir.Operation, int]
    function_of: list[str]
    by_name: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    by_function_node: dict[tuple[str, str], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    callee_of: dict[int, str] = field(default_factory=dict)
    branches_of: dict[int, dict[str, str]] = field(default_factory=dict)  # label -> function
    branch_of_function: dict[str, tuple[int, str]] = field(default_factory=dict)
    placeholders: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    by_signature: dict[tuple[str, str, tuple[int, ...]], list[int]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # The ops above die with their module: the view keeps it alive.
    module: ir.Module | ir.Operation | None = None
    entry_function: int | None = None

    def __post_init__(self) -> None:
        OpIndex.__init__(self, [(info.op, info.key) for info in self.infos])

    @staticmethod
    def of(module: ir.Module | ir.Operation) -> TfOpIndex:
        """Index every op of `module`."""
        infos = derive_op_infos(module)
        position_of = {info.op: i for i, info in enumerate(infos)}
        function_of = [""] * len(infos)
        view = TfOpIndex(infos, position_of, function_of, module=module)
        current = ""
        for position, info in enumerate(infos):
            attributes = info.op.attributes
            if info.op_name == "func.func":
                current = ir.StringAttr(attributes["sym_name"]).value
                if "tf.entry_function" in attributes or view.entry_function is None:
                    view.entry_function = position
                continue
            function_of[position] = current
            if info.op_name == "tf.Placeholder" and info.keys.name:
                view.placeholders[argument_node_name(info.keys.name)].append(position)
            if info.op_name in CALL_OPS and "f" in attributes:
                view.callee_of[position] = ir.FlatSymbolRefAttr(attributes["f"]).value
            branches = _branches(attributes)
            if branches:
                view.branches_of[position] = branches
                for label, function in branches.items():
                    view.branch_of_function.setdefault(function, (position, label))
            signature = view.argument_signature(position)
            if signature is not None:
                view.by_signature[signature].append(position)
            for name in info.keys.names:
                view.by_name[name].append(position)
                # The `@function` suffix holds the FunctionDef's name, which the importer may
                # have uniquified as a symbol (`hidden_98` -> `hidden_980`): key on the symbol.
                view.by_function_node[(current, split_function_suffix(name)[0])].append(position)
        return view

    def entry_name(self) -> str:
        """Symbol name of the entry function."""
        if self.entry_function is None:
            return ""
        op = self.infos[self.entry_function].op
        name: str = ir.StringAttr(op.attributes["sym_name"]).value
        return name

    def entry_argument_names(self) -> dict[tuple[str, int], str]:
        """(entry function, argument number) -> the runtime's `_Arg` node name for it, from the
        function's `tf.entry_function` `inputs` list (empty when it has none)."""
        if self.entry_function is None:
            return {}
        attributes = self.infos[self.entry_function].op.attributes
        if "tf.entry_function" not in attributes:
            return {}
        entry = ir.DictAttr(attributes["tf.entry_function"])
        if "inputs" not in entry:
            return {}
        inputs = ir.StringAttr(entry["inputs"]).value
        function = self.entry_name()
        return {(function, i): name for i, name in enumerate(inputs.split(",")) if name}

    def op_type(self, position: int) -> str:
        """`Conv2D` for `tf.Conv2D`."""
        return self.infos[position].op_name.removeprefix("tf.")

    @cached_property
    def def_use(self) -> DefUse:
        """Def-use edges between this level's ops."""
        return DefUse(self.infos, self.position_of)

    def producer(self, position: int, operand: int) -> int | None:
        """Position of the op defining operand `operand` of the op at `position`."""
        return self.def_use.producer(position, operand)

    def argument_signature(self, position: int) -> tuple[str, str, tuple[int, ...]] | None:
        """(function, op name, argument numbers) of an op reading only function arguments.

        Two such ops with one signature compute the same value; CSE keeps one of them.
        """
        op = self.infos[position].op
        numbers = []
        for operand in op.operands:
            if not isinstance(operand, ir.BlockArgument):
                return None
            numbers.append(operand.arg_number)
        if not numbers:
            return None
        return (self.function_of[position], self.infos[position].op_name, tuple(numbers))

    def resolve(self, node: str, function: str | None = None) -> list[int]:
        """Positions of the ops a runtime node name designates (see module docstring)."""
        if function is None:
            found = self.by_name.get(node)
            if found:
                return found
            scope = self.entry_name()
        else:
            found = self.by_function_node.get((function, node))
            if found:
                return found
            scope = function
        # `<call node>/<rest>`: the runtime inlined the callee under the call node's name.
        parts = node.split("/")
        for cut in range(1, len(parts)):
            caller = "/".join(parts[:cut])
            for call in self.by_function_node.get((scope, caller), []):
                callee = self.callee_of.get(call)
                if callee is not None:
                    inner = self.resolve("/".join(parts[cut:]), callee)
                    if inner:
                        return inner
                branch = self.branches_of.get(call, {}).get(parts[cut])
                rest = parts[cut + 1 :]
                if rest and INLINE_UNIQUIFIER.match(rest[0]):
                    rest = rest[1:]
                if branch is not None and rest:
                    inner = self.resolve("/".join(rest), branch)
                    if inner:
                        return inner
                inner = self._in_branch_functions(call, node)
                if inner:
                    return inner
        return []

    def _in_branch_functions(self, call: int, node: str) -> list[int]:
        """XLA names a node of a While's body by its full name under the While's scope
        (`seq/lstm/while/lstm_cell/MatMul`), no branch label: the body function's op of that
        name, when the node is not one of the enclosing function's."""
        for function in self.branches_of.get(call, {}).values():
            inner = self.by_function_node.get((function, node))
            if inner:
                return inner
        return []

    def control_flow_owner(self, node: str) -> int | None:
        """The If/While/Case op whose lowering created runtime node `node` (a Switch, Merge,
        pivot or inlined-call Identity in the op's name scope), or None."""
        for prefix in PLUMBING_PREFIXES:
            node = node.removeprefix(prefix)
        parts = node.split("/")
        for cut in range(len(parts) - 1, 0, -1):
            for position in self.resolve("/".join(parts[:cut])):
                if position in self.branches_of:
                    return position
        return None


def _branches(attributes: ir.OpAttributeMap) -> dict[str, str]:
    """Runtime label -> function of a control-flow op's function-valued attributes."""
    found: dict[str, str] = {}
    for name, label in BRANCH_ATTRIBUTES.items():
        if name not in attributes:
            continue
        value = attributes[name]
        if isinstance(value, ir.FlatSymbolRefAttr):
            found[label] = value.value
        elif isinstance(value, ir.ArrayAttr):
            for index, item in enumerate(value):
                if isinstance(item, ir.FlatSymbolRefAttr):
                    found[f"{label}{index}"] = item.value
    return found


def _producer_chain(view: TfOpIndex, named: int, base: str) -> list[int]:
    """From the named op, follow operand 0 back to an op of type `base`; base first."""
    chain = [named]
    current: int | None = named
    while current is not None and len(chain) <= MAX_CHAIN:
        if view.op_type(current) == base:
            return chain[::-1]
        current = view.producer(current, 0)
        if current is not None:
            chain.append(current)
    return []


def _bias_grad_siblings(view: TfOpIndex, named: int) -> list[int]:
    """Conv2DBackpropFilter + the BiasAddGrad reading the same output gradient (operand 2)."""
    gradient = view.producer(named, 2)
    if gradient is None:
        return [named]
    siblings = [
        position
        for position, info in enumerate(view.infos)
        if info.op_name == "tf.BiasAddGrad" and view.producer(position, 0) == gradient
    ]
    return [named, *siblings]


FusionRule = Callable[[TfOpIndex, int], list[int]]
# Kernel family (type without `_Mkl*`/`_` prefix) -> ops of the fused chain, base op first.
FUSION_RULES: dict[str, FusionRule] = {
    "FusedConv2D": lambda v, p: _producer_chain(v, p, "Conv2D"),
    "FusedConv3D": lambda v, p: _producer_chain(v, p, "Conv3D"),
    "FusedDepthwiseConv2dNative": lambda v, p: _producer_chain(v, p, "DepthwiseConv2dNative"),
    "FusedMatMul": lambda v, p: _producer_chain(v, p, "MatMul"),
    "FusedBatchMatMulV2": lambda v, p: _producer_chain(v, p, "BatchMatMulV2"),
    "Conv2DBackpropFilterWithBias": _bias_grad_siblings,
}


def fused_chain(view: TfOpIndex, named: int, kernel_type: str) -> list[int]:
    """The ops one kernel event covers; `[named]` unless the kernel fuses a chain."""
    family = base_kernel_type(kernel_type)
    rule = FUSION_RULES.get(family)
    # Post-grappler IR already holds the fused op (`tf._FusedConv2D`): it is the whole chain.
    if rule is None or base_kernel_type(view.op_type(named)) == family:
        return [named]
    return rule(view, named) or [named]


def share_time(duration: int, members: int, rule: str) -> list[int]:
    """Split one fused event's duration over its chain (base op first); shares sum to it."""
    if rule == "base":
        return [duration] + [0] * (members - 1)
    if rule not in ("default", "equal"):
        raise CorrelationError(f"unknown fused_time_rule {rule!r}; known: default, equal, base")
    share, rest = divmod(duration, members)
    return [share + rest] + [share] * (members - 1)
