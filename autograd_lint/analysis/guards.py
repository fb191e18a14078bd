"""Branch guards: which statements of a callee run under which tests of its
parameters, and whether the literal arguments of one call rule a branch out.

A helper `def quant(x, mode="vector")` that writes `x` only under
`elif mode == "clip":`, or a Triton kernel that picks its store target with a
`tl.constexpr` flag (`dst = b_ptr if A_TO_B else a_ptr`), writes nothing a
call with `mode="vector"` (or `A_TO_B=True`) does not reach. RULES.md's
"Precision first" asks for that event evidence: a write counts only under
the arguments the call actually passes.

Only literal arguments (and literal defaults of omitted parameters) decide;
a test this module cannot evaluate (`if x.numel() > n:`, a non-literal
argument) decides nothing, so both branches stay possible.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ..core.model import FunctionNode, parameter_defaults
from .syntax import assigned_names

# A parameter's literal value at one call: a constant, or a tuple of constants.
Binding = dict[str, object]
_UNKNOWN = object()


@dataclass(frozen=True)
class Guard:
    """A test on the callee's parameters that must evaluate to `holds` for the
    guarded statement to run."""

    test: ast.expr
    holds: bool


# The guards of one path to a statement; a write's alternatives are the
# paths on which it happens (`((),)`: unconditionally).
Path = tuple[Guard, ...]
UNCONDITIONAL: tuple[Path, ...] = ((),)


def statement_guards(node: FunctionNode, parameters: set[str]) -> dict[int, Path]:
    """Every AST node of the function's body (by id) with the parameter tests
    that enclose it: `if` / `elif` / `else` branches, and the statements after
    an `if` whose body always leaves the function (`if mode == "x": return`)."""
    found: dict[int, Path] = {}
    _guard_block(node.body, (), parameters - assigned_names(node), found)
    return found


def _guard_block(statements: list[ast.stmt], path: Path, parameters: set[str],
                 found: dict[int, Path]) -> None:
    for statement in statements:
        if isinstance(statement, ast.If) and _tests_parameters(statement.test, parameters):
            for inner in ast.walk(statement.test):
                found.setdefault(id(inner), path)
            _guard_block(statement.body, (*path, Guard(statement.test, True)), parameters, found)
            _guard_block(statement.orelse, (*path, Guard(statement.test, False)),
                         parameters, found)
            if _always_leaves(statement.body):  # the rest runs only when the test fails
                path = (*path, Guard(statement.test, False))
            continue
        nested = [block for field in ("body", "orelse", "finalbody")
                  for block in [getattr(statement, field, None)] if isinstance(block, list)]
        nested += [handler.body for handler in getattr(statement, "handlers", ())]
        if not nested:
            for inner in ast.walk(statement):
                found.setdefault(id(inner), path)
            continue
        for inner in _own_parts(statement):
            found.setdefault(id(inner), path)
        for block in nested:
            _guard_block(block, path, parameters, found)


def _own_parts(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a compound statement outside its nested blocks."""
    yield statement
    for field in ("test", "iter", "target", "items", "decorator_list"):
        value = getattr(statement, field, None)
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, ast.AST):
                yield from ast.walk(part)


def _always_leaves(statements: list[ast.stmt]) -> bool:
    return bool(statements) and isinstance(statements[-1], (ast.Return, ast.Raise))


def _tests_parameters(test: ast.expr, parameters: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in parameters for n in ast.walk(test))


def ruled_out(alternatives: tuple[Path, ...], binding: Binding) -> bool:
    """Whether the call's literal arguments refute every path to the write."""
    return all(any(evaluate(guard.test, binding) is (not guard.holds) for guard in path)
               for path in alternatives)


def proven(path: Path, binding: Binding) -> bool:
    """Whether the call's literal arguments make every guard of the path hold."""
    return all(evaluate(guard.test, binding) is guard.holds for guard in path)


def evaluate(test: ast.expr, binding: Binding) -> bool | None:
    """The truth of a test under literal parameter values, or None (unknown).
    Names are looked up in `binding`, and so are `ctx.attr`-like dotted names
    (`"ctx.inplace"`), for a method specialized to its caller's flags."""
    value = _value(test, binding)
    if value is _UNKNOWN:
        return None
    try:
        return bool(value)
    except Exception:
        return None


def _value(expr: ast.expr, binding: Binding) -> object:
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        return binding.get(expr.id, _UNKNOWN)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return binding.get(f"{expr.value.id}.{expr.attr}", _UNKNOWN)
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        items = [_value(element, binding) for element in expr.elts]
        return _UNKNOWN if any(item is _UNKNOWN for item in items) else tuple(items)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        truth = evaluate(expr.operand, binding)
        return _UNKNOWN if truth is None else not truth
    if isinstance(expr, ast.BoolOp):
        return _bool_op(expr, binding)
    if isinstance(expr, ast.Compare):
        return _compare(expr, binding)
    return _UNKNOWN


def _bool_op(expr: ast.BoolOp, binding: Binding) -> object:
    truths = [evaluate(value, binding) for value in expr.values]
    deciding = isinstance(expr.op, ast.Or)  # `or`: one True decides; `and`: one False
    if deciding in truths:
        return deciding
    return _UNKNOWN if None in truths else not deciding


@dataclass(frozen=True)
class Symbol:
    """A module-level constant named by a dotted name (`QPSolvers.CVXPY`, an
    enum member), by its qualified name: equal only to itself."""

    name: str


class Other:
    """A flag's value other than every literal its tests compare it with
    (`mode` neither "a" nor "b"): equal to nothing but itself."""

    def __repr__(self) -> str:
        return "<other>"


def _compare(expr: ast.Compare, binding: Binding) -> object:
    left = _value(expr.left, binding)
    for op, comparator in zip(expr.ops, expr.comparators, strict=True):
        right = _value(comparator, binding)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        try:
            if isinstance(op, ast.Eq):
                holds = left == right
            elif isinstance(op, ast.NotEq):
                holds = left != right
            elif isinstance(op, ast.Is):
                holds = left is right
            elif isinstance(op, ast.IsNot):
                holds = left is not right
            elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, tuple):
                holds = (left in right) == isinstance(op, ast.In)
            else:
                return _UNKNOWN  # orderings and other containers: not a mode test
        except Exception:
            return _UNKNOWN
        if not holds:
            return False
        left = right
    return True


def call_binding(call: ast.Call, callee: FunctionNode,
                 known: dict[int, object] | None = None) -> Binding:
    """The callee's parameters the call gives literal values: literal
    arguments by position or keyword, and literal defaults of those it omits.
    `known`: the values of argument expressions (by id) that the caller's
    specialization decided (a flag passed on: `helper(x, inplace=inplace)`)."""
    positional = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    binding: Binding = {}
    passed: set[str] = set()
    if any(isinstance(argument, ast.Starred) for argument in call.args) or \
            any(keyword.arg is None for keyword in call.keywords):
        return binding  # `f(*args)` / `f(**kw)`: which parameter gets what is unknown
    for name, argument in zip(positional, call.args, strict=False):
        passed.add(name)
        _bind_literal(binding, name, argument, known)
    for keyword in call.keywords:
        passed.add(keyword.arg)  # type: ignore[arg-type]
        _bind_literal(binding, keyword.arg, keyword.value, known)  # type: ignore[arg-type]
    defaults = parameter_defaults(callee)
    defaults.update({a.arg: d for a, d in zip(callee.args.kwonlyargs, callee.args.kw_defaults,
                                              strict=True) if d is not None})
    for name, default in defaults.items():
        if name not in passed:
            _bind_literal(binding, name, default)
    return binding


def _bind_literal(binding: Binding, name: str, expr: ast.expr,
                  known: dict[int, object] | None = None) -> None:
    value = _value(expr, {})
    if value is _UNKNOWN and known is not None:
        value = known.get(id(expr), _UNKNOWN)
    if value is not _UNKNOWN:
        binding[name] = value
