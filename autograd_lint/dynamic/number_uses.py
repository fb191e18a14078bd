"""Parameters forward uses as numbers, read from the statement that failed
when synthesis guessed them as tensors: `if gain:` ("Boolean value of Tensor
... is ambiguous"), a kernel's `sm_scale * log2e` (Triton's "invalid operands
of type pointer<fp16> and float32"). Synthesis (`inputs.py`) makes them
numbers from then on. Runs in the worker (imports torch)."""
from __future__ import annotations

import ast
import re
from typing import Any

import torch

from .demands import DemandReader, code_of, traceback_frames


def numbers_wanted(reader: DemandReader, exc: BaseException, args: tuple[Any, ...]) -> list[str]:
    """forward's parameters given a guessed tensor that the failing
    statement uses as a number ("Boolean value of Tensor ... is
    ambiguous" at `if scale:`; Triton's "invalid operands of type
    pointer<fp16> and float32" at `sm_scale * log2e`, or its
    interpreter's "no attribute 'is_ptr'" at `offs + w`, in a kernel that
    takes the parameter under its own name); [] if none."""
    if not _NUMBER_WANTED.search(_messages(exc)):
        return []
    frames = traceback_frames(exc, chained=True)
    code = code_of(reader.forward)
    forward_frame = next((frame for frame, _ in frames if frame.f_code is code), None)
    if forward_frame is None:
        return []
    tensors = {name: forward_frame.f_locals.get(name)
               for name, value in zip(reader.parameters, args, strict=False)
               if isinstance(value, torch.Tensor)}
    for frame, line in reversed(frames):
        statement = reader.statement_at(frame.f_code.co_filename, line)
        if statement is None:
            continue
        # The name must hold that tensor there: the same object, or, in a
        # kernel, the pointer it was passed as or the interpreter's copy
        # (not a block it loaded).
        used = [name for name in _number_uses(statement) & tensors.keys()
                if _same_tensor(frame.f_locals.get(name), tensors[name])]
        if used:
            return sorted(used)
    return []


def _messages(exc: BaseException) -> str:
    texts, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


# A tensor where a number was wanted.
_NUMBER_WANTED = re.compile(r"Boolean value of Tensor with more than one value is ambiguous|"
                            r"Tensor with \d+ elements cannot be converted to Scalar|"
                            r"invalid operands of type pointer<|has no attribute 'is_ptr'")


def _same_tensor(local: Any, tensor: Any) -> bool:
    """Whether a frame's local is forward's tensor: the object itself, a copy
    (Triton's interpreter copies a kernel's tensor arguments), or the pointer
    a kernel was passed it as (not a block of values it loaded)."""
    if local is tensor:
        return True
    if isinstance(local, torch.Tensor) and isinstance(tensor, torch.Tensor):
        return local.shape == tensor.shape and local.dtype == tensor.dtype
    kind = getattr(local, "type", None)
    try:
        return bool(kind.is_ptr()) and not bool(kind.is_block())  # type: ignore[union-attr]
    except Exception:
        return False


def _header(statement: ast.stmt) -> list[ast.AST]:
    """What a statement itself evaluates: a compound statement's test or
    iterable, not its body (the line that raised is the header's)."""
    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [statement.iter]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in statement.items]
    if hasattr(statement, "body"):
        return []
    return [statement]


def _number_uses(statement: ast.stmt) -> set[str]:
    """Names the statement uses as numbers or truth values: tested (`if s:`,
    `not s`, `s and t`), compared, or in arithmetic; not a name it only
    reads an attribute or an element of, or passes on."""
    used: set[str] = set()
    tests = [statement.test] if isinstance(statement, (ast.If, ast.While, ast.Assert)) else []
    for node in (n for root in _header(statement) for n in ast.walk(root)):
        if isinstance(node, ast.IfExp):
            tests.append(node.test)
        elif isinstance(node, ast.BoolOp):
            tests.extend(node.values)
        elif isinstance(node, ast.UnaryOp):
            tests.append(node.operand)
        elif isinstance(node, ast.Compare):
            tests.extend([node.left, *node.comparators])
        elif isinstance(node, ast.BinOp):
            tests.extend([node.left, node.right])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("float", "int", "bool"):
            tests.extend(node.args)
    used.update(node.id for node in tests if isinstance(node, ast.Name))
    return used
