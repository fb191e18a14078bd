"""What a parameter of forward is, from its name and its annotation alone:
tables of well-known names (`dim`, `eps`, `bias`, `labels`, `cu_seqlens`),
the tensor role a name gives (main operand, per-feature vector, weight,
labels, mask, table), names no guess can stand for (callables, modules),
and annotations that hold only numbers. Synthesis (`inputs.py`) starts from
these and learns the rest from forward's errors. Runs in the worker."""
from __future__ import annotations

import re
from typing import Any

from .errors import Unsynthesizable

# Values for well-known non-tensor parameter names, most likely first.
KNOWN_VALUES: dict[str, tuple[Any, ...]] = {
    "dim": (-1, 0), "axis": (-1, 0), "dims": ((-1,),), "start_dim": (0,), "end_dim": (-1,),
    "stride": (1,), "padding": (0,), "dilation": (1,), "groups": (1,), "kernel_size": (1,),
    "output_padding": (0,), "eps": (1e-5,), "epsilon": (1e-5,), "p": (0.5, 2), "alpha": (1.0,),
    "beta": (1.0,), "gamma": (1.0,), "momentum": (0.1,), "negative_slope": (0.01,),
    "lambd": (0.5,), "threshold": (0.5,), "min": (0.0,), "max": (1.0,), "temperature": (1.0,),
    "training": (False,), "inplace": (False,), "keepdim": (False,), "descending": (False,),
    "causal": (False,), "transpose": (False,), "reduction": ("mean", "sum", "none"),
    "num_groups": (1,), "chunks": (1,), "idx": (0,), "affine": (True, False),
    "elementwise_affine": (True, False), "bidirectional": (False,), "deterministic": (True,),
    "scale": (2.0,), "factor": (2.0,), "exponent": (2.0,), "power": (2.0,),
    "ignore_index": (-100,), "label_smoothing": (0.0,), "offset": (0.0,),
}
# Parameters that are index tensors: the identity permutation along `dim` is
# always valid, and is its own inverse.
INDEX_NAMES = frozenset({"index", "indices", "ind", "inds", "ind_inv", "perm", "permutation",
                         "inverse", "inv_perm", "order"})
# Optional parameters that are usually tensors (`bias=None`).
TENSOR_NAMES = frozenset({"bias", "weight", "mask", "attn_mask", "residual", "scale_tensor",
                          "gamma", "beta", "grad", "other", "target", "weights"})
LABEL_NAMES = frozenset({"labels", "label", "input_ids", "token_ids", "ids", "classes",
                         "completion_ids", "selected_token_ids", "shift_labels"})
TARGET_NAMES = frozenset({"target", "targets", "y_true", "y"})
VECTOR_NAMES = frozenset({"bias", "b", "gamma", "beta", "alpha", "scale", "shift", "w", "weight",
                          "running_mean", "running_var"})  # (batch norm's statistics)
TABLE_PREFIXES = ("cos", "sin", "freq", "rotary", "rope", "position_embedding")


class Placeholder:
    """A value made only when a candidate is built (it has side effects)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


SINGLE_PROCESS_GROUP = Placeholder("<one-process group>")
# A `max_seqlen` beside packed sequences: the longer one's length.
LONGEST = Placeholder("<the longest packed sequence>")


# Parameters that are not tensors and cannot be made up: a guessed tensor there
# would only produce findings about the guess.
CALLABLE_NAMES = frozenset({"func", "fn", "function", "run_function", "callback", "closure",
                            "forward_fn", "backward_fn", "hook", "op", "kernel", "f"})
OBJECT_NAMES = frozenset({"module", "model", "layer", "layers", "portal", "config", "cfg",
                          "options", "opts", "optimizer", "handle",
                          "stream", "context", "comm", "communicator", "mesh", "device_mesh",
                          "tokenizer", "cache", "state", "manager", "policy", "self"})
# Process groups: a one-process group stands in (collectives are the identity).
GROUP_NAMES = frozenset({"group", "process_group", "pg"})
BOOL_PREFIXES = ("is_", "use_", "has_", "enable_", "do_", "apply_", "return_", "need_",
                  "should_", "with_", "allow_", "output_")
_INT_PREFIXES = ("num_", "n_")
_EPSILON = re.compile(r"(^|_)eps(ilon)?($|_)")
_INT_SUFFIXES = ("_size", "_dim", "_len", "_rank", "_idx", "_id", "_count", "_heads")


def tensor_role(name: str) -> str:
    lowered = name.lower().lstrip("_")
    if lowered in INDEX_NAMES:
        return "index"
    if lowered in LABEL_NAMES or lowered.endswith(("_ids", "_labels", "_index")):
        return "labels"
    if lowered in TARGET_NAMES:
        return "target"
    if "mask" in lowered:
        return "mask"
    if lowered.startswith(TABLE_PREFIXES):
        return "table"
    if lowered in VECTOR_NAMES or lowered.endswith(("_bias", "_scale", "_shift")) or \
            lowered.startswith(("bias", "gamma", "beta")):
        return "weight" if lowered in ("w", "weight") else "vector"
    if "weight" in lowered or lowered.endswith(("_proj", "_w")):
        return "weight"
    return "main"


STATE_NAME = re.compile(r"(^|_)state$|^h0$|^initial_")
# Names of forward's variable-length inputs, cumulative (`cu_seqlens`,
# `seq_offsets`) or per sequence (`seq_lengths`); and of the longest length.
_CUMULATIVE = re.compile(r"^cu_|offsets?$|^cu_?seqlens")
_PER_SEQUENCE = re.compile(r"^seq_?lens$|^seq(uence)?_lengths$|^lengths$")
LONGEST_NAME = re.compile(r"^max_\w*(len|lens|length|lengths)(_\w)?$")


def packing_role(name: str) -> str | None:
    lowered = name.lower()
    if lowered.startswith("max_"):
        return None
    if _CUMULATIVE.search(lowered):
        return "offsets"
    return "lengths" if _PER_SEQUENCE.search(lowered) else None


OFFSETS_NAME = re.compile(r"seqlens|offsets?$|lengths?$|^lens$|_lens$|chunk_indices|seq_idx")


_OUTPUT_BUFFER = re.compile(r"^(out|output|outputs|result)$|^out_|_out$|_output$")


def is_output_buffer(name: str) -> bool:
    """`out`, `residual_out`, `out_buffer`: a tensor forward writes its result into."""
    return bool(_OUTPUT_BUFFER.search(name.lower()))


SCALARS: dict[str, Any] = {"int": 1, "float": 0.5}
_ANNOTATION_MEMBER = re.compile(r"^(?:<class'(\w+)'>|(?:builtins\.)?(\w+))$")


def scalar_annotation(annotation: str) -> set[str] | None:
    """The members of an annotation that holds only Python numbers, flags,
    strings or None (`float`, `float | None`, `Optional[int]`,
    `typing.Union[int, float]`), by name; None for anything else (a tensor,
    a class, no annotation)."""
    text = annotation.replace("typing.", "").replace(" ", "")
    optional = re.fullmatch(r"Optional\[(.+)\]", text)
    if optional is not None:
        text = f"{optional.group(1)}|None"
    union = re.fullmatch(r"Union\[(.+)\]", text)
    if union is not None:
        text = union.group(1).replace(",", "|")
    members = set()
    for part in text.split("|"):
        match = _ANNOTATION_MEMBER.match(part)
        name = match and (match.group(1) or match.group(2))
        if name == "NoneType":
            name = "None"
        if name not in ("int", "float", "bool", "str", "None"):
            return None
        members.add(name)
    return members if members - {"None"} else None


def names_a_group(lowered: str) -> bool:
    return lowered in GROUP_NAMES or lowered.endswith(("_group", "_pg"))


def classify(name: str) -> list[Any] | None:
    """Candidates from the shape of a parameter's name, or None (a tensor)."""
    lowered = name.lower()
    if lowered in CALLABLE_NAMES or lowered.endswith(("_fn", "_func", "_function", "_hook")):
        raise Unsynthesizable(f"`{name}` looks like a callable")
    if names_a_group(lowered):
        return [SINGLE_PROCESS_GROUP]
    if lowered in OBJECT_NAMES or lowered.endswith(("_module", "_config", "_model")):
        raise Unsynthesizable(f"`{name}` looks like an object, not a tensor")
    if lowered.startswith(BOOL_PREFIXES) or lowered.endswith(("_flag", "_first")) or \
            lowered in ("in_place", "inplace"):
        return [False, True]
    if _EPSILON.search(lowered):
        return [0.1]  # `rms_eps`, `eps_low`: a tolerance or a clip range, never a tensor
    if lowered.startswith(_INT_PREFIXES) or lowered.endswith(_INT_SUFFIXES) or \
            lowered in ("rank", "world_size", "size", "length", "seq_len", "heads", "head_dim"):
        return [1, 2]
    return None
