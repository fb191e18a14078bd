"""Facts about one custom Function, computed once and shared by all checkers.

Inputs are judged tensor-valued in two passes (RULES.md "Tensor-valued
expression"): a first interpretation of forward (and setup_context) collects
evidence that an input is used as a tensor (a tensor-only method, passed to
save_for_backward, a `@` operand, returned by forward, ...); the second pass
runs with those judgements and its events are the ones checkers see.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from functools import cached_property

from ..project import FunctionClass, Method
from . import torch_api as api
from .interpreter import FROM_GRAD, CtxCall, Interpreter, MethodFacts
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
            found |= forward.evidence
            for ret in forward.returns:
                values = ret.value.elems or (ret.value,)
                if any(v.literal or v.is_none for v in values):
                    # `return out, scale, None, True, "tag"`: forward returns
                    # non-tensors too, so a returned input proves nothing.
                    continue
                for value in values:
                    # A returned input, or arithmetic on one input and numbers.
                    if value.src and value.src.startswith(("input:", "arith:")):
                        found.add(value.src[6:])
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
                values = ret.value.elems if ret.value.elems is not None and \
                    not ret.value.is_list else (ret.value,) if ret.value.single else ()
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
            for arg in params:
                initial[arg.arg] = Value()
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
        `method` in forward/setup_context saves the same number of plain args."""
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
        return tuple(positions)

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
    if arg.annotation is not None:
        annotated = _annotation_kind(arg.annotation, scope)
        if annotated is not Kind.UNKNOWN and kind is Kind.UNKNOWN:
            kind = annotated
        if _strip_optional(arg.annotation)[1]:
            maybe_none = True
    return Value(kind, frozenset({root}), None, seq, False, maybe_none, root)
