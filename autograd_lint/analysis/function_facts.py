"""Facts about one custom Function, computed once and shared by all checkers.

Inputs are judged tensor-valued in two passes (RULES.md "Tensor-valued
expression"): a first interpretation of forward (and setup_context) collects
evidence that an input is used as a tensor (a tensor-only method, passed to
save_for_backward, a `@` operand, returned by forward, ...); the second pass
runs with those judgements and its events are the ones checkers see.

What an input's annotation and default say is in declared_inputs.py; what
forward's returns are, read off its syntax, in forward_shape.py. `facts_of`
(at the end) computes them once per Function and keeps them on it.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from functools import cached_property

from ..core.project import FunctionClass, Method
from . import torch_api as api
from .declared_inputs import annotation_kind, input_value, non_tensor_reason
from .effects import effects_of
from .events import CtxCall, CtxStore, MethodFacts, Mutation
from .forward_shape import deliberate_gradient_of
from .interpreter import Interpreter
from .markers import FROM_GRAD, OWN_SAVED
from .opt_in import OptIn, defaults_outranked
from .straight_through import passes_gradient_through
from .values import Kind, Value, join


class FunctionFacts:
    def __init__(self, fn: FunctionClass) -> None:
        self.fn = fn
        self._facts: dict[str, MethodFacts | None] = {}

    # -- inputs ----------------------------------------------------------------
    @cached_property
    def defaults(self) -> dict[str, ast.expr]:
        """forward's defaults that a call may use: not those of inputs every
        `apply` call passes (with some value not a literal)."""
        forward = self.fn.forward
        if forward is None:
            return {}
        defaults = forward.defaults
        if not any(d is not None and not (isinstance(d, ast.Constant) and d.value is None)
                   for d in defaults.values()):
            return defaults
        outranked = defaults_outranked(self)
        return {name: d for name, d in defaults.items() if name not in outranked}

    @cached_property
    def base_inputs(self) -> dict[str, Value]:
        """Each input's value from its annotation and default alone."""
        forward = self.fn.forward
        defaults = self.defaults
        scope = forward.owner.info.scope if forward else self.fn.info.scope
        values = {arg.arg: input_value(arg, defaults.get(arg.arg), scope)
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
        return non_tensor_reason(arg, self.defaults.get(name), forward.owner.info.scope)

    # -- methods ---------------------------------------------------------------
    def facts(self, name: str) -> MethodFacts | None:
        """The final facts of a method (own or inherited), or None."""
        if name not in self._facts:
            self._facts[name] = self._compute(name)
        return self._facts[name]

    def specialized(self, name: str, decided: dict[str, object]) -> MethodFacts | None:
        """A method's facts in a run specialized to flag values (opt_in.py):
        parameters by name, ctx attributes as `"ctx.attr"`."""
        return self._compute(name, decided=decided)

    @cached_property
    def opt_in(self) -> OptIn:
        """Which in-place changes happen only for callers that set a flag."""
        return OptIn(self)

    def _compute(self, name: str, saved: bool = True,
                 decided: dict[str, object] | None = None) -> MethodFacts | None:
        """`saved`: know what `ctx.saved_tensors` holds (needs forward's facts,
        so not while the inputs are being judged)."""
        if name == "forward":
            return self._run_forward(self.inputs, decided)
        if name == "setup_context":
            return self._run_setup_context(self.inputs, self.facts("forward"), decided)
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
            initial.update(_incoming(params, method.vararg,
                                     "grad" if name != "jvp" else "tangent"))
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
                    Value(annotation_kind(arg.annotation, scope))
        return self._interpret(method, initial, layout, decided)

    def _interpret(self, method: Method, initial: dict[str, Value],
                   layout: tuple[Value, ...] | None = None,
                   decided: dict[str, object] | None = None) -> MethodFacts | None:
        if method.node is None:
            return None
        for arg in _other_args(method):
            initial.setdefault(arg, Value())
        project = self.fn.project
        interpreter = Interpreter(method.owner.module, method.owner.info.scope, method.node,
                                  initial, layout, effects_of(project) if project else None,
                                  decided)
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

    @cached_property
    def returned_roots(self) -> frozenset[str]:
        """The alias roots of everything forward returns (`input:x` when it
        returns x or a view of it)."""
        return self._returned_roots()

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

    def _run_forward(self, inputs: dict[str, Value],
                     decided: dict[str, object] | None = None) -> MethodFacts | None:
        forward = self.fn.forward
        if forward is None or forward.node is None:
            return None
        initial = dict(inputs)
        ctx = self.fn.ctx_name(forward)
        if ctx is not None:
            initial[ctx] = Value(Kind.NONTENSOR, src="ctx")
        return self._interpret(forward, initial, decided=decided)

    def _run_setup_context(self, inputs: dict[str, Value], forward: MethodFacts | None,
                           decided: dict[str, object] | None = None) -> MethodFacts | None:
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
        return self._interpret(method, initial, decided=decided)

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
        return counts.pop() if len(counts) == 1 else None

    @cached_property
    def outputs_non_differentiable(self) -> bool:
        """Every output is a non-tensor, an integer/bool tensor or marked
        non-differentiable: backward can never run."""
        differentiable = self.differentiable_outputs
        return differentiable is not None and not differentiable

    @cached_property
    def differentiable_outputs(self) -> frozenset[int] | None:
        """The positions of forward's outputs that may carry a gradient: not a
        non-tensor, an integer/bool tensor, or marked non-differentiable, on
        any return (None: no visible return)."""
        forward = self.facts("forward")
        if forward is None or not forward.returns:
            return None
        marked = _marked_outputs(self.calls("mark_non_differentiable"))
        if marked is None:
            return frozenset()  # setup_context marks the whole output
        return _differentiable_positions(forward, marked, self.fn.style == "setup_context")

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
        return name in self.no_gradient_inputs

    @cached_property
    def no_gradient_inputs(self) -> frozenset[str]:
        """Inputs backward (and vjp) returns a literal None for on every path:
        constants of the graph (targets, tables, frozen weights, flags)."""
        names = [arg.arg for arg in self.fn.inputs]  # the named ones, before any `*args`
        methods = [self.facts(m) for m in ("backward", "vjp") if self.fn.method(m) is not None]
        return _none_everywhere(names, methods) if methods else frozenset()

    @cached_property
    def deliberate_gradient(self) -> str | None:
        """Why backward differs from the derivative on purpose (RULES.md,
        Precision first), or None: "identity" when forward returns its inputs
        (or views or copies of them) unchanged, so backward scales, clips,
        reverses, injects or communicates the gradient; "piecewise-constant"
        when forward rounds, takes signs or thresholds, so backward is a
        surrogate; "straight-through" when backward hands each input the
        output's gradient unchanged whatever forward computes (casts to
        float8, masks, quantizers: straight-through estimators)."""
        forward = self.fn.forward
        if forward is None or forward.node is None:
            return None
        inputs = {arg.arg for arg in self.fn.inputs}
        if forward.vararg is not None:  # `return args`: the inputs themselves
            inputs.add(forward.vararg.arg)
        shape = deliberate_gradient_of(forward.node, inputs, self._changes_outputs_in_place,
                                       self.fn.module.defs)
        if shape is not None:
            return shape
        backward = self.fn.method("backward") or self.fn.method("vjp")
        if backward is not None and backward.node is not None and \
                passes_gradient_through(backward.node):
            return "straight-through"
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
        return _ctx_attrs_used_as_tensors(self.fn)


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


def _ctx_attrs_used_as_tensors(fn: FunctionClass) -> frozenset[str]:
    """ctx attributes that backward/jvp use with tensor-only operations."""
    found: set[str] = set()
    for name in ("backward", "vjp", "jvp"):
        method = fn.method(name)
        if method is None or method.node is None:
            continue
        ctx = fn.ctx_name(method)
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


def _incoming(params: list[ast.arg], vararg: ast.arg | None,
              prefix: str) -> dict[str, Value]:
    """The parameters of backward (prefix "grad") or jvp ("tangent"): each an
    incoming tensor and a root of its own; gradients carry FROM_GRAD."""
    taint = frozenset({FROM_GRAD}) if prefix == "grad" else frozenset()
    values: dict[str, Value] = {}
    for arg in params:
        values[arg.arg] = Value(Kind.TENSOR, frozenset({f"{prefix}:{arg.arg}"}),
                                src=f"{prefix}:{arg.arg}", taint=taint)
    if vararg is not None:
        star = vararg.arg
        # Each element is an incoming gradient itself (`grads[0]`).
        element = Value(Kind.TENSOR, frozenset({f"{prefix}:{star}"}),
                        src=f"{prefix}:{star}", taint=taint)
        values[star] = Value(Kind.TENSORS, frozenset({f"{prefix}:{star}"}), None, True,
                             src=f"{prefix}s:{star}", taint=taint, item=element)
    return values


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


def _literal_prefix(elements: list[ast.expr] | None) -> tuple[Value, ...] | None:
    """The positions a tuple display fixes before its first `*rest` (`(dx,
    None, None, *wgrads)`): the literal `None`s there are gradients of None."""
    if not elements or not any(isinstance(e, ast.Starred) for e in elements):
        return None
    prefix = []
    for element in elements:
        if isinstance(element, ast.Starred):
            break
        none = isinstance(element, ast.Constant) and element.value is None
        prefix.append(Value(Kind.NONE) if none else Value())
    return tuple(prefix)


def _none_everywhere(names: list[str], methods: list[MethodFacts | None]) -> frozenset[str]:
    """The names every return of every method gives a literal None for."""
    constant = set(names)
    for facts in methods:
        if facts is None or not facts.returns:
            return frozenset()
        for ret in facts.returns:
            gradients = _returned_gradients(ret.value) or _literal_prefix(ret.elements)
            if gradients is None:
                return frozenset()
            constant &= {name for name, gradient in zip(names, gradients, strict=False)
                         if gradient.kind is Kind.NONE}
    return frozenset(constant)


def _marked_outputs(calls: list[CtxCall]) -> set[str] | None:
    """The expressions mark_non_differentiable is given (None: setup_context
    marks the whole output)."""
    marked: set[str] = set()
    for call in calls:
        for node, value, starred in call.args:
            if value.src == "output" and (starred or not isinstance(node, ast.Subscript)):
                return None
            marked.add(ast.unparse(node))
    return marked


def _differentiable_positions(forward: MethodFacts, marked: set[str],
                              setup_context: bool) -> frozenset[int]:
    """The output positions that, on some return, hold a floating tensor not
    marked non-differentiable."""
    found: set[int] = set()
    for ret in forward.returns:
        values = ret.value.elems if ret.value.elems is not None else (ret.value,)
        nodes = ret.elements if ret.elements is not None else [ret.node.value]
        for index, value in enumerate(values):
            node = nodes[index] if index < len(nodes) else None
            if value.kind in (Kind.NONTENSOR, Kind.NONE) or value.integral:
                continue
            if node is not None and ast.unparse(node) in marked:
                continue
            if setup_context and f"output[{index}]" in marked:
                continue
            found.add(index)
    return frozenset(found)


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


def facts_of(fn: FunctionClass) -> FunctionFacts:
    """A Function's facts: computed once, shared by every rule family and
    the dynamic mode."""
    if not isinstance(fn.analysed, FunctionFacts):
        fn.analysed = FunctionFacts(fn)
    return fn.analysed
