"""How rules build their fixes: one builder per kind of fix, turning the AST
nodes a rule holds into a `Fix` of literal edits (applied by
`reporting/fixes.py`)."""
from __future__ import annotations

import ast

from autograd_lint.core.findings import SAFE, UNSAFE, Edit, Fix


def add_staticmethod(method: ast.FunctionDef | ast.AsyncFunctionDef) -> Fix:
    """AGF103: `@staticmethod` above the method's first decorator (or its def)."""
    # Decorators start at the def's own indentation.
    line = method.decorator_list[0].lineno if method.decorator_list else method.lineno
    return Fix("Add `@staticmethod`", SAFE,
               (Edit.insert(line, method.col_offset, "@staticmethod\n"),))


def instance_call_to_apply(instantiation: ast.Call) -> Fix | None:
    """AGF105: `MyFn()(x)` -> `MyFn.apply(x)`; only an argument-less instantiation
    that is called at once (anything else may rely on the instance)."""
    if instantiation.args or instantiation.keywords or instantiation.end_lineno is None:
        return None
    func = instantiation.func
    if func.end_lineno is None or func.end_col_offset is None:
        return None
    edit = Edit(func.end_lineno, func.end_col_offset, instantiation.end_lineno,
                instantiation.end_col_offset or 0, ".apply")
    return Fix("Call `.apply(...)` instead of instantiating the Function", SAFE, (edit,))


def data_read_to_detach(attribute: ast.Attribute) -> Fix | None:
    """AGF008: a read of `x.data` -> `x.detach()` (same values, no autograd history,
    and in-place changes through it stay visible to the version counter)."""
    value = attribute.value
    if value.end_lineno is None or value.end_col_offset is None or attribute.end_lineno is None:
        return None
    edit = Edit(value.end_lineno, value.end_col_offset, attribute.end_lineno,
                attribute.end_col_offset or 0, ".detach()")
    return Fix("Replace `.data` with `.detach()`", SAFE, (edit,))


def rename_attribute(attribute: ast.Attribute, new_name: str) -> Fix | None:
    """AGF213: `ctx.saved_variables` -> `ctx.saved_tensors` (an alias of it)."""
    if attribute.end_lineno is None or attribute.end_col_offset is None:
        return None
    start = attribute.end_col_offset - len(attribute.attr.encode())
    edit = Edit(attribute.end_lineno, start, attribute.end_lineno, attribute.end_col_offset,
                new_name)
    return Fix(f"Use `{new_name}`", SAFE, (edit,))


def cuda_autocast_to_amp(decorator: ast.expr, kind: str) -> Fix | None:
    """AGF213: `torch.cuda.amp.custom_fwd(cast_inputs=t)` ->
    `torch.amp.custom_fwd(device_type="cuda", cast_inputs=t)` (what the
    deprecated one calls). Only a one-line decorator whose arguments are
    keywords."""
    call = decorator if isinstance(decorator, ast.Call) else None
    if decorator.end_lineno != decorator.lineno or decorator.end_col_offset is None or \
            (call is not None and (call.args or any(k.arg is None for k in call.keywords))):
        return None
    keywords = [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords] if call else []
    arguments = ", ".join(['device_type="cuda"', *keywords])
    text = f"torch.amp.{kind}({arguments})"
    edit = Edit(decorator.lineno, decorator.col_offset, decorator.lineno,
                decorator.end_col_offset, text)
    return Fix(f"Use `torch.amp.{kind}(device_type=\"cuda\")`", SAFE, (edit,))


def append_none_gradients(returned: ast.expr, missing: int, *, is_tuple: bool) -> Fix | None:
    """AGF101: `return ga, gb` -> `return ga, gb, None`. Unsafe: the missing
    gradients may belong to inputs that need one."""
    if missing <= 0:
        return None
    if is_tuple:
        if not isinstance(returned, ast.Tuple) or not returned.elts:
            return None
        last: ast.expr = returned.elts[-1]
    else:
        last = returned
    if last.end_lineno is None or last.end_col_offset is None:
        return None
    nones = ", ".join(["None"] * missing)
    text = f", {nones}"
    if not is_tuple and _needs_parentheses(returned):
        return None
    edit = Edit.insert(last.end_lineno, last.end_col_offset, text)
    return Fix(f"Return `None` for the {missing} missing gradient"
               f"{'' if missing == 1 else 's'}", UNSAFE, (edit,))


def clone_gradient(method: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Fix | None:
    """AGF006: `name = name.clone()` as backward's first statement. Unsafe: it
    costs a copy, and code that relied on the shared buffer sees a new one."""
    body = method.body
    first = body[0]
    if _is_docstring(first) and len(body) > 1:
        first = body[1]
    if first.lineno == method.lineno or _is_docstring(first):
        return None  # a one-line def, or nothing to insert before
    edit = Edit.insert(first.lineno, first.col_offset, f"{name} = {name}.clone()\n")
    return Fix(f"Clone `{name}` before changing it", UNSAFE, (edit,))


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
        isinstance(node.value.value, str)


def _needs_parentheses(node: ast.expr) -> bool:
    """`return a if c else b` + `, None` would bind differently."""
    return isinstance(node, (ast.IfExp, ast.Lambda, ast.NamedExpr, ast.Yield, ast.YieldFrom,
                             ast.Starred))
