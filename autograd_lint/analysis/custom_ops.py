"""Custom ops (torch.library): the arguments an op declares it mutates.

An op is declared by a decorated def (`@torch.library.custom_op("ns::op",
mutates_args=("x",))`, also `triton_op`) or by a schema string given to
`define` (`"(Tensor(a!) x) -> ()"`: `!` marks a written argument). A call
`torch.ops.ns.op(...)` of an op its module declares writes those arguments
(effects.py).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import FunctionNode, ModuleInfo
from .syntax import last_name, parameters_of

if TYPE_CHECKING:
    from ..project import Project


_CUSTOM_OP_DECORATORS = frozenset({"custom_op", "triton_op"})


@dataclass(frozen=True)
class CustomOp:
    parameters: tuple[tuple[str, int | None], ...]
    mutated: frozenset[str]


def _custom_op_decorator(node: FunctionNode) -> ast.Call | None:
    """`@torch.library.custom_op("ns::op", mutates_args=...)` (or `triton_op`)."""
    return next((d for d in node.decorator_list if isinstance(d, ast.Call)
                 and last_name(d.func) in _CUSTOM_OP_DECORATORS), None)


def declared_mutations(node: FunctionNode) -> frozenset[str]:
    """`@torch.library.custom_op("ns::op", mutates_args=("x",))`: {"x"}."""
    decorator = _custom_op_decorator(node)
    for keyword in decorator.keywords if decorator is not None else ():
        if keyword.arg == "mutates_args" and \
                isinstance(keyword.value, (ast.Tuple, ast.List, ast.Set)):
            return frozenset(e.value for e in keyword.value.elts
                             if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return frozenset()


def declared_ops(module: ModuleInfo, project: Project | None) -> dict[str, CustomOp]:
    """The ops a module declares, by "ns::name" ("::name" when a `lib.define`
    leaves the namespace to its Library): decorated defs and schema strings."""
    if "mutates_args" not in module.source and "!)" not in module.source:
        return {}
    if module.partial and project is not None:
        module = project.complete(module)
    ops: dict[str, CustomOp] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorator = _custom_op_decorator(node)
            first = decorator.args[0] if decorator is not None and decorator.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                    "::" in first.value:
                ops[first.value] = CustomOp(tuple(parameters_of(node)), declared_mutations(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "define":
            strings = [a.value for a in node.args
                       if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(strings) == 2:  # torch.library.define("ns::name", "(Tensor(a!) x) -> ()")
                declared = _schema(strings[0] + strings[1])
            elif len(strings) == 1:  # lib.define("name(Tensor(a!) x) -> ()")
                declared = _schema(strings[0])
            else:
                continue
            if declared is not None:
                name, op = declared
                ops[name if "::" in name else f"::{name}"] = op
    return ops


def _schema(text: str) -> tuple[str, CustomOp] | None:
    """"ns::name(Tensor(a!) x, Tensor y, *, int n=1) -> ()": the op's name,
    its parameters and those annotated as written (`!`)."""
    name, paren, rest = text.partition("(")
    if not paren or "->" not in rest:
        return None
    name = name.strip().split(".")[0]  # an overload name ("name.out") is not part of the op
    arguments = rest.rsplit("->", 1)[0].strip().removesuffix(")")
    parameters: list[tuple[str, int | None]] = []
    mutated: set[str] = set()
    depth, current, pieces = 0, "", []
    for char in arguments:
        depth += char in "([" and 1 or 0
        depth -= char in ")]" and 1 or 0
        if char == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    keyword_only = False
    for piece in (p.strip() for p in pieces):
        if piece == "*":
            keyword_only = True
            continue
        words = piece.split("=")[0].split()
        if len(words) < 2:
            continue
        parameters.append((words[-1], None if keyword_only else len(parameters)))
        if "!" in " ".join(words[:-1]):
            mutated.add(words[-1])
    return name, CustomOp(tuple(parameters), frozenset(mutated))
