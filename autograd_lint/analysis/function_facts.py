"""Facts about one custom Function, computed once and shared by all checkers.

Inputs are judged tensor-valued in two passes (RULES.md "Tensor-valued
expression"): a first interpretation of forward (and setup_context) collects
evidence that an input is used as a tensor (a tensor-only method, passed to
save_for_backward, a `@` operand, returned by forward, ...); the second pass
runs with those judgements and its events are the ones checkers see.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property

from ..project import FunctionClass, Method
from . import torch_api as api
from .interpreter import FROM_GRAD, OWN_SAVED, CtxCall, CtxStore, Interpreter, MethodFacts, Mutation
from .values import Kind, Value, join


class FunctionFacts:
    def __init__(self, fn: FunctionClass) -> None:
        self.fn = fn
        self._facts: dict[str, MethodFacts | None] = {}

    # -- inputs ----------------------------------------------------------------
    @cached_property
    def base_inputs(self) -> dict[str, Value]:
        """Each input's value from its annotation and default alone."""
        forward = self.fn.forward
        defaults = forward.defaults if forward else {}
        scope = forward.owner.info.scope if forward else self.fn.info.scope
        values = {arg.arg: _input_value(arg, defaults.get(arg.arg), scope)
                  for arg in self.fn.inputs}
        if forward is not None and forward.vararg is not None:
            name = forward.vararg.arg
            values[name] = Value(Kind.UNKNOWN, frozenset({f"input:{name}"}), None, True,
                                 src=f"input:{name}")
        return values

    @cached_property
    def evidence(self) -> set[str]:
        """Inputs used as tensors somewhere in forward or setup_context."""
        found: set[str] = set()
        forward = self._run_forward(self.base_inputs)
        if forward is not None:
            # Being returned, multiplied or compared is no evidence: forwards
            # return ints and flags as outputs too (RULES.md).
            found |= forward.evidence
        setup = self._run_setup_context(self.base_inputs, forward)
        if setup is not None:
            found |= setup.evidence
        return found

    def _given_gradients(self) -> set[str]:
        """Inputs backward returns a gradient for on some path: autograd
        raises for a non-None gradient of a non-tensor input."""
        names = [arg.arg for arg in self.fn.inputs]
        found: set[str] = set()
        for method in ("backward", "vjp"):
            if self.fn.method(method) is None:
                continue
            facts = self._compute(method, saved=False)
            for ret in facts.returns if facts else ():
                values = _returned_gradients(ret.value) or ()
                for name, value in zip(names, values, strict=False):
                    if value.kind is Kind.TENSOR and not value.literal:
                        found.add(name)
        return found

    @cached_property
    def inputs(self) -> dict[str, Value]:
        """Each input's final value: annotation, default and evidence."""
        out = {}
        undecided = [name for name, value in self.base_inputs.items()
                     if value.kind is Kind.UNKNOWN and not value.seq]
        proven = self.evidence
        if any(name not in proven for name in undecided):
            proven = proven | self._given_gradients()  # only then: it costs a pass
        for name, value in self.base_inputs.items():
            if name in undecided and name in proven:
                value = replace(value, kind=Kind.TENSOR)
            out[name] = value
        return out

    def input_is_tensor(self, name: str) -> bool:
        value = self.inputs.get(name)
        return value is not None and value.kind is Kind.TENSOR

    def non_tensor_reason(self, name: str) -> str | None:
        """Why an input is known not to be a tensor (for messages), or None."""
        forward = self.fn.forward
        if forward is None:
            return None
        arg = next((a for a in self.fn.inputs if a.arg == name), None)
        if arg is None:
            return None
        scope = forward.owner.info.scope
        if arg.annotation is not None and _annotation_kind(arg.annotation, scope) is Kind.NONTENSOR:
            return f"annotated `{ast.unparse(arg.annotation)}`"
        default = forward.defaults.get(name)
        if default is not None and _is_literal(default) and not _is_none(default):
            return f"its default is `{ast.unparse(default)}`"
        return None

    # -- methods ---------------------------------------------------------------
    def facts(self, name: str) -> MethodFacts | None:
        """The final facts of a method (own or inherited), or None."""
        if name not in self._facts:
            self._facts[name] = self._compute(name)
        return self._facts[name]

    def _compute(self, name: str, saved: bool = True) -> MethodFacts | None:
        """`saved`: know what `ctx.saved_tensors` holds (needs forward's facts,
        so not while the inputs are being judged)."""
        if name == "forward":
            return self._run_forward(self.inputs)
        if name == "setup_context":
            return self._run_setup_context(self.inputs, self.facts("forward"))
        method = self.fn.method(name)
        if method is None or method.node is None:
            return None
        initial: dict[str, Value] = {}
        params = method.params
        ctx = self.fn.ctx_name(method)
        if ctx is not None:
            initial[ctx] = Value(Kind.NONTENSOR, src="ctx")
            params = params[1:]
        layout = None
        if name in api.BACKWARD_METHODS or name == "jvp":
            prefix = "grad" if name != "jvp" else "tangent"
            taint = frozenset({FROM_GRAD}) if prefix == "grad" else frozenset()
            for arg in params:
                initial[arg.arg] = Value(Kind.TENSOR, frozenset({f"{prefix}:{arg.arg}"}),
                                         src=f"{prefix}:{arg.arg}", taint=taint)
            if method.vararg is not None:
                star = method.vararg.arg
                # Each element is an incoming gradient itself (`grads[0]`).
                element = Value(Kind.TENSOR, frozenset({f"{prefix}:{star}"}),
                                src=f"{prefix}:{star}", taint=taint)
                initial[star] = Value(Kind.TENSORS, frozenset({f"{prefix}:{star}"}), None, True,
                                      src=f"{prefix}s:{star}", taint=taint, item=element)
            layout = self.saved_layout("save_for_forward" if name == "jvp"
                                       else "save_for_backward") if saved else None
        elif name == "vmap" and len(params) >= 2:
            # vmap(info, in_dims, *inputs): batched versions of forward's inputs.
            for arg, value in zip(params[2:], self.inputs.values(), strict=False):
                initial[arg.arg] = value
        else:
            scope = method.owner.info.scope
            for arg in params:  # a helper method: what its annotations say
                initial[arg.arg] = Value() if arg.annotation is None else \
                    Value(_annotation_kind(arg.annotation, scope))
        return self._interpret(method, initial, layout)

    def _interpret(self, method: Method, initial: dict[str, Value],
                   layout: tuple[Value, ...] | None = None) -> MethodFacts | None:
        if method.node is None:
            return None
        for arg in _other_args(method):
            initial.setdefault(arg, Value())
        project = self.fn.project
        interpreter = Interpreter(method.owner.module, method.owner.info.scope, method.node,
                                  initial, layout, project.effects if project else None)
        return interpreter.run()

    def saved_layout(self, method: str = "save_for_backward") -> tuple[Value, ...] | None:
        """What each position of `ctx.saved_tensors` holds, when every call of
        `method` in forward/setup_context saves the same number of plain args.
        A saved tensor that is no input or output (nor a view of one) has the
        root OWN_SAVED: nothing shows that code outside the node holds it."""
        calls = [call for name in ("forward", "setup_context")
                 for call in (self.facts(name).of(CtxCall) if self.facts(name) else ())
                 if call.method == method]
        if not calls or any(starred for call in calls for _, _, starred in call.args):
            return None
        if len({len(call.args) for call in calls}) != 1:
            return None
        positions = [value for _, value, _ in calls[0].args]
        for call in calls[1:]:
            positions = [join(a, b) for a, (_, b, _) in zip(positions, call.args, strict=False)]
        returned = self._returned_roots()
        return tuple(replace(position, roots=frozenset({OWN_SAVED}))
                     if _owned(position, returned) else position for position in positions)

    def _returned_roots(self) -> frozenset[str]:
        """The alias roots of everything forward returns (elements included)."""
        facts = self.facts("forward")
        roots: set[str] = set()
        pending = [ret.value for ret in facts.returns] if facts else []
        while pending:
            value = pending.pop()
            roots |= value.roots
            pending.extend(value.elems or ())
            if value.item is not None:
                pending.append(value.item)
        return frozenset(roots)

    def calls(self, method: str, *, where: tuple[str, ...] = ("forward", "setup_context")
              ) -> list[CtxCall]:
        """Every `ctx.<method>(...)` call in the given methods."""
        return [call for name in where
                for call in (self.facts(name).of(CtxCall) if self.facts(name) else ())
                if call.method == method]

    def _run_forward(self, inputs: dict[str, Value]) -> MethodFacts | None:
        forward = self.fn.forward
        if forward is None or forward.node is None:
            return None
        initial = dict(inputs)
        ctx = self.fn.ctx_name(forward)
        if ctx is not None:
            initial[ctx] = Value(Kind.NONTENSOR, src="ctx")
        return self._interpret(forward, initial)

    def _run_setup_context(self, inputs: dict[str, Value],
                           forward: MethodFacts | None) -> MethodFacts | None:
        method = self.fn.method("setup_context")
        if method is None or method.node is None or self.fn.style != "setup_context":
            return None
        params = method.params
        if len(params) < 3:
            return None
        ordered = [inputs[arg.arg] for arg in self.fn.inputs if arg.arg in inputs]
        known = not self.fn.has_varargs
        inputs_value = Value(Kind.UNKNOWN, frozenset().union(*(v.roots for v in ordered))
                             if ordered else frozenset(),
                             tuple(ordered) if known else None, True, src="inputs")
        initial = {
            params[0].arg: Value(Kind.NONTENSOR, src="ctx"),
            params[1].arg: inputs_value,
            params[2].arg: _as_output(_output_value(forward)),
        }
        return self._interpret(method, initial)

    # -- outputs ---------------------------------------------------------------
    @cached_property
    def output(self) -> Value | None:
        """The joined value of forward's returns (None: no visible return)."""
        return _output_value(self.facts("forward"))

    @cached_property
    def output_count(self) -> int | None:
        """How many outputs forward returns, when every return agrees."""
        facts = self.facts("forward")
        if facts is None or not facts.returns or facts.has_yield:
            return None
        counts = {ret.value.arity() for ret in facts.returns}
        if len(counts) != 1:
            return None
        count = counts.pop()
        return count

    @cached_property
    def outputs_non_differentiable(self) -> bool:
        """Every output is a non-tensor, an integer/bool tensor or marked
        non-differentiable: backward can never run."""
        forward = self.facts("forward")
        if forward is None or not forward.returns:
            return False
        marked: set[str] = set()
        for call in self.calls("mark_non_differentiable"):
            for node, value, starred in call.args:
                if value.src == "output" and (starred or not isinstance(node, ast.Subscript)):
                    return True  # setup_context marks the whole output
                marked.add(ast.unparse(node))
        for ret in forward.returns:
            values = ret.value.elems if ret.value.elems is not None else (ret.value,)
            nodes = ret.elements if ret.elements is not None else [ret.node.value]
            for index, value in enumerate(values):
                node = nodes[index] if index < len(nodes) else None
                if value.kind in (Kind.NONTENSOR, Kind.NONE) or value.integral:
                    continue
                if node is not None and ast.unparse(node) in marked:
                    continue
                if self.fn.style == "setup_context" and f"output[{index}]" in marked:
                    continue
                return False
        return True

    def side_effect_buffer(self, name: str) -> bool:
        """Whether forward input `name` is a buffer no gradient flows through
        (backward returns a literal None in its place on every path, or there
        is no backward) that no output returns or views: updating it in place
        is a side effect by design (running statistics, caches, counters)."""
        output = self.output
        if output is not None and f"input:{name}" in output.roots:
            return False
        if self.fn.method("backward") is None and self.fn.method("vjp") is None:
            return True
        names = [arg.arg for arg in self.fn.inputs]
        if name not in names or self.fn.has_varargs:
            return False
        index = names.index(name)
        for method in ("backward", "vjp"):
            facts = self.facts(method) if self.fn.method(method) is not None else None
            if facts is None:
                continue
            if not facts.returns:
                return False
            for ret in facts.returns:
                gradients = _returned_gradients(ret.value)
                if gradients is None or index >= len(gradients) or \
                        gradients[index].kind is not Kind.NONE:
                    return False
        return True

    @cached_property
    def deliberate_gradient(self) -> str | None:
        """Why backward differs from the derivative on purpose (RULES.md,
        Precision first), or None: "identity" when forward returns its inputs
        (or views or copies of them) unchanged, so backward scales, clips,
        reverses, injects or communicates the gradient; "piecewise-constant"
        when forward rounds, takes signs or thresholds, so backward is a
        surrogate (straight-through estimators)."""
        forward = self.fn.forward
        if forward is None or forward.node is None:
            return None
        inputs = {arg.arg for arg in self.fn.inputs}
        if forward.vararg is not None:  # `return args`: the inputs themselves
            inputs.add(forward.vararg.arg)
        shape = _ForwardShape(forward.node, inputs)
        returns = [node.value for node in ast.walk(forward.node)
                   if isinstance(node, ast.Return) and node.value is not None]
        if not returns:
            return None
        if not self._changes_outputs_in_place() and \
                all(shape.identity_result(expr) for expr in returns):
            return "identity"  # (`out = x.clone(); kernel[grid](out)` computes)
        if all(shape.piecewise_constant_result(expr) for expr in returns):
            return "piecewise-constant"
        return None

    def _changes_outputs_in_place(self) -> bool:
        """Whether forward changes in place a tensor it returns (or a view)."""
        facts = self.facts("forward")
        returned = self._returned_roots()
        return facts is not None and any(mutation.value.roots & returned
                                         for mutation in facts.of(Mutation))

    @cached_property
    def returned_names(self) -> frozenset[str]:
        """Names (`out`) and ctx attributes (`ctx.out`) forward returns directly."""
        facts = self.facts("forward")
        ctx = self.fn.ctx_name(self.fn.forward) if self.fn.forward else None
        names: set[str] = set()
        for ret in facts.returns if facts else ():
            nodes = ret.elements if ret.elements is not None else [ret.node.value]
            for node in nodes:
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif (attr := _ctx_attr(node, ctx)) is not None:
                    names.add(f"ctx.{attr}")
        return frozenset(names)

    @cached_property
    def ctx_tensor_attrs(self) -> frozenset[str]:
        """ctx attributes forward / setup_context set to tensor-valued values."""
        return frozenset(store.attr for name in ("forward", "setup_context")
                         for store in (self.facts(name).of(CtxStore) if self.facts(name) else ())
                         if store.value.kind.holds_tensor)

    @cached_property
    def ctx_attrs_used_as_tensors(self) -> frozenset[str]:
        """ctx attributes that backward/jvp use with tensor-only operations."""
        found: set[str] = set()
        for name in ("backward", "vjp", "jvp"):
            method = self.fn.method(name)
            if method is None or method.node is None:
                continue
            ctx = self.fn.ctx_name(method)
            for node in ast.walk(method.node):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in api.STRONG_TENSOR_METHODS:
                    target = node.func.value
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                    for side in (node.left, node.right):
                        if (attr := _ctx_attr(side, ctx)) is not None:
                            found.add(attr)
                    continue
                else:
                    continue
                if (attr := _ctx_attr(target, ctx)) is not None:
                    found.add(attr)
        return frozenset(found)


# Methods whose result is the same values as the receiver.
_SAME_VALUES = frozenset({"view", "view_as", "reshape", "reshape_as", "clone", "contiguous",
                          "expand_as", "expand", "flatten", "squeeze", "unsqueeze", "detach"})
# A value the shape analysis cannot see through (neither an input nor a staircase).
_OPAQUE = ast.Call(func=ast.Name(id="<opaque>", ctx=ast.Load()), args=[], keywords=[])
# Pytree maps: `tree_map(lambda t: t.clone(), args)` returns the same values.
_TREE_MAPS = frozenset({"tree_map", "tree_map_only", "map_structure"})
# Functions and methods with a zero derivative almost everywhere.
_PIECEWISE_CONSTANT = frozenset({"round", "floor", "ceil", "sign", "trunc", "fix", "bernoulli",
                                 "heaviside", "round_", "floor_", "ceil_", "sign_", "trunc_",
                                 "bernoulli_"})
_CONVERSIONS = frozenset({"float", "half", "double", "bfloat16", "to", "type_as", "type"})


def _low_precision(node: ast.expr) -> bool:
    """`torch.float8_e4m3fn`, `torch.int8`, `torch.uint8`: few representable values."""
    last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return last.startswith(("float8", "int", "uint"))


class _ForwardShape:
    """Syntactic facts about what forward returns, through its local names."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, inputs: set[str]) -> None:
        self.inputs = inputs
        self.bindings: dict[str, list[ast.expr]] = {}
        for stmt in ast.walk(node):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                self.bindings.setdefault(stmt.targets[0].id, []).append(stmt.value)
            elif isinstance(stmt, (ast.Assign, ast.For)):  # `q, k = helper(q, k)`: unknown
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for name in _rebound_names(targets):
                    self.bindings.setdefault(name, []).append(_OPAQUE)
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and \
                    isinstance(stmt.target, ast.Name):
                self.bindings.setdefault(stmt.target.id, []).append(ast.Constant(None))
        # Locals handed to a call that may write them (`kernel[grid](out)`,
        # `fill(out)`): a copy of an input that a call may change is no
        # evidence of an identity forward.
        self.handed: set[str] = {
            arg.id for call in ast.walk(node) if isinstance(call, ast.Call)
            and not _reads_only(call.func)
            for arg in (*call.args, *(k.value for k in call.keywords))
            if isinstance(arg, ast.Name)}

    def identity_result(self, expr: ast.expr) -> bool:
        """`x`, `x.view_as(x)`, `x.clone()`, or a tuple of those and literals,
        with at least one input."""
        elements = expr.elts if isinstance(expr, ast.Tuple) else [expr]
        kinds = [self._identity(e, frozenset()) for e in elements]
        return all(kinds) and any(kind == "input" for kind in kinds)

    def _identity(self, expr: ast.expr, seen: frozenset[str]) -> str | None:
        if isinstance(expr, ast.Constant):
            return "literal"
        if isinstance(expr, ast.Name):
            if expr.id in seen:  # `x = x.contiguous()`: back at the input itself
                return "input" if expr.id in self.inputs else None
            values = self.bindings.get(expr.id)
            if not values:
                return "input" if expr.id in self.inputs else None
            if expr.id in self.handed:
                return None
            kinds = {self._identity(v, seen | {expr.id}) for v in values}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                expr.func.attr in _SAME_VALUES:
            return "input" if self._identity(expr.func.value, seen) == "input" else None
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            # `args[0]` of `*args`: one of the inputs
            return "input" if self._identity(expr.value, seen) == "input" else None
        if isinstance(expr, ast.IfExp):
            kinds = {self._identity(expr.body, seen), self._identity(expr.orelse, seen)}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(expr, ast.Call) and _last_attr(expr.func) in _TREE_MAPS and \
                len(expr.args) == 2 and isinstance(expr.args[0], ast.Lambda):
            mapped = expr.args[0]
            inner = _ForwardShape.__new__(_ForwardShape)
            inner.inputs = {a.arg for a in mapped.args.args}
            inner.bindings = {}
            if inner._identity(mapped.body, frozenset()) != "input":
                return None
            return "input" if self._identity(expr.args[1], seen) == "input" else None
        return None

    def piecewise_constant_result(self, expr: ast.expr) -> bool:
        elements = expr.elts if isinstance(expr, ast.Tuple) else [expr]
        return any(self._piecewise(e, 0) for e in elements) and all(
            self._piecewise(e, 0) or isinstance(e, ast.Constant) for e in elements)

    def _piecewise(self, expr: ast.expr, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(expr, ast.Name):
            values = self.bindings.get(expr.id)
            return bool(values) and all(self._piecewise(v, depth + 1) for v in values)
        if isinstance(expr, ast.BinOp):  # `torch.round(x / s) * s`: still a staircase
            sides = [expr.left, expr.right]
            # The other side scales or shifts: a number, a name, an attribute.
            return any(self._piecewise(side, depth + 1) for side in sides) and all(
                self._piecewise(side, depth + 1) or
                isinstance(side, (ast.Constant, ast.Name, ast.Attribute)) for side in sides)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _PIECEWISE_CONSTANT:
            return True
        if name == "to" and any(_low_precision(a) for a in (*expr.args,
                                                            *(k.value for k in expr.keywords))):
            return True  # a cast to float8 or an integer type is a staircase too
        if name in _CONVERSIONS | _SAME_VALUES and isinstance(func, ast.Attribute):
            receiver = func.value
            return isinstance(receiver, ast.Compare) or self._piecewise(receiver, depth + 1)
        if name in ("clamp", "clip") and isinstance(func, ast.Attribute):
            return self._piecewise(func.value, depth + 1)
        return False


# Calls that only look at their arguments.
_READ_ONLY_CALLS = frozenset({"isinstance", "len", "print", "hasattr", "getattr", "type", "id",
                              "is_tensor", "is_floating_point", "numel", "dim", "size"})


def _reads_only(func: ast.expr) -> bool:
    """`len(x)`, `isinstance(x, T)`, `ctx.save_for_backward(x)`, `x.view_as(y)`."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in ("ctx", "self"):
        return True
    name = _last_attr(func)
    return name in _READ_ONLY_CALLS or name in _SAME_VALUES or name in _TREE_MAPS


def _rebound_names(targets: list[ast.expr]) -> Iterator[str]:
    """Names an assignment rebinds (`a, (b, *c) = ...`; not `x.attr = ...`)."""
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Starred):
            yield from _rebound_names([target.value])
        elif isinstance(target, (ast.Tuple, ast.List)):
            yield from _rebound_names(target.elts)


def _last_attr(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def only_raises(node: ast.FunctionDef | ast.AsyncFunctionDef, exception: str | None = None
                ) -> bool:
    """A body (docstring aside) that only raises (`exception`, when given)."""
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and
                                         isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    name = exc.func if isinstance(exc, ast.Call) else exc
    return exception is None or isinstance(name, ast.Name) and name.id == exception


def _owned(value: Value, returned: frozenset[str]) -> bool:
    """A saved value with no evidence that code outside the node holds it: it
    is not (a view of) an input, nor what forward returns. (Helpers' results
    and forward's own allocations are the node's own.)"""
    if value.src == "output" or value.kind in (Kind.NONE, Kind.NONTENSOR):
        return False
    return not any(root.startswith("input:") or root in returned for root in value.roots)


def _returned_gradients(value: Value) -> tuple[Value, ...] | None:
    """What a backward `return` hands autograd, by input position (None:
    a form of unknown length)."""
    if value.elems is not None and not value.is_list:
        return value.elems
    return (value,) if value.arity() == 1 else None


def _ctx_attr(node: ast.expr, ctx: str | None) -> str | None:
    if ctx and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == ctx:
        return node.attr
    return None


def _other_args(method: Method) -> list[str]:
    node = method.node
    if node is None:
        return []
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def _output_value(forward: MethodFacts | None) -> Value | None:
    if forward is None or not forward.returns:
        return None
    value = forward.returns[0].value
    for ret in forward.returns[1:]:
        value = join(value, ret.value)
    return value


def _as_output(value: Value | None) -> Value:
    """forward's result as setup_context's `output` parameter sees it."""
    if value is None:
        return Value(Kind.UNKNOWN, src="output")
    if value.elems is not None:
        elems = tuple(replace(e, src="output", roots=e.roots | {"output"}) for e in value.elems)
        return Value(Kind.TENSORS, value.roots | {"output"}, elems, True, src="output")
    return replace(value, src="output", roots=value.roots | {"output"})


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_literal(e) for e in node.elts)
    return False


def _strip_optional(node: ast.expr) -> tuple[ast.expr, bool]:
    """`Optional[X]`, `X | None`, `Union[X, None]` -> (X, True)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        if _is_none(node.right):
            return node.left, True
        if _is_none(node.left):
            return node.right, True
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else \
            getattr(node.value, "id", None)
        if head == "Optional":
            return node.slice, True
        if head == "Union" and isinstance(node.slice, ast.Tuple):
            rest = [e for e in node.slice.elts if not _is_none(e)]
            if len(rest) == 1 and len(node.slice.elts) == 2:
                return rest[0], True
    return node, False


def _annotation_kind(node: ast.expr, scope) -> Kind:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return Kind.UNKNOWN
    inner, _ = _strip_optional(node)
    if isinstance(inner, (ast.Name, ast.Attribute)):
        qualified = scope.resolve(inner) or ast.unparse(inner)
        if qualified in api.TENSOR_ANNOTATIONS or api.is_tensor_class(qualified):
            return Kind.TENSOR
        if qualified in api.SCALAR_ANNOTATIONS or ast.unparse(inner) in api.SCALAR_ANNOTATIONS:
            return Kind.NONTENSOR
    return Kind.UNKNOWN


def _input_value(arg: ast.arg, default: ast.expr | None, scope) -> Value:
    root = f"input:{arg.arg}"
    kind = Kind.UNKNOWN
    maybe_none = default is not None and _is_none(default)
    seq = False
    if default is not None and not maybe_none and _is_literal(default):
        kind = Kind.NONTENSOR
        seq = isinstance(default, (ast.Tuple, ast.List))
    integral = False
    if arg.annotation is not None:
        annotated = _annotation_kind(arg.annotation, scope)
        if annotated is not Kind.UNKNOWN and kind is Kind.UNKNOWN:
            kind = annotated
            integral = _integral_annotation(arg.annotation, scope)
        if _strip_optional(arg.annotation)[1]:
            maybe_none = True
    return Value(kind, frozenset({root}), None, seq, False, maybe_none, root, integral=integral)


def _integral_annotation(node: ast.expr, scope) -> bool:
    """`torch.LongTensor`, `Optional[torch.BoolTensor]`: indices and masks."""
    inner, _ = _strip_optional(node)
    if not isinstance(inner, (ast.Name, ast.Attribute)):
        return False
    qualified = scope.resolve(inner) or ast.unparse(inner)
    return qualified.rsplit(".", 1)[-1] in api.INTEGRAL_TENSOR_CLASSES
