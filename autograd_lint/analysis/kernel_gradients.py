"""Triton launches in backward that hand a kernel the incoming gradient as
autograd gave it, where the kernel indexes it by shape (AGF216).

A finding needs every premise as a fact (RULES.md, "Must, not may"):

- the argument is backward's gradient or a view of it on the path to the
  launch (raw_gradients.py): not after `.contiguous()`, `.reshape()`, a copy
  or any call;
- the launched name is a `@triton.jit` kernel the project defines (not a
  local, not a wrapper), the call binds its parameters plainly (no `*args`,
  `**kwargs`) and the gradient lands on a pointer the kernel loads or stores
  at an offset (triton_kernels.py);
- no stride decides that pointer's addresses: none of the parameters they are
  computed from is named like a stride or given a stride by the launch, and
  backward never asks the gradient's layout (`.stride()`,
  `.is_contiguous()`, on it or on what it computes from it).

Silent otherwise: a decorator on backward the analysis does not know
(`@ensure_contiguous`), a scalar output (its gradient is one element).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from ..core.model import FunctionNode, ModuleInfo, Scope
from ..core.project import FunctionClass, Method
from .effects import Effects, effects_of
from .function_facts import FunctionFacts
from .guards import call_binding
from .raw_gradients import Env, RawGradient, gradient_calls, initial_env, raw_gradient
from .syntax import assigned_names, parameters_of
from .triton_kernels import PointerIndexing, is_kernel, pointer_indexing

# Decorators that leave backward's arguments as autograd passes them.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "once_differentiable", "custom_bwd",
                               "no_grad", "inference_mode"})
# Questions about a tensor's layout: code that asks them handles layouts.
_LAYOUT_QUERIES = frozenset({"stride", "strides", "is_contiguous",
                             "is_non_overlapping_and_dense", "storage_offset", "as_strided"})
# Reads of a tensor that say nothing of its memory (a shape is no layout).
_METADATA = frozenset({"shape", "size", "numel", "dim", "ndim", "ndimension", "dtype",
                       "device", "is_cuda", "element_size", "nelement", "new_empty",
                       "new_zeros", "new_ones", "new_full", "get_device", "requires_grad"})


@dataclass(frozen=True)
class GradientLaunch:
    """A gradient handed to a kernel that indexes it by shape."""

    argument: ast.expr  # the gradient as the launch passes it
    gradient: RawGradient
    kernel: str  # the launched kernel as written
    parameter: str  # the kernel's pointer parameter that receives it


def shape_indexed_launches(facts: FunctionFacts) -> list[GradientLaunch]:
    """The launches of the Function's own backward (and vjp) that pass a
    gradient to a kernel indexing it by shape."""
    fn = facts.fn
    if facts.outputs_non_differentiable:
        return []  # backward never runs
    effects = effects_of(fn.project) if fn.project is not None else Effects(None)
    scalar_outputs = _scalar_outputs(facts)
    found: list[GradientLaunch] = []
    for name in ("backward", "vjp"):
        method = fn.own.get(name)
        if method is not None and method.node is not None and _plain(method):
            found.extend(_Launches(fn, method, effects, scalar_outputs).found())
    return found


def _scalar_outputs(facts: FunctionFacts) -> frozenset[int]:
    """forward's output positions that hold a 0-d tensor on every return:
    their gradient is one element, which every layout stores alike."""
    output = facts.output
    if output is None:
        return frozenset()
    if output.elems is not None and not output.is_list:
        return frozenset(i for i, element in enumerate(output.elems) if element.scalar)
    return frozenset({0}) if output.scalar else frozenset()


def _plain(method: Method) -> bool:
    """No decorator that may change the gradients (`@ensure_contiguous`):
    torch's own, and a project's alias of `custom_bwd` (`amp_custom_bwd =
    partial(torch.amp.custom_bwd, ...)`), which only sets autocast."""
    names = [decorator.rsplit(".", 1)[-1] for decorator in method.decorators]
    return all(name in _PLAIN_DECORATORS or name.endswith("custom_bwd") for name in names)


class _Launches:
    """The launches of one backward method."""

    def __init__(self, fn: FunctionClass, method: Method, effects: Effects,
                 scalar_outputs: frozenset[int]) -> None:
        assert method.node is not None
        self.node: FunctionNode = method.node
        self.module: ModuleInfo = method.owner.module
        self.scope: Scope = method.owner.info.scope
        self.effects = effects
        params = method.params[1:] if fn.ctx_name(method) is not None else method.params
        self.gradients = [arg.arg for i, arg in enumerate(params) if i not in scalar_outputs]
        # `*grads`: which element is a scalar's gradient is not tracked, so none is judged then.
        self.vararg = method.vararg.arg if method.vararg is not None and not scalar_outputs \
            else None
        self.params = {a.arg for a in params}
        self._indexing: dict[tuple[int, int], PointerIndexing] = {}

    @cached_property
    def local(self) -> set[str]:
        """Names the body binds: a launch of one may run any kernel."""
        return assigned_names(self.node) | self.params | _defined(self.node)

    @cached_property
    def strides(self) -> set[str]:
        return _stride_names(_bindings(self.node))

    def found(self) -> Iterator[GradientLaunch]:
        if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
                   for n in ast.walk(self.node)):
            return  # no launch: nothing to judge (the common case, kept cheap)
        queried = _layout_queried(self.node, [*self.gradients, *filter(None, [self.vararg])])
        env = initial_env([g for g in self.gradients if g not in queried],
                          self.vararg if self.vararg not in queried else None)
        if not env:
            return
        for call, names in gradient_calls(self.node, env):
            yield from self._launch(call, names)

    def _launch(self, call: ast.Call, env: Env) -> Iterator[GradientLaunch]:
        kernel = self._kernel(call)
        if kernel is None:
            return
        bound = _bound_arguments(call, kernel)
        for parameter, argument in bound.items():
            raw = raw_gradient(argument, env)
            if raw is None or raw.many:
                continue
            indexing = self._indexing_of(call, kernel)
            if parameter in indexing.indexed and \
                    not self._strided(indexing.depends.get(parameter, frozenset()), bound):
                target = call.func.value  # type: ignore[attr-defined]
                yield GradientLaunch(argument, raw, ast.unparse(target), parameter)

    def _kernel(self, call: ast.Call) -> FunctionNode | None:
        """The kernel a plain launch `kernel[grid](...)` runs, when known."""
        if not isinstance(call.func, ast.Subscript) or \
                any(isinstance(a, ast.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            return None
        target = call.func.value
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(target, (ast.Name, ast.Attribute)) or \
                not isinstance(root, ast.Name) or root.id in self.local:
            return None  # a local (`fn = kernels[k]`) may be any kernel
        found = self.effects.callee(target, self.scope, self.module)
        return found[0] if found is not None and is_kernel(found[0]) else None

    def _indexing_of(self, call: ast.Call, kernel: FunctionNode) -> PointerIndexing:
        key = (id(call), id(kernel))
        if key not in self._indexing:
            self._indexing[key] = pointer_indexing(kernel, call_binding(call, kernel))
        return self._indexing[key]

    def _strided(self, depends: frozenset[str], bound: dict[str, ast.expr]) -> bool:
        """Whether a stride may decide the pointer's addresses: a parameter
        they come from is named like one or given one by the launch."""
        return any("stride" in name.lower() or
                   (name in bound and _mentions_stride(bound[name], self.strides))
                   for name in depends)


def _defined(node: FunctionNode) -> set[str]:
    """Names the body binds by a def, a class or an import."""
    names: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(inner.name)
        elif isinstance(inner, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in inner.names)
    return names


def _bound_arguments(call: ast.Call, kernel: FunctionNode) -> dict[str, ast.expr]:
    """The launch's arguments by the kernel's parameter names."""
    bound = {name: call.args[position] for name, position in parameters_of(kernel)
             if position is not None and position < len(call.args)}
    bound.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return bound


def _mentions_stride(expr: ast.expr, strides: set[str]) -> bool:
    """`x.stride(0)`, `ctx.stride_row`, `strides[1]`, or a name bound to one."""
    for inner in ast.walk(expr):
        if isinstance(inner, ast.Name) and (inner.id in strides or "stride" in inner.id.lower()):
            return True
        if isinstance(inner, ast.Attribute) and "stride" in inner.attr.lower():
            return True
    return False


def _bindings(node: FunctionNode) -> list[tuple[ast.expr, set[str]]]:
    """Each assignment of the body: (its value, the names it binds)."""
    found = []
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Assign, ast.AnnAssign)) and inner.value is not None:
            targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
            found.append((inner.value, {n.id for t in targets for n in ast.walk(t)
                                        if isinstance(n, ast.Name)}))
    return found


def _stride_names(bindings: list[tuple[ast.expr, set[str]]]) -> set[str]:
    """Names backward binds to strides (`s0, s1 = dy.stride()`), to a fixed point."""
    names: set[str] = set()
    pending = bindings
    while True:
        grown = [(value, targets) for value, targets in pending
                 if not targets <= names and _mentions_stride(value, names)]
        if not grown:
            return names
        for _, targets in grown:
            names |= targets


def _layout_queried(node: FunctionNode, gradients: list[str]) -> set[str]:
    """The gradients whose layout backward asks about (`.stride()`,
    `.is_contiguous()`), on them or on anything computed from them: such
    code handles layouts, and which it expects is not for us to guess."""
    asked = [_tensor_names(inner.value) for inner in ast.walk(node)
             if isinstance(inner, ast.Attribute) and inner.attr in _LAYOUT_QUERIES]
    if not asked:
        return set()
    uses = [(_tensor_names(value), targets) for value, targets in _bindings(node)]
    queried: set[str] = set()
    for gradient in gradients:
        family = _computed_from(gradient, uses)
        if any(names & family for names in asked):
            queried.add(gradient)
    return queried


def _computed_from(gradient: str, uses: list[tuple[set[str], set[str]]]) -> set[str]:
    """The names bound (anywhere in the body) to values computed from the
    gradient as a tensor (not from its shape), to a fixed point."""
    family = {gradient}
    while True:
        grown = [targets for names, targets in uses if names & family and not targets <= family]
        if not grown:
            return family
        for targets in grown:
            family |= targets


def _tensor_names(node: ast.AST) -> set[str]:
    """The names an expression uses as tensors: not those only read for
    their shape, dtype or device (`dy.shape[0]`, `dy.numel()`)."""
    if isinstance(node, ast.Attribute) and node.attr in _METADATA:
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    return set().union(*(_tensor_names(child) for child in ast.iter_child_nodes(node)))
