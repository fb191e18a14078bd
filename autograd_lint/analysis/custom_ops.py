"""Custom ops (torch.library): what an op declares, its parameters (with
their tensor-ness, from annotations or its schema) and the arguments it
mutates. The op model (op_model.py) builds on these.

An op is declared by a decorated def (`@torch.library.custom_op("ns::op",
mutates_args=("x",))`, also `triton_op`) or by a schema string given to
`define` (`"(Tensor(a!) x) -> ()"`: `!` marks a written argument). A
declaration says what the op may write, not what it does (over-declaring is
legal): a call `torch.ops.ns.op(...)` writes what the decorated def's body
writes (effects.py), and an op whose body is not in sight writes nothing known.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.model import FunctionNode, ModuleInfo
from .syntax import last_name, parameters_of, schema_arguments

if TYPE_CHECKING:
    from ..core.project import Project


_CUSTOM_OP_DECORATORS = frozenset({"custom_op", "triton_op"})


@dataclass(frozen=True)
class CustomOp:
    parameters: tuple[tuple[str, int | None], ...]
    mutated: frozenset[str]  # what it declares it mutates (it may declare more)
    node: FunctionNode | None = None  # the decorated def, whose body shows what it writes
    module: ModuleInfo | None = field(default=None, compare=False)  # the def's module


def _custom_op_decorator(node: FunctionNode) -> ast.Call | None:
    """`@torch.library.custom_op("ns::op", mutates_args=...)` (or `triton_op`)."""
    return next((d for d in node.decorator_list if isinstance(d, ast.Call)
                 and last_name(d.func) in _CUSTOM_OP_DECORATORS), None)


def mutates_entries(node: ast.expr) -> list[tuple[str, ast.expr]]:
    """The string entries of a `mutates_args=(...)` display, with their nodes."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return []
    return [(e.value, e) for e in node.elts
            if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def declared_mutations(node: FunctionNode) -> frozenset[str]:
    """`@torch.library.custom_op("ns::op", mutates_args=("x",))`: {"x"}."""
    decorator = _custom_op_decorator(node)
    for keyword in decorator.keywords if decorator is not None else ():
        if keyword.arg == "mutates_args":
            return frozenset(name for name, _ in mutates_entries(keyword.value))
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
                ops[first.value] = CustomOp(tuple(parameters_of(node)), declared_mutations(node),
                                            node, module)
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
    parsed = parse_schema(text)
    if parsed is None:
        return None
    name, parameters, written, _ = parsed
    return name, CustomOp(tuple((p.name, p.position) for p in parameters), frozenset(written))


@dataclass(frozen=True)
class OpParameter:
    name: str
    position: int | None  # None: keyword-only
    tensor: bool  # Tensor or Optional[Tensor]
    tensor_list: bool  # list[Tensor] / Sequence[Tensor] / Tensor[]
    has_default: bool
    node: ast.AST | None = None  # the def's argument (None for schemas)
    alias: str | None = None  # a schema's alias set: "a" for `Tensor(a) x`


def parse_schema(text: str) -> tuple[str, list[OpParameter], set[str], bool] | None:
    """"name(Tensor x, Tensor(a!) y, *, int n=1) -> Tensor": the name, the
    parameters, those marked written (`!`), whether it returns tensors. (The
    alias sets the returns name: `return_aliases`.)"""
    name, paren, rest = text.partition("(")
    if not paren or "->" not in rest:
        return None
    returns = rest.rpartition("->")[2]
    parameters: list[OpParameter] = []
    written: set[str] = set()
    keyword_only = False
    for piece in schema_arguments(text):
        if piece == "*":
            keyword_only = True
            continue
        declaration, _, default = piece.partition("=")
        words = declaration.split()
        if len(words) < 2:
            continue
        kind = "".join(words[:-1])
        base = kind.split("(")[0]
        alias = kind.split("(", 1)[1].split(")", 1)[0].rstrip("!") if "(" in kind else None
        parameters.append(OpParameter(
            words[-1], None if keyword_only else len(parameters),
            base.startswith("Tensor") and "[]" not in kind,
            base.startswith("Tensor") and "[]" in kind, bool(default.strip()), alias=alias))
        if "!" in kind:
            written.add(words[-1])
    return name.strip().split(".")[0], parameters, written, "Tensor" in returns


def return_aliases(schema: str) -> frozenset[str]:
    """The alias sets a schema's returns name: {"a"} for `-> Tensor(a)`."""
    returns = schema.rpartition("->")[2]
    found, rest = set(), returns
    while "Tensor(" in rest:
        rest = rest.split("Tensor(", 1)[1]
        found.add(rest.split(")", 1)[0].rstrip("!"))
    return frozenset(found)
