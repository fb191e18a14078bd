"""The string literals forward compares its names with: the values a string
parameter (or a bundle's string field) takes when inputs are synthesized.
Comparisons in the functions forward hands the name to count too (a kernel
launch `act_kernel[grid](x, act_func)` whose kernel compares `act_func ==
'relu'`), two calls deep."""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

# How deep the functions forward calls are read for comparisons.
_CALL_DEPTH = 2


def compared_strings(function: Any, depth: int = _CALL_DEPTH) -> dict[str, list[str]]:
    """The string literals forward compares each name with (`mode == "global"`,
    `kind in ("a", "b")`), in source order: the values a string parameter
    takes; then those the functions it passes a name to compare their
    parameter with."""
    function = _python_function(function)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, ValueError, SyntaxError):
        return {}
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            _add_compared(node, found)
    if depth > 0:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                _add_passed(node, function, depth, found)
    return {name: values for name, values in found.items() if values}


def _add_compared(node: ast.Compare, found: dict[str, list[str]]) -> None:
    left, right = node.left, node.comparators[0]
    if not isinstance(left, (ast.Name, ast.Attribute)):
        left, right = right, left
    if isinstance(left, ast.Name):
        key = left.id
    elif isinstance(left, ast.Attribute):
        key = f".{left.attr}"  # `params.mode == "x"`: a bundle's field
    else:
        return
    items = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            _add(found, key, [item.value])


def _add_passed(call: ast.Call, caller: Any, depth: int, found: dict[str, list[str]]) -> None:
    """The literals a callee compares its parameters with, for the names the
    call passes it (positionally or by keyword)."""
    callee = _callee(call.func, caller)
    if callee is None:
        return
    try:
        parameters = list(inspect.signature(callee).parameters)
    except (TypeError, ValueError):
        return
    passed = {parameters[i]: a.id for i, a in enumerate(call.args)
              if i < len(parameters) and isinstance(a, ast.Name)}
    passed.update({k.arg: k.value.id for k in call.keywords
                   if k.arg is not None and isinstance(k.value, ast.Name)})
    if not passed:
        return
    inner = compared_strings(callee, depth - 1)
    for parameter, name in passed.items():
        _add(found, name, inner.get(parameter, []))


def _callee(node: ast.expr, caller: Any) -> Any:
    """The function a call's callee names in the caller's module (`f(...)`,
    `kernel[grid](...)`), as Python code; None when it is not one."""
    if isinstance(node, ast.Subscript):  # a Triton launch: `kernel[grid](...)`
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    value = getattr(caller, "__globals__", {}).get(node.id)
    value = _python_function(value)
    return value if inspect.isfunction(value) else None


def _python_function(value: Any) -> Any:
    """A Triton kernel (and its autotuner or heuristics) as its Python
    function; a decorated function unwrapped."""
    for _ in range(4):
        inner = getattr(value, "fn", None)
        if inner is None or inner is value:
            break
        value = inner
    try:
        return inspect.unwrap(value)
    except (ValueError, TypeError):
        return value


def _add(found: dict[str, list[str]], key: str, values: list[str]) -> None:
    known = found.setdefault(key, [])
    known.extend(v for v in values if v not in known)
