"""What a forward input's annotation and default say it is, before any
evidence from the body (RULES.md "Tensor-valued expression"): a tensor
(`torch.Tensor`, `Optional[torch.LongTensor]`), a non-tensor (`int`, a literal
default), possibly None (`= None`, `Optional[...]`), or unknown.
"""
from __future__ import annotations

import ast

from ..core.model import Scope
from . import torch_api as api
from .values import Kind, Value


def non_tensor_reason(arg: ast.arg, default: ast.expr | None, scope: Scope) -> str | None:
    """Why an input's annotation or default says it is not a tensor (for
    messages), or None."""
    if arg.annotation is not None and annotation_kind(arg.annotation, scope) is Kind.NONTENSOR:
        return f"annotated `{ast.unparse(arg.annotation)}`"
    if default is not None and _is_literal(default) and not _is_none(default):
        return f"its default is `{ast.unparse(default)}`"
    return None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_literal(e) for e in node.elts)
    return False


def _strip_optional(node: ast.expr) -> tuple[ast.expr, bool]:
    """`Optional[X]`, `X | None`, `Union[X, None]` -> (X, True)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        if _is_none(node.right):
            return node.left, True
        if _is_none(node.left):
            return node.right, True
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else \
            getattr(node.value, "id", None)
        if head == "Optional":
            return node.slice, True
        if head == "Union" and isinstance(node.slice, ast.Tuple):
            rest = [e for e in node.slice.elts if not _is_none(e)]
            if len(rest) == 1 and len(node.slice.elts) == 2:
                return rest[0], True
    return node, False


def annotation_kind(node: ast.expr, scope) -> Kind:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return Kind.UNKNOWN
    inner, _ = _strip_optional(node)
    if isinstance(inner, (ast.Name, ast.Attribute)):
        qualified = scope.resolve(inner) or ast.unparse(inner)
        if qualified in api.TENSOR_ANNOTATIONS or api.is_tensor_class(qualified):
            return Kind.TENSOR
        if qualified in api.SCALAR_ANNOTATIONS or ast.unparse(inner) in api.SCALAR_ANNOTATIONS:
            return Kind.NONTENSOR
    return Kind.UNKNOWN


def input_value(arg: ast.arg, default: ast.expr | None, scope) -> Value:
    root = f"input:{arg.arg}"
    kind = Kind.UNKNOWN
    maybe_none = default is not None and _is_none(default)
    seq = False
    if default is not None and not maybe_none and _is_literal(default):
        kind = Kind.NONTENSOR
        seq = isinstance(default, (ast.Tuple, ast.List))
    integral = False
    if arg.annotation is not None:
        annotated = annotation_kind(arg.annotation, scope)
        if annotated is not Kind.UNKNOWN and kind is Kind.UNKNOWN:
            kind = annotated
            integral = _integral_annotation(arg.annotation, scope)
        if _strip_optional(arg.annotation)[1]:
            maybe_none = True
        seq = seq or _container_annotation(arg.annotation)
    return Value(kind, frozenset({root}), None, seq, False, maybe_none, root, integral=integral)


_CONTAINERS = frozenset({"tuple", "list", "dict", "Tuple", "List", "Dict", "Sequence",
                         "Mapping", "MutableSequence", "Iterable"})


def _container_annotation(node: ast.expr) -> bool:
    """`Tuple`, `list[Tensor]`, `Dict[str, Any]`, `Sequence[...]`: a Python
    container (autograd sees no tensor in it)."""
    inner, _ = _strip_optional(node)
    if isinstance(inner, ast.Subscript):
        inner = inner.value
    name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", None)
    return name in _CONTAINERS


def _integral_annotation(node: ast.expr, scope) -> bool:
    """`torch.LongTensor`, `Optional[torch.BoolTensor]`: indices and masks."""
    inner, _ = _strip_optional(node)
    if not isinstance(inner, (ast.Name, ast.Attribute)):
        return False
    qualified = scope.resolve(inner) or ast.unparse(inner)
    return qualified.rsplit(".", 1)[-1] in api.INTEGRAL_TENSOR_CLASSES
