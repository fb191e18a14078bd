"""What the syntax alone says: literal indices and slices, a literal's text
for messages, the nodes of a body (not of nested scopes), the names of a
callee and of its parameters.

Shared by the interpreter's rooms and the effect summaries; nothing here
knows about abstract values or torch.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from ..core.model import FunctionNode


def constant_index(node: ast.expr) -> int | None:
    """The integer a subscript index literally is (`2`, `-1`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    return None


def constant_slice(node: ast.Slice) -> slice | None:
    """A slice whose bounds are literal integers (`1:`, `:-1`, `::2`), else None."""
    parts = []
    for part in (node.lower, node.upper, node.step):
        if part is None:
            parts.append(None)
        elif (index := constant_index(part)) is not None:
            parts.append(index)
        else:
            return None
    return slice(*parts)


NOT_LITERAL = object()  # what `literal_value` gives for an expression that is not one


def literal_value(node: ast.expr) -> object:
    """The value of a literal (`True`, `"mode"`, `-1`, `("a", "b")`), else NOT_LITERAL."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def literal_text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def own_nodes(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function body, not descending into nested scopes."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(child))


def rebound_names(targets: list[ast.expr]) -> Iterator[str]:
    """Names an assignment rebinds (`a, (b, *c) = ...`; not `x.attr = ...`)."""
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Starred):
            yield from rebound_names([target.value])
        elif isinstance(target, (ast.Tuple, ast.List)):
            yield from rebound_names(target.elts)


def local_values(node: ast.AST) -> dict[str, list[ast.expr | None]]:
    """What each name is bound to under `node`: the value a plain `name =
    value` assigns (to each of `a = b = value`'s names), or None where the
    syntax gives no single value (unpacking, loops, augmented and annotated
    assignments, `:=`, `with ... as`). Comprehension variables bind nothing
    outside their comprehension."""
    found: dict[str, list[ast.expr | None]] = {}
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(stmt.value)
                else:  # `q, k = helper(q, k)`
                    for name in rebound_names([target]):
                        found.setdefault(name, []).append(None)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.AugAssign, ast.AnnAssign,
                               ast.NamedExpr)):
            for name in rebound_names([stmt.target]):
                found.setdefault(name, []).append(None)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for name in rebound_names([item.optional_vars for item in stmt.items
                                       if item.optional_vars is not None]):
                found.setdefault(name, []).append(None)
    return found


def last_name(expr: ast.expr) -> str:
    """`torch.library.custom_op` -> "custom_op"; "" for other expressions."""
    return expr.attr if isinstance(expr, ast.Attribute) else \
        expr.id if isinstance(expr, ast.Name) else ""


def is_hashable(value: object) -> bool:
    """Whether a literal can key a dict (a list default cannot)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def parameters_of(node: FunctionNode) -> list[tuple[str, int | None]]:
    """(name, position) of each parameter apply-style calls can bind."""
    positional = [*node.args.posonlyargs, *node.args.args]
    found: list[tuple[str, int | None]] = [(a.arg, i) for i, a in enumerate(positional)]
    found += [(a.arg, None) for a in node.args.kwonlyargs]
    return found


def schema_arguments(schema: str) -> list[str]:
    """The argument declarations of an op schema, "name(Tensor(a!) x, int[]
    n=[1, 2]) -> ()": ["Tensor(a!) x", "int[] n=[1, 2]"] (commas inside
    brackets do not split)."""
    arguments = schema.partition("(")[2].rpartition("->")[0].strip().removesuffix(")")
    pieces, depth, current = [], 0, ""
    for char in arguments:
        depth += 1 if char in "([" else -1 if char in ")]" else 0
        if char == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    return [piece.strip() for piece in pieces if piece.strip()]


def assigned_names(node: ast.AST) -> set[str]:
    """Names a def's body assigns (`=`, `+=`, `for`, `:=`, `with ... as`): a
    parameter among them no longer holds its argument everywhere."""
    names: set[str] = set()
    for inner in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(inner, ast.Assign):
            targets = inner.targets
        elif isinstance(inner, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [inner.target]
        elif isinstance(inner, ast.NamedExpr):
            targets = [inner.target]
        elif isinstance(inner, ast.withitem) and inner.optional_vars is not None:
            targets = [inner.optional_vars]
        names.update(rebound_names(targets))
    return names
