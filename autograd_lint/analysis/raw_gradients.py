"""Which values in backward are still the incoming gradient as autograd
handed it, or a view of it: not made contiguous, copied or recomputed.

autograd gives backward gradients of any layout: a narrow view (`torch.cat`'s
backward), an expanded stride-0 tensor (`.sum()`'s), a transpose. Code that
assumes a layout (a Triton kernel indexing by shape: AGF216) needs to know
which expressions still have the layout autograd chose. Must, not may:

- only view operations that never copy pass the gradient on (`.view()`,
  `.t()`, basic indexing, `.detach()`); `.reshape()`, `.flatten()`, `.to()`,
  `.contiguous()`, `.clone()` and any call may return a fresh buffer;
- after a branch, a name is the gradient only when every branch that falls
  through leaves it so (`if not dy.is_contiguous(): dy = dy.contiguous()`);
- a loop, `try` or `match` that rebinds a name ends it there.

`gradient_calls` walks backward once and gives every call with what each
name holds where the call runs; `raw_gradient` says what an expression is.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from ..core.model import FunctionNode
from .syntax import assigned_names, constant_index, rebound_names

# Tensor methods that return a view sharing the receiver's memory, never a
# copy (`.reshape`, `.flatten`, `.contiguous`, `.to` may copy: not here).
_VIEW_METHODS = frozenset({
    "view", "view_as", "t", "transpose", "permute", "expand", "expand_as", "squeeze",
    "unsqueeze", "narrow", "select", "detach", "unflatten", "movedim", "moveaxis",
    "swapaxes", "swapdims", "diagonal", "unfold",
})
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data"})
# Methods that replace a tensor's storage or layout in place.
_RELAYOUTS = frozenset({"set_", "resize_", "resize_as_", "as_strided_", "squeeze_",
                        "unsqueeze_", "transpose_", "t_", "swapdims_", "swapaxes_"})


@dataclass(frozen=True)
class RawGradient:
    """An expression that is backward's incoming gradient, or a view of it."""

    parameter: str  # backward's parameter it comes from (`dy`, or `grads` for `*grads`)
    text: str  # the gradient as written: `dy`, `grads[0]`
    via: tuple[str, ...] = ()  # the view operations on the way (`.view()`, `[...]`)
    many: bool = False  # the `*grads` tuple itself: its elements are gradients

    def viewed(self, how: str) -> RawGradient:
        return replace(self, via=(*self.via, how))


Env = Mapping[str, RawGradient]


def raw_gradient(expr: ast.expr, env: Env) -> RawGradient | None:
    """What `expr` is, where names hold what `env` says: a gradient (or a
    view of one), or None (anything else, or not known)."""
    if isinstance(expr, ast.Name):
        return env.get(expr.id)
    if isinstance(expr, ast.NamedExpr):
        return raw_gradient(expr.value, env)
    if isinstance(expr, ast.Subscript):
        return _subscript(expr, env)
    if isinstance(expr, ast.Attribute):
        base = raw_gradient(expr.value, env)
        return base.viewed(f".{expr.attr}") if base is not None and not base.many and \
            expr.attr in _VIEW_ATTRIBUTES else None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        base = raw_gradient(expr.func.value, env)
        return base.viewed(f".{expr.func.attr}()") if base is not None and not base.many and \
            expr.func.attr in _VIEW_METHODS else None
    if isinstance(expr, ast.IfExp):
        body, orelse = raw_gradient(expr.body, env), raw_gradient(expr.orelse, env)
        return body if body is not None and orelse is not None and \
            body.text == orelse.text and not body.many else None
    return None


def _subscript(expr: ast.Subscript, env: Env) -> RawGradient | None:
    base = raw_gradient(expr.value, env)
    if base is None:
        return None
    if base.many:  # `grads[0]`: an element of `*grads` is a gradient itself
        index = constant_index(expr.slice)
        return None if index is None else \
            RawGradient(base.parameter, f"{base.text}[{index}]")
    return base.viewed("[...]") if _basic_index(expr.slice) else None


def _basic_index(index: ast.expr) -> bool:
    """Indexing that makes a view (slices, integers, None, `...`); an index
    that may be a tensor or a list copies."""
    if isinstance(index, ast.Tuple):
        return all(_basic_index(element) for element in index.elts)
    if isinstance(index, ast.Slice):
        return True
    if isinstance(index, ast.Constant):
        return index.value is None or index.value is Ellipsis or type(index.value) is int
    return constant_index(index) is not None


def initial_env(gradients: list[str], vararg: str | None) -> dict[str, RawGradient]:
    env = {name: RawGradient(name, name) for name in gradients}
    if vararg is not None:
        env[vararg] = RawGradient(vararg, vararg, many=True)
    return env


def gradient_calls(node: FunctionNode, env: Env) -> list[tuple[ast.Call, Env]]:
    """Every call in the body (not in nested defs, lambdas or
    comprehensions), with what each name holds where it runs."""
    flow = _Flow()
    flow.block(node.body, dict(env))
    return flow.calls


class _Flow:
    """A walk of one body, statement by statement, with the names that
    hold gradients (an `Env`; None once no path falls through)."""

    def __init__(self) -> None:
        self.calls: list[tuple[ast.Call, Env]] = []

    def block(self, statements: list[ast.stmt], env: Env | None) -> Env | None:
        for statement in statements:
            if env is None:
                break  # unreachable
            env = self.statement(statement, env)
        return env

    def statement(self, statement: ast.stmt, env: Env) -> Env | None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return _without(env, {statement.name})
        if isinstance(statement, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            self._record(statement, env)
            return None
        if isinstance(statement, ast.If):
            self._record(statement.test, env)
            return _join(self.block(statement.body, env), self.block(statement.orelse, env))
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                self._record(item.context_expr, env)
            targets = [i.optional_vars for i in statement.items if i.optional_vars is not None]
            return self.block(statement.body, _without(env, set(rebound_names(targets))))
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match)) or \
                type(statement).__name__ == "TryStar":
            return self._compound(statement, env)
        self._record(statement, env)
        return _after_simple(statement, env)

    def _compound(self, statement: ast.stmt, env: Env) -> Env:
        """A loop, `try` or `match`: what it rebinds anywhere holds no
        gradient at its start (a later iteration, a handler) nor after it."""
        for field in ("iter", "test", "subject"):
            part = getattr(statement, field, None)
            if isinstance(part, ast.expr):
                self._record(part, env)
        entry = _without(env, assigned_names(statement) | _captures(statement))
        first = env if isinstance(statement, (ast.Try, ast.Match)) or \
            type(statement).__name__ == "TryStar" else entry
        self.block(getattr(statement, "body", []), first)
        for block in _inner_blocks(statement):
            self.block(block, entry)
        return entry

    def _record(self, node: ast.AST, env: Env) -> None:
        for call in _own_calls(node):
            self.calls.append((call, env))


def _after_simple(statement: ast.stmt, env: Env) -> Env:
    """The names after an assignment or another simple statement."""
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            env = _bind(target, statement.value, env)
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        env = _bind(statement.target, statement.value, env)
    else:
        env = _without(env, assigned_names(statement))
    if isinstance(statement, ast.Delete):
        env = _without(env, set(rebound_names(statement.targets)))
    walrus = {n.target.id for n in ast.walk(statement) if isinstance(n, ast.NamedExpr)}
    return _without(env, walrus | _relaid(statement))


def _bind(target: ast.expr, value: ast.expr, env: Env) -> Env:
    """The names after `target = value` (the value read before any binding)."""
    if isinstance(target, ast.Name):
        raw = raw_gradient(value, env)
        out = dict(_without(env, {target.id}))
        if raw is not None:
            out[target.id] = raw
        return out
    if isinstance(target, (ast.Tuple, ast.List)) and \
            not any(isinstance(e, ast.Starred) for e in target.elts):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                and not any(isinstance(e, ast.Starred) for e in value.elts):
            raws = [raw_gradient(element, env) for element in value.elts]
        else:
            whole = raw_gradient(value, env)
            raws = [RawGradient(whole.parameter, f"{whole.text}[{i}]")
                    if whole is not None and whole.many else None
                    for i in range(len(target.elts))]
        out = dict(_without(env, set(rebound_names(target.elts))))
        for element, raw in zip(target.elts, raws, strict=True):
            if isinstance(element, ast.Name) and raw is not None:
                out[element.id] = raw
            elif not isinstance(element, ast.Name):
                out = dict(_without(out, set(rebound_names([element]))))
        return out
    return _without(env, set(rebound_names([target])))


def _relaid(statement: ast.stmt) -> set[str]:
    """Names whose tensor changes its storage or layout in place here."""
    return {call.func.value.id for call in _own_calls(statement)
            if isinstance(call.func, ast.Attribute) and call.func.attr in _RELAYOUTS
            and isinstance(call.func.value, ast.Name)}


def _without(env: Env, names: set[str]) -> Env:
    if not names & env.keys():
        return env
    return {name: raw for name, raw in env.items() if name not in names}


def _join(a: Env | None, b: Env | None) -> Env | None:
    """What holds after two paths meet: a gradient on both (a path that
    does not fall through adds nothing)."""
    if a is None or b is None:
        return a if b is None else b
    return {name: raw for name, raw in a.items() if b.get(name) == raw}


def _captures(statement: ast.stmt) -> set[str]:
    """Names a `match` pattern or an `except ... as name` binds."""
    names: set[str] = set()
    for inner in ast.walk(statement):
        for field in ("name", "rest"):
            value = getattr(inner, field, None)
            if isinstance(value, str) and isinstance(inner, (ast.pattern, ast.ExceptHandler)):
                names.add(value)
    return names


def _inner_blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The blocks of a compound statement after its body."""
    for field in ("orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _own_calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls of a statement or expression, not those of nested scopes
    (defs, lambdas, comprehensions: their names are not these)."""
    stack = [node]
    while stack:
        inner = stack.pop()
        if isinstance(inner, ast.Call):
            yield inner
        for child in ast.iter_child_nodes(inner):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                      ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                      ast.GeneratorExp)):
                stack.append(child)
