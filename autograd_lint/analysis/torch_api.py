"""What the static analysis knows about torch's API, as plain tables.

The tables decide the tensor-valued judgement of RULES.md. They err on the
side of "unknown": a name missing from every table is never treated as a
tensor by accident.
"""
from __future__ import annotations

# The classes a custom Function derives from and the methods autograd calls:
# the model's, which tells which classes are Functions (re-exported here).
from ..core.model import FUNCTION_BASES, SPECIAL_METHODS

__all__ = ["FUNCTION_BASES", "SPECIAL_METHODS"]  # and the tables below

# Methods whose first parameter is ctx.
CTX_METHODS = frozenset({"backward", "vjp", "jvp", "setup_context"})
BACKWARD_METHODS = ("backward", "vjp")

# ---------------------------------------------------------------------------
# Tensor methods
# ---------------------------------------------------------------------------

# Views of their receiver, or methods that may return the receiver itself
# (`contiguous`, `to`, `float`, ... return self when nothing needs converting).
VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "expand",
    "expand_as", "squeeze", "unsqueeze", "narrow", "select", "detach", "contiguous",
    "flatten", "unflatten", "movedim", "moveaxis", "swapaxes", "swapdims", "diagonal",
    "unfold", "as_strided", "real", "imag", "view_as_real", "view_as_complex",
    "to", "type_as", "float", "double", "half", "bfloat16", "cpu", "cuda",
    "resolve_conj", "resolve_neg", "conj", "align_as", "refine_names", "rename",
    "squeeze_", "unsqueeze_", "t_", "transpose_", "as_strided_",
})
# Conversions that return the receiver itself only when nothing needs
# converting: RULES.md does not count them as aliases (they usually copy), so
# an in-place change of their result is not a change of the receiver.
CONVERSION_METHODS = frozenset({
    "to", "type_as", "float", "double", "half", "bfloat16", "cpu", "cuda",
    "resolve_conj", "resolve_neg",
})
# Methods returning a sequence of views of the receiver.
VIEW_SEQUENCE_METHODS = frozenset({
    "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit",
    "split_with_sizes", "unsafe_split", "unsafe_chunk",
})
# Methods returning a tuple of tensors always, or when given a dim.
SEQUENCE_METHODS = frozenset({
    "sort", "topk", "kthvalue", "mode", "aminmax", "cummax", "cummin", "frexp",
    "slogdet", "qr", "svd", "eig", "symeig", "lu", "geqrf", "triangular_solve",
    "histogram", "var_mean", "std_mean",
}) | VIEW_SEQUENCE_METHODS
SEQUENCE_WITH_DIM_METHODS = frozenset({"max", "min", "median", "nanmedian"})
# Reductions whose result, with no dim argument, is a 0-d (scalar) tensor.
FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "norm",
                             "std", "var", "all", "any", "median", "nanmedian", "nansum",
                             "nanmean", "count_nonzero"})
# Products of two vectors: always a 0-d tensor.
SCALAR_PRODUCTS = frozenset({"dot", "vdot"})
# Methods and functions whose result may hold more elements than their inputs.
GROWING_METHODS = frozenset({"expand", "expand_as", "repeat", "repeat_interleave", "tile",
                             "broadcast_to", "new_empty", "new_zeros", "new_ones", "new_full",
                             "new_tensor", "zeros_like", "ones_like", "empty_like",
                             "full_like", "rand_like", "randn_like"})
# Functions that build a scalar tensor from a number (`torch.tensor(1.0)`).
SCALAR_FROM_NUMBER_FUNCTIONS = frozenset({"torch.tensor", "torch.scalar_tensor",
                                          "torch.as_tensor"})

# Methods and attributes that give non-tensors.
NON_TENSOR_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "item", "tolist", "stride",
    "data_ptr", "is_contiguous", "element_size", "get_device", "storage_offset",
    "is_floating_point", "is_complex", "is_signed", "is_pinned", "is_shared",
    "is_set_to", "is_same_size", "is_nonzero", "equal", "numpy", "dim_order",
    "untyped_storage", "storage", "register_hook", "register_post_accumulate_grad_hook",
    "is_inference", "has_names", "__len__", "nbytes", "itemsize", "is_coalesced",
})
NON_TENSOR_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout",
    "is_leaf", "is_sparse", "is_quantized", "is_meta", "is_mps", "is_xpu",
    "names", "grad_fn", "output_nr", "_version", "nbytes", "itemsize", "is_nested",
})
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})

# Single-tensor results. Receiving one of these methods is also evidence that
# the receiver is a tensor (they don't exist on Python builtins or modules).
TENSOR_METHODS = frozenset({
    "abs", "absolute", "acos", "acosh", "add", "addbmm", "addcdiv", "addcmul", "addmm",
    "addmv", "addr", "all", "amax", "amin", "angle", "any", "argmax", "argmin",
    "argsort", "asin", "asinh", "atan", "atan2", "atanh", "baddbmm", "bernoulli",
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bmm", "ceil",
    "cholesky", "clamp", "clamp_max", "clamp_min", "clip", "clone", "cos", "cosh",
    "count_nonzero", "cross", "cumprod", "cumsum", "deg2rad", "det", "diag",
    "diag_embed", "diff", "digamma", "dist", "div", "divide", "dot", "eq", "erf", "erfc",
    "erfinv", "exp", "exp2", "expm1", "fix", "flip", "fliplr", "flipud", "floor",
    "floor_divide", "fmod", "frac", "gather", "ge", "ger", "gt", "hardshrink",
    "heaviside", "index_add", "index_copy", "index_fill", "index_put", "index_select",
    "inverse", "isclose", "isfinite", "isinf", "isnan", "kron", "le", "lerp",
    "lgamma", "log", "log10", "log1p", "log2", "log_softmax", "logaddexp",
    "logcumsumexp", "logdet", "logical_and", "logical_not", "logical_or",
    "logical_xor", "logit", "logsumexp", "lt", "masked_fill", "masked_scatter",
    "masked_select", "matmul", "matrix_exp", "matrix_power", "maximum", "mean", "minimum",
    "mm", "mul", "multiply", "mv", "nan_to_num", "nanmean", "nansum", "narrow_copy",
    "ne", "neg", "negative", "new_empty", "new_full", "new_ones", "new_tensor",
    "new_zeros", "norm", "outer", "pinverse", "pow", "prod", "rad2deg", "reciprocal",
    "relu", "remainder", "renorm", "repeat", "repeat_interleave", "roll", "rot90",
    "round", "rsqrt", "scatter", "scatter_add", "scatter_reduce", "sgn", "sigmoid",
    "sign", "signbit", "sin", "sinc", "sinh", "slice_scatter", "softmax", "sqrt",
    "square", "std", "sub", "subtract", "sum", "sum_to_size", "take", "take_along_dim",
    "tan", "tanh", "tile", "trace", "tril", "triu", "true_divide", "trunc", "var",
    "where", "xlogy", "to_dense", "to_sparse", "coalesce", "nonzero", "long", "int",
    "short", "char", "byte", "bool", "cfloat", "cdouble", "silu",
    "index_reduce", "put", "new", "pin_memory", "requires_grad_",
    "sort_values", "msort", "argwhere", "isreal", "positive", "fmax", "fmin", "hypot",
    "igamma", "log_normal", "mvlgamma", "polygamma", "i0", "copysign", "nextafter", "ldexp",
    "float_power", "cov",
    "corrcoef", "histc", "bincount", "cumulative_trapezoid", "diagonal_scatter",
    "select_scatter", "as_strided_scatter", "max", "min", "median", "nanmedian",
})
# Tensor-only method names that are evidence even on an unknown receiver:
# torch-specific names absent from NumPy arrays, builtins and nn.Module.
STRONG_TENSOR_METHODS = frozenset({
    "detach", "clone", "contiguous", "t", "mm", "bmm", "view", "view_as", "expand",
    "expand_as", "unsqueeze", "narrow", "permute", "masked_fill", "masked_scatter",
    "index_select", "index_add", "index_copy", "index_fill", "new_zeros", "new_ones",
    "new_empty", "new_full", "new_tensor", "type_as", "reshape_as", "unflatten",
    "addmm", "addcmul", "addcdiv", "baddbmm", "matmul", "numel", "dim", "data_ptr",
    "is_contiguous", "element_size", "storage_offset", "stride", "sum_to_size",
    "scatter_add", "logsumexp", "sigmoid", "relu", "softmax", "log_softmax", "clamp",
    "clamp_min", "clamp_max", "pow", "exp", "log", "mul", "div", "sub", "add", "neg",
    "rsqrt", "sqrt", "tanh", "abs", "sign", "norm", "repeat_interleave", "gather",
    "scatter", "mv", "flip", "roll", "tril", "triu", "to_dense", "coalesce",
    "register_hook", "untyped_storage", "retain_grad",
    "numpy",
})
# Tensor-only attributes that are evidence on an unknown receiver.
# (Not `requires_grad`, `requires_grad_()` nor `backward()`: modules and
# duck-typed tensor wrappers have them too; RULES.md, "Must, not may".)
STRONG_TENSOR_ATTRIBUTES = frozenset({
    "is_cuda", "grad_fn", "is_leaf", "grad", "mT", "mH", "layout",
    "is_sparse", "is_quantized", "_version",
})

# In-place methods ending in `_` that do not change the tensor's values.
NOT_INPLACE_METHODS = frozenset({
    "requires_grad_", "share_memory_", "retain_grad", "rename_", "refine_names_",
    "record_stream", "is_set_to", "_fix_weakref",
    # Storage operations (RULES.md, "Must, not may"): `.set_()` or `.resize_()`
    # of a temporary frees or rebinds its storage; no data anyone holds changes.
    "set_", "resize_", "resize_as_",
})

# ---------------------------------------------------------------------------
# torch.* functions (qualified names without the leading "torch.")
# ---------------------------------------------------------------------------

# Namespaces whose lowercase functions return tensors.
TENSOR_NAMESPACES = frozenset({
    "torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
    "torch.sparse", "torch.nested",
})
# Namespaces that never give tensors we can judge (results unknown).
UNKNOWN_NAMESPACES = (
    "torch.cuda", "torch.distributed", "torch.backends", "torch.jit", "torch.utils",
    "torch.autograd", "torch.nn.modules", "torch.nn.parameter", "torch.optim",
    "torch.ops", "torch.library", "torch.compiler", "torch._", "torch.fx",
    "torch.export", "torch.onnx", "torch.testing", "torch.profiler", "torch.hub",
    "torch.amp", "torch.random", "torch.mps", "torch.xpu", "torch.cpu",
    "torch.overrides", "torch.func", "torch.multiprocessing", "torch.quantization",
    "torch.ao",
)
NON_TENSOR_FUNCTIONS = frozenset({
    "torch.is_tensor", "torch.is_storage", "torch.is_grad_enabled",
    "torch.is_inference_mode_enabled", "torch.is_floating_point", "torch.is_complex",
    "torch.is_nonzero", "torch.numel", "torch.get_default_dtype", "torch.Size",
    "torch.device", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.typename",
    "torch.result_type", "torch.promote_types", "torch.can_cast",
    "torch.broadcast_shapes", "torch.get_num_threads", "torch.equal", "torch.allclose",
    "torch.is_same_size", "torch.are_deterministic_algorithms_enabled",
    "torch.is_autocast_enabled", "torch.get_autocast_gpu_dtype", "torch.no_grad",
    "torch.enable_grad", "torch.set_grad_enabled", "torch.inference_mode",
    "torch.autocast", "torch.is_anomaly_enabled", "torch.get_default_device",
    "torch.is_deterministic_algorithms_warn_only_enabled", "torch.compile",
    "torch.is_warn_always_enabled", "torch.get_float32_matmul_precision",
    "torch.manual_seed", "torch.seed", "torch.initial_seed", "torch.Generator",
    "torch.Stream", "torch.Event", "torch.set_default_dtype", "torch.save",
    "torch.load", "torch.set_printoptions", "torch.get_num_interop_threads",
    "torch.cuda.is_available", "torch.cuda.device_count",
    "torch.cuda.current_device", "torch.cuda.current_stream",
    "torch.autograd.grad_mode.no_grad",
})
# Results that are tensors but that RULES.md says to treat as opaque
# (random-number-generator states are saved on ctx by design).
OPAQUE_FUNCTIONS = frozenset({
    "torch.get_rng_state", "torch.cuda.get_rng_state", "torch.cuda.get_rng_state_all",
    "torch.random.get_rng_state", "torch.empty_strided",
})
# Functions returning a tuple/list of tensors.
SEQUENCE_FUNCTIONS = frozenset({
    "torch.split", "torch.chunk", "torch.unbind", "torch.tensor_split", "torch.hsplit",
    "torch.vsplit", "torch.dsplit", "torch.split_with_sizes", "torch.sort",
    "torch.topk", "torch.kthvalue", "torch.mode", "torch.aminmax", "torch.cummax",
    "torch.cummin", "torch.frexp", "torch.slogdet", "torch.qr", "torch.svd",
    "torch.lu", "torch.geqrf", "torch.triangular_solve", "torch.histogram",
    "torch.histogramdd", "torch.var_mean", "torch.std_mean", "torch.broadcast_tensors",
    "torch.meshgrid", "torch.gradient", "torch.lu_unpack", "torch.unique_consecutive",
    "torch.autograd.grad", "torch.linalg.eigh", "torch.linalg.eig", "torch.linalg.qr",
    "torch.linalg.svd", "torch.linalg.slogdet", "torch.linalg.lu",
    "torch.linalg.lu_factor", "torch.linalg.lu_factor_ex", "torch.linalg.lstsq",
    "torch.linalg.inv_ex", "torch.linalg.cholesky_ex", "torch.linalg.ldl_factor",
    "torch.linalg.ldl_factor_ex", "torch.linalg.solve_ex", "torch.atleast_1d",
    "torch.atleast_2d", "torch.atleast_3d", "torch.nn.functional.max_pool1d_with_indices",
    "torch.nn.functional.max_pool2d_with_indices",
    "torch.nn.functional.max_pool3d_with_indices",
    "torch.nn.functional.multi_head_attention_forward", "torch.lobpcg",
})
SEQUENCE_WITH_DIM_FUNCTIONS = frozenset({
    "torch.max", "torch.min", "torch.median", "torch.nanmedian",
})
# Keyword arguments that turn a tensor result into a tuple.
TUPLE_FLAGS = frozenset({"return_indices", "return_inverse", "return_counts", "as_tuple",
                         "return_complex_indices"})
# Functions that view their first argument.
VIEW_FUNCTIONS = frozenset({
    "torch.transpose", "torch.reshape", "torch.squeeze", "torch.unsqueeze",
    "torch.narrow", "torch.select", "torch.flatten", "torch.unflatten",
    "torch.movedim", "torch.moveaxis", "torch.swapaxes", "torch.swapdims", "torch.t",
    "torch.permute", "torch.as_strided", "torch.diagonal", "torch.detach",
    "torch.view_as_real", "torch.view_as_complex", "torch.real", "torch.imag",
    "torch.conj", "torch.resolve_conj", "torch.resolve_neg", "torch.adjoint",
})
VIEW_SEQUENCE_FUNCTIONS = frozenset({
    "torch.split", "torch.chunk", "torch.unbind", "torch.tensor_split",
    "torch.hsplit", "torch.vsplit", "torch.dsplit", "torch.split_with_sizes",
})
# Functions whose first argument must be a tensor: evidence that an input is
# a tensor when it is passed there.
TENSOR_ARG_FUNCTIONS = frozenset({
    "torch.exp", "torch.log", "torch.sigmoid", "torch.tanh", "torch.relu",
    "torch.matmul", "torch.mm", "torch.bmm", "torch.abs", "torch.sqrt", "torch.rsqrt",
    "torch.sum", "torch.mean", "torch.clamp", "torch.softmax", "torch.log_softmax",
    "torch.sin", "torch.cos", "torch.addmm", "torch.baddbmm", "torch.transpose",
    "torch.flatten", "torch.squeeze", "torch.unsqueeze", "torch.narrow",
    "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
    "torch.rand_like", "torch.randn_like", "torch.masked_fill", "torch.gather",
    "torch.index_select", "torch.erf", "torch.cumsum", "torch.logsumexp",
    "torch.nn.functional.linear", "torch.nn.functional.conv1d",
    "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
    "torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu",
    "torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
    "torch.nn.functional.layer_norm", "torch.nn.functional.embedding",
    "torch.nn.functional.dropout", "torch.nn.functional.pad",
    "torch.nn.functional.scaled_dot_product_attention",
})

# Arguments that must be tensors (positions, keyword names): passing an input
# there is evidence that it is one. Methods count only on a tensor receiver
# (NumPy arrays share some of these names). Scalars are allowed elsewhere
# (`scatter_(dim, index, 1.0)`, `torch.where(c, x, 0.0)`), so those are not listed.
TENSOR_ARGUMENTS_OF_METHODS: dict[str, tuple[int | str, ...]] = {
    "gather": (1, "index"), "index_select": (1, "index"), "take": (0, "index"),
    "scatter": (1, "index"), "scatter_": (1, "index"),
    "scatter_add": (1, 2, "index", "src"), "scatter_add_": (1, 2, "index", "src"),
    "scatter_reduce": (1, 2, "index", "src"), "scatter_reduce_": (1, 2, "index", "src"),
    "index_add": (1, 2, "index", "source"), "index_add_": (1, 2, "index", "source"),
    "index_copy": (1, 2, "index", "source"), "index_copy_": (1, 2, "index", "source"),
    "index_fill": (1, "index"), "index_fill_": (1, "index"),
    "masked_fill": (0, "mask"), "masked_fill_": (0, "mask"),
    "masked_scatter": (0, 1, "mask", "source"), "masked_scatter_": (0, 1, "mask", "source"),
    "masked_select": (0, "mask"), "put_": (0, 1, "index", "source"),
    "mm": (0,), "bmm": (0,), "mv": (0,), "matmul": (0,), "copy_": (0, "src"),
    "addmm": (0, 1), "addmm_": (0, 1), "baddbmm": (0, 1), "baddbmm_": (0, 1),
    "addcmul": (0, 1), "addcmul_": (0, 1), "addcdiv": (0, 1), "addcdiv_": (0, 1),
    "type_as": (0,), "expand_as": (0,), "view_as": (0,), "reshape_as": (0,),
    "where": (0, "condition"),
}
TENSOR_ARGUMENTS_OF_FUNCTIONS: dict[str, tuple[int | str, ...]] = {
    "torch.gather": (0, 2, "input", "index"), "torch.index_select": (0, 2, "input", "index"),
    "torch.scatter": (0, 2, "input", "index"),
    "torch.scatter_add": (0, 2, 3, "input", "index", "src"),
    "torch.scatter_reduce": (0, 2, 3, "input", "index", "src"),
    "torch.index_add": (0, 2, 3, "input", "index", "source"),
    "torch.masked_select": (0, 1, "input", "mask"), "torch.where": (0, "condition"),
    "torch.matmul": (0, 1), "torch.mm": (0, 1), "torch.bmm": (0, 1),
    "torch.nn.functional.linear": (0, 1, 2), "torch.addmm": (0, 1, 2),
    "torch.baddbmm": (0, 1, 2),
    "torch.take": (0, 1), "torch.take_along_dim": (0, 1), "torch.outer": (0, 1),
    "torch.addcmul": (0, 1, 2), "torch.addcdiv": (0, 1, 2),
    "torch.nn.functional.embedding": (0, 1, "input", "weight"),
    "torch.nn.functional.conv1d": (0, 1), "torch.nn.functional.conv2d": (0, 1),
    "torch.nn.functional.conv3d": (0, 1),
}
# Functions taking a sequence of tensors first: its elements are tensors.
TENSOR_SEQUENCE_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate",
                                       "torch.stack", "torch.hstack", "torch.vstack"})

# Collectives that write into a tensor argument in place (argument index).
INPLACE_COLLECTIVES: dict[str, int] = {
    "torch.distributed.all_reduce": 0,
    "torch.distributed.broadcast": 0,
    "torch.distributed.reduce": 0,
    "torch.distributed.all_gather_into_tensor": 0,
    "torch.distributed.reduce_scatter_tensor": 0,
    "torch.distributed._all_gather_base": 0,
    "torch.distributed._reduce_scatter_base": 0,
    "torch.distributed.all_to_all_single": 0,
    "torch.distributed.recv": 0,
    "torch.distributed.irecv": 0,
    "torch.distributed.scatter": 0,
}

# Python builtins whose result is never a tensor.
NON_TENSOR_BUILTINS = frozenset({
    "len", "int", "float", "bool", "str", "bytes", "complex", "isinstance",
    "issubclass", "callable", "hasattr", "id", "hash", "repr", "type", "range",
    "enumerate", "zip", "dict", "set", "frozenset", "print", "format", "ord", "chr",
    "divmod", "bin", "hex", "oct", "slice", "object", "super", "vars", "dir",
    "globals", "locals", "iter",
})
# Builtins producing a Python sequence (never a tensor).
SEQUENCE_BUILTINS = frozenset({"tuple", "list"})

# Annotations.
TENSOR_ANNOTATIONS = frozenset({"Tensor", "torch.Tensor", "torch.FloatTensor",
                                "torch.DoubleTensor", "torch.HalfTensor",
                                "torch.BFloat16Tensor", "torch.LongTensor",
                                "torch.IntTensor", "torch.BoolTensor",
                                "torch.ByteTensor", "torch.cuda.FloatTensor",
                                "torch.nn.Parameter", "Parameter"})
SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "builtins.int",
                                "builtins.float", "builtins.bool", "builtins.str"})


# Tensor classes of integer and bool dtypes (indices, offsets, masks).
INTEGRAL_TENSOR_CLASSES = frozenset({"LongTensor", "IntTensor", "ShortTensor", "CharTensor",
                                     "ByteTensor", "BoolTensor"})


def is_tensor_class(qualname: str) -> bool:
    """torch.Tensor, torch.FloatTensor, torch.cuda.HalfTensor, ..."""
    last = qualname.rsplit(".", 1)[-1]
    return qualname.startswith("torch.") and last.endswith("Tensor") and last[:1].isupper()


def is_unknown_namespace(qualname: str) -> bool:
    return qualname.startswith(UNKNOWN_NAMESPACES)


def namespace_of(qualname: str) -> str:
    return qualname.rsplit(".", 1)[0] if "." in qualname else ""

# Context managers that turn grad mode off, and setters that take a flag.
GRAD_OFF_CONTEXTS = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
})
GRAD_MODE_SETTERS = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
                               "torch.autograd.grad_mode.set_grad_enabled"})

# Results that are a (values, indices) pair.
INDICES_PAIR_METHODS = frozenset({"sort", "topk", "kthvalue", "mode", "cummax", "cummin"})
INDICES_PAIR_FUNCTIONS = frozenset({f"torch.{m}" for m in INDICES_PAIR_METHODS})

# Integer- or bool-typed results: indices and masks carry no gradient.
INTEGRAL_METHODS = frozenset({
    "argmax", "argmin", "argsort", "long", "int", "bool", "short", "byte", "char",
    "nonzero", "argwhere", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "eq",
    "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
    "logical_xor", "signbit", "isclose", "bucketize", "count_nonzero", "bincount",
})
INTEGRAL_FUNCTIONS = frozenset({f"torch.{m}" for m in INTEGRAL_METHODS} | {
    "torch.searchsorted", "torch.randint", "torch.randperm", "torch.randint_like",
    "torch.tril_indices", "torch.triu_indices", "torch.unique",
})

# ---------------------------------------------------------------------------
# What a result is computed from (taint, for AGF204/AGF214): values, not sizes
# ---------------------------------------------------------------------------
# A number read off a tensor (`.item()`, `int(t)`) that only sizes, shapes or
# indexes something does not put the gradient outside autograd: these calls'
# arguments are sizes, dims, dtypes or indices.
METADATA_METHODS = NON_TENSOR_METHODS - {"item", "tolist", "numpy", "equal", "is_nonzero"}
# The result keeps its receiver's values; the arguments only shape or index it.
SHAPE_ARGUMENT_METHODS = VIEW_METHODS | VIEW_SEQUENCE_METHODS | frozenset({
    "repeat", "tile", "roll", "flip", "fliplr", "flipud", "index_select", "gather",
    "take_along_dim", "sum_to_size", "expand_as", "broadcast_to", "narrow_copy",
})
SHAPE_ARGUMENT_FUNCTIONS = VIEW_FUNCTIONS | VIEW_SEQUENCE_FUNCTIONS | frozenset({
    "torch.roll", "torch.flip", "torch.tile", "torch.index_select", "torch.gather",
    "torch.take_along_dim", "torch.broadcast_to",
})
# Fresh tensors whose values come from no argument (or only from a fill value,
# the arguments after the first).
FRESH_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_empty_strided"})
FRESH_FUNCTIONS = frozenset({
    "torch.empty", "torch.zeros", "torch.ones", "torch.empty_like", "torch.zeros_like",
    "torch.ones_like", "torch.rand", "torch.randn", "torch.randint", "torch.rand_like",
    "torch.randn_like", "torch.randint_like", "torch.randperm", "torch.arange",
    "torch.eye", "torch.empty_strided", "torch.tril_indices", "torch.triu_indices",
})
FILL_FUNCTIONS = frozenset({"torch.full", "torch.full_like"})
METADATA_BUILTINS = frozenset({"len", "isinstance", "issubclass", "hasattr", "callable",
                               "id", "type", "range"})
