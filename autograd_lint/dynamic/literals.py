"""The string literals forward compares its names with: the values a string
parameter (or a bundle's string field) takes when inputs are synthesized."""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any


def compared_strings(function: Any) -> dict[str, list[str]]:
    """The string literals forward compares each name with (`mode == "global"`,
    `kind in ("a", "b")`), in source order: the values a string parameter takes."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(function))))
    except (OSError, TypeError, ValueError, SyntaxError):
        return {}
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left, right = node.left, node.comparators[0]
        if not isinstance(left, (ast.Name, ast.Attribute)):
            left, right = right, left
        if isinstance(left, ast.Name):
            key = left.id
        elif isinstance(left, ast.Attribute):
            key = f".{left.attr}"  # `params.mode == "x"`: a bundle's field
        else:
            continue
        items = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str) and \
                    item.value not in found.setdefault(key, []):
                found[key].append(item.value)
    return {name: values for name, values in found.items() if values}
