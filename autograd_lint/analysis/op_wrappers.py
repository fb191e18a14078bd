"""Project functions that register ops for their callers: wrappers called
with an op's name and function (`direct_register_custom_op("name", fn,
mutates_args=[...], fake_impl=f)`), and decorator factories whose inner
decorator hands the decorated def to `custom_op` (`@cute_op("ns::name",
mutates_args=())`). For each, which of its parameters is the op's name,
function, mutated arguments and fake (analysis/op_model.py pairs them with a
call's arguments)."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..core.model import ModuleInfo, Scope

if TYPE_CHECKING:
    from ..core.model import FunctionNode
    from ..core.project import Project

OP_MAKERS = {"torch.library.custom_op": "custom_op", "torch.library.triton_op": "triton_op",
             "torch._library.custom_ops.custom_op": "custom_op",
             "torch._library.triton.triton_op": "triton_op"}
FAKE_MAKERS = frozenset({"torch.library.register_fake", "torch.library.impl_abstract",
                         "torch.library.register_abstract"})


def wrapper_roles(node: FunctionNode, module: ModuleInfo, project: Project | None,
                  enclosing: set[str] | None = None) -> dict[str, str] | None:
    """For a function that registers its arguments as an op, which of its
    parameters is the op's name, function, mutated arguments and fake (None
    when it is no such wrapper): its body hands them to `custom_op`,
    `infer_schema`, a library's `define`/`impl`, or a fake registrar."""
    cache = project.cache.setdefault("op_wrappers", {}) if project is not None else {}
    key = id(node)
    if key in cache and enclosing is None:  # type: ignore[operator]
        return cache[key]  # type: ignore[index]
    # (`enclosing`: a factory's parameters, which its inner decorator reads too)
    parameters = {a.arg for a in [*node.args.posonlyargs, *node.args.args,
                                  *node.args.kwonlyargs]} | (enclosing or set())
    inner = module.scopes.get(id(node))
    scope: Scope = inner if inner is not None else module.scope
    roles: dict[str, str] = {}
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        name = scope.resolve(call.func) if isinstance(call.func, (ast.Name, ast.Attribute)) \
            else None
        last = call.func.attr if isinstance(call.func, ast.Attribute) else name
        names = [a.id if isinstance(a, ast.Name) else None for a in call.args]
        keywords = {k.arg: k.value.id for k in call.keywords
                    if k.arg and isinstance(k.value, ast.Name)}
        if name in OP_MAKERS or name == "torch.library.infer_schema":
            fn = names[1] if name in OP_MAKERS and len(names) > 1 else \
                names[0] if name == "torch.library.infer_schema" and names else None
            if name in OP_MAKERS and names and names[0] in parameters:
                roles["name"] = names[0]  # type: ignore[assignment]
            if fn in parameters:
                roles["fn"] = fn  # type: ignore[assignment]
            if keywords.get("mutates_args") in parameters:
                roles["mutates"] = keywords["mutates_args"]
        elif last in ("impl",) and len(names) >= 2 and names[1] in parameters:
            roles.setdefault("fn", names[1])  # type: ignore[arg-type]
            if names[0] in parameters:
                roles.setdefault("name", names[0])  # type: ignore[arg-type]
        elif (last in ("_register_fake", "register_fake") or name in FAKE_MAKERS) and \
                len(names) >= 2 and names[1] in parameters:
            roles["fake"] = names[1]  # type: ignore[assignment]
    found = roles if "fn" in roles and "name" in roles else None
    if enclosing is None:
        cache[key] = found  # type: ignore[index]
    return found


def factory_roles(node: FunctionNode, module: ModuleInfo,
                  project: Project | None) -> dict[str, str] | None:
    """For a decorator factory (`def cute_op(name, mutates_args, **kw): def
    wrap(fn): return custom_op(name, fn, mutates_args=mutates_args, **kw);
    return wrap`), which of its parameters is the op's name and mutated
    arguments (None when it is no such factory): the decorated def is the
    op's function."""
    cache = project.cache.setdefault("op_factories", {}) if project is not None else {}
    key = id(node)
    if key not in cache:  # type: ignore[operator]
        cache[key] = _factory_roles(node, module)  # type: ignore[index]
    return cache[key]  # type: ignore[index]


def _factory_roles(node: FunctionNode, module: ModuleInfo) -> dict[str, str] | None:
    outer = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    returned = {r.value.id for r in ast.walk(node)
                if isinstance(r, ast.Return) and isinstance(r.value, ast.Name)}
    for inner in node.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                inner.name not in returned or not inner.args.args:
            continue
        roles = wrapper_roles(inner, module, None, outer)
        if roles is not None and roles.get("fn") == inner.args.args[0].arg:
            return {role: name for role, name in roles.items() if role != "fn"}
    return None
