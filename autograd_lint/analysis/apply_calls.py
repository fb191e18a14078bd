"""Where a Function is applied: what each `Fn.apply(...)` call passes.

The way the project calls a Function decides facts no signature shows
(RULES.md, "Precision first"): the value a flag has for callers that opt
into nothing (opt_in.py), a literal default that no call uses, optional
inputs nobody passes, and inputs that are state an object keeps alive
(`Fn.apply(x, self.weight)`: a module's parameter).

Only the calls of forward's own module are read (the wrapper beside the
Function, the usual layout): a call elsewhere is not seen, so each question
asked here must stay silent when the calls seen do not settle it. A module
parsed sparsely holds every statement that names `.apply` (relevance.py's
statement keeper), so its calls are read without parsing the file whole.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.model import all_parameter_defaults
from .syntax import NOT_LITERAL, literal_value

if TYPE_CHECKING:
    from ..core.project import FunctionClass


@dataclass(frozen=True)
class Passed:
    """One argument of an `apply` call: a literal, the literal default of the
    enclosing def's parameter passed on (`default`), an attribute of an
    object (`attribute`: `self.weight`), a value made in the call's own
    expression (`temporary`: `torch.mul(x, p)`), or `unknown`."""

    how: str
    value: object = None


@dataclass(frozen=True)
class ApplyCall:
    arguments: tuple[Passed, ...]  # by position, up to a `*args` if any
    starred: bool  # a `*args` follows: the positions from there on are unknown
    keywords: frozenset[str] = frozenset()  # names passed as `name=...` (None: `**kw`)

    def at(self, index: int) -> Passed | None:
        """What the call passes at a position (None: it passes nothing there)."""
        if index < len(self.arguments):
            return self.arguments[index]
        return Passed("unknown") if self.starred else None


def apply_calls(fn: FunctionClass) -> list[ApplyCall]:
    """Every `Fn.apply(...)` call of forward's module, by what it passes."""
    project = fn.project
    module = fn.module
    key = f"apply calls:{id(module)}"
    if project is not None and key in project.cache:
        by_class = project.cache[key]
    else:
        by_class = _apply_calls(module.tree)
        if project is not None:
            project.cache[key] = by_class
    return by_class.get(fn.name, [])  # type: ignore[union-attr]


def never_passes_beyond(fn: FunctionClass, count: int) -> bool:
    """Whether `apply` calls are seen and none passes more than `count`
    arguments (none seen: unknown, so False)."""
    calls = apply_calls(fn)
    return bool(calls) and not any(len(call.arguments) > count or call.starred
                                   for call in calls)


def never_passes_keyword(fn: FunctionClass, name: str) -> bool:
    """Whether `apply` calls are seen and none passes `name=...` (nor a
    `**mapping`); none seen: unknown, so False."""
    calls = apply_calls(fn)
    return bool(calls) and not any(name in call.keywords or "**" in call.keywords
                                   for call in calls)


def temporary_everywhere(fn: FunctionClass, index: int) -> bool:
    """Whether every `apply` call seen passes a temporary at this position
    (`Fn.apply(torch.mul(x, p))`): no caller keeps it to see it change."""
    calls = apply_calls(fn)
    return bool(calls) and all((passed := call.at(index)) is not None
                               and passed.how == "temporary" for call in calls)


def held_by_owner(fn: FunctionClass, index: int) -> bool:
    """Whether every `apply` call seen passes an object's attribute at this
    position (`self.weight`): state its owner keeps alive anyway."""
    calls = apply_calls(fn)
    return bool(calls) and all((passed := call.at(index)) is not None
                               and passed.how == "attribute" for call in calls)


def _apply_calls(tree: ast.AST) -> dict[str, list[ApplyCall]]:
    """Every `Fn.apply(...)` call of a module (also `self.Fn.apply(...)`, and
    `run = Fn.apply; run(...)` in one def), by the class's name."""
    enclosing = enclosing_defs(tree)
    aliases: dict[tuple[int, str], str] = {}  # (enclosing def id, local name) -> class name
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and \
                (name := _applied_class(node.value)) is not None:
            aliases[(id(enclosing.get(id(node))), node.targets[0].id)] = name
    found: dict[str, list[ApplyCall]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _applied_class(node.func)
        if name is None and isinstance(node.func, ast.Name):
            name = aliases.get((id(enclosing.get(id(node))), node.func.id))
        if name is None:
            continue
        passed: list[Passed] = []
        starred = False
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                starred = True
                break
            passed.append(_argument(argument, enclosing.get(id(node))))
        keywords = frozenset(k.arg or "**" for k in node.keywords)
        found.setdefault(name, []).append(ApplyCall(tuple(passed), starred, keywords))
    return found


def _applied_class(node: ast.expr) -> str | None:
    """`Fn.apply`, `self.Fn.apply`, `mod.Fn.apply`: the class's name."""
    if not (isinstance(node, ast.Attribute) and node.attr == "apply"):
        return None
    owner = node.value
    if isinstance(owner, ast.Name):
        return owner.id
    return owner.attr if isinstance(owner, ast.Attribute) else None


def _argument(argument: ast.expr,
              enclosing: ast.FunctionDef | ast.AsyncFunctionDef | None) -> Passed:
    value = literal_value(argument)
    if value is not NOT_LITERAL:
        return Passed("literal", value)
    if isinstance(argument, ast.Name) and enclosing is not None:
        defaults = all_parameter_defaults(enclosing)
        if argument.id in defaults and argument.id not in _rebound(enclosing):
            default = literal_value(defaults[argument.id])
            if default is not NOT_LITERAL:
                return Passed("default", default)
    if _attribute_chain(argument):
        return Passed("attribute")
    if isinstance(argument, (ast.Call, ast.BinOp, ast.UnaryOp)):
        return Passed("temporary")  # a value made for this call: the caller keeps no name for it
    return Passed("unknown")


def _attribute_chain(node: ast.expr) -> bool:
    """`self.weight`, `layer.attn.bias`: an attribute of a named object."""
    if not isinstance(node, ast.Attribute):
        return False
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _rebound(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {target.id for inner in ast.walk(node)
            if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for target in (inner.targets if isinstance(inner, ast.Assign) else [inner.target])
            if isinstance(target, ast.Name)}


def enclosing_defs(tree: ast.AST) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The innermost def around each call and assignment (by id); iterative,
    for deep trees."""
    found: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    stack: list[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]] = [(tree, None)]
    while stack:
        node, current = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Call, ast.Assign)) and current is not None:
                found[id(child)] = current
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else current
            stack.append((child, inner))
    return found
