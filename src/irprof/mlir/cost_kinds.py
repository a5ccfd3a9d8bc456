"""Op kinds by cost rule: which ops are matrix products, convolutions, reductions, copies,
views... named by the last component of the op name (`tf.MatMul` -> `matmul`, `torch.aten.
add.Tensor` -> `add`), the same across TF, torch, StableHLO, TOSA and linalg."""

from __future__ import annotations

# FLOPs per input element of the ops that are a fixed recipe per element.
PER_ELEMENT = {
    "softmax": 5, "_softmax": 5, "log_softmax": 5, "_log_softmax": 5, "logsoftmax": 5,
    "sparsesoftmaxcrossentropywithlogits": 6, "softmaxcrossentropywithlogits": 6,
    "native_layer_norm": 8, "layer_norm": 8, "layernorm": 8, "group_norm": 8,
    "native_group_norm": 8, "instance_norm": 8, "rms_norm": 4, "batch_norm": 4,
    "native_batch_norm": 4, "_native_batch_norm_legit_no_training": 4, "fusedbatchnorm": 4,
    "fusedbatchnormv3": 4, "batch_norm_inference": 2, "batch_norm_training": 6,
}  # fmt: skip
MATMUL_KINDS = frozenset(
    {"matmul", "batchmatmul", "batchmatmulv2", "batchmatmulv3", "_fusedmatmul", "mm", "bmm",
     "addmm", "linear", "batch_matmul", "matvec", "baddbmm", "addbmm", "einsum", "dot",
     "dot_general", "fully_connected"}
)  # fmt: skip
CONV_KINDS = frozenset(
    {"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "_fusedconv2d",
     "depthwiseconv2dnative", "_fuseddepthwiseconv2dnative", "conv2dbackpropinput",
     "conv2dbackpropfilter", "depthwise_conv2d", "transpose_conv2d"}
)  # fmt: skip
POOL_KINDS = frozenset(
    {"maxpool", "avgpool", "maxpool3d", "avgpool3d", "max_pool2d", "avg_pool2d",
     "max_pool2d_with_indices", "max_pool1d", "max_pool3d", "adaptive_avg_pool2d",
     "reduce_window", "maxpoolgrad", "avgpoolgrad", "max_pool2d_with_indices_backward"}
)  # fmt: skip
REDUCTION_KINDS = frozenset(
    {"sum", "mean", "max", "min", "prod", "amax", "amin", "var_mean", "var", "std", "argmax",
     "argmin", "logsumexp", "reduce", "any", "all", "biasaddgrad", "reduce_sum", "reduce_max",
     "reduce_min", "reduce_prod", "reduce_all", "reduce_any", "norm", "linalg_vector_norm",
     "euclideannorm"}
)  # fmt: skip
GATHER_KINDS = frozenset(
    {"gather", "gatherv2", "gathernd", "resourcegather", "embedding", "index_select",
     "dynamic_slice", "dynamic_gather", "torch_gather", "take", "index", "extract"}
)  # fmt: skip
SCATTER_KINDS = frozenset(
    {"scatter", "scatternd", "tensorscatterupdate", "tensorscatteradd", "index_put",
     "index_put_", "scatter_add", "scatter_reduce", "dynamic_update_slice"}
)  # fmt: skip
SLICE_KINDS = frozenset({"slice", "stridedslice", "extract_slice", "narrow"})
COPY_KINDS = frozenset(
    {"transpose", "broadcast_in_dim", "broadcast", "broadcastto", "concatenate", "concat",
     "concatv2", "cat", "pad", "padv2", "mirrorpad", "tile", "reverse", "reversev2", "copy",
     "clone", "contiguous", "cast", "convert", "to", "_to_copy", "insert_slice", "stack",
     "pack", "unpack", "unstack", "split", "splitv", "repeat", "roll", "flip", "gather_elements"}
)  # fmt: skip
FILL_KINDS = frozenset(
    {"fill", "zeroslike", "oneslike", "zeros", "ones", "full", "zeros_like", "ones_like",
     "full_like", "iota", "arange", "splat", "new_zeros", "new_ones"}
)  # fmt: skip
FREE_KINDS = frozenset(
    {"view", "_unsafe_view", "reshape", "expand", "squeeze", "unsqueeze", "t", "permute",
     "alias", "as_strided", "detach", "unflatten", "flatten", "expand_shape", "collapse_shape",
     "identity", "identityn", "readvariableop", "const", "constant", "literal", "listconstruct",
     "empty", "bitcast", "bitcast_convert", "stopgradient", "shape", "shapen", "size", "int",
     "float", "bool", "none", "str", "device", "to_builtin_tensor", "from_builtin_tensor",
     "numtotensor", "squeeze_dim", "expand_dims", "expanddims", "placeholder", "noop", "return",
     "yield", "get_tuple_element", "tuple", "optimization_barrier", "return_op", "dim",
     "assignvariableop", "varhandleop", "_arg", "_retval", "fetch", "island", "graph",
     "preventgradient", "checknumerics", "snapshot", "func", "module", "global", "dense_resource",
     "ensureshape", "reshape_as", "view_as", "expand_as", "empty_like", "tensor_static_info_cast",
     "copy_to_value_tensor", "copy_to_non_value_tensor", "overwrite_tensor_contents",
     # Region control flow: the ops in its regions carry the work.
     "for", "while", "if", "case", "condition", "execute_region", "forall", "parallel",
     "in_parallel", "cond_if", "while_loop", "br", "cond_br", "assert"}
)  # fmt: skip
# Per dialect, a kind that means another thing there: torch's `slice`/`select` are views.
DIALECT_FREE = frozenset({"torch:slice", "torch:select", "torch:transpose", "torch:expand"})
# Ops whose regions are their payload: the region's ops are counted by the parent.
PAYLOAD_PARENTS = frozenset(
    {"stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.scatter", "stablehlo.sort",
     "stablehlo.select_and_scatter", "stablehlo.map", "stablehlo.all_reduce",
     "stablehlo.reduce_scatter", "tensor.pad", "tensor.generate", "tosa.custom"}
)  # fmt: skip
# Body ops that are bookkeeping, not arithmetic.
BODY_NON_COMPUTE = frozenset(
    {"arith.constant", "arith.index_cast", "arith.index_castui", "arith.bitcast",
     "stablehlo.constant", "stablehlo.return"}
)  # fmt: skip
# Ops that run other functions: their work is their callee's ops', not their own.
CALL_KINDS = frozenset(
    {"call", "call_indirect", "dispatch", "statefulpartitionedcall", "partitionedcall",
     "statelessif", "statelesswhile", "invoke"}
)  # fmt: skip
TORCH_NAMESPACES = frozenset({"aten", "prim", "prims", "quantized", "torchvision", "onnx"})


def op_kind(op_name: str) -> str:
    """`tf.Conv2D` -> `conv2d`, `torch.aten.add.Tensor` -> `add`, `linalg.matmul` -> `matmul`."""
    parts = op_name.split(".")
    if parts[0] == "torch" and len(parts) >= 3 and parts[1] in TORCH_NAMESPACES:
        return parts[2].lower().rstrip("_") or parts[2].lower()
    return parts[-1].lower()
