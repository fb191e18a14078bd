"""Gradient arity and signatures: AGF101, AGF102, AGF107, AGF112, AGF113, AGF114, AGF205.

autograd checks these only at run time, on the first backward: backward must
return one gradient per forward input, accept one gradient per forward
output, and put `None` (never a number) where no gradient exists.
"""
from __future__ import annotations

import ast

from autograd_lint.analysis.apply_calls import never_passes_beyond, never_passes_keyword
from autograd_lint.analysis.function_facts import FunctionFacts, only_raises
from autograd_lint.analysis.interpreter import Return, constant_index
from autograd_lint.analysis.values import Kind, Value
from autograd_lint.core.config import show_torch
from autograd_lint.core.project import FunctionClass, Method

from .base import Checker, nodes_with_ctx, plural
from .fix_edits import append_none_gradients


class ArityChecker(Checker):
    family = "arity"

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        if fn.ctx_confused:
            return  # input positions are unknowable; AGF104 reports the signature
        forward = fn.forward
        if forward is not None and forward.owner is fn and forward.node is not None:
            self.agf112_keyword_only_input(fn, forward)
        for name in ("backward", "vjp"):
            method = fn.own.get(name)
            if method is None or method.node is None or forward is None or forward.node is None:
                continue
            method_facts = facts.facts(name)
            if method_facts is None or method_facts.has_yield:
                continue
            self.agf102_grad_output_arity(fn, facts, method)
            if not method_facts.returns and method_facts.falls_through:
                self.agf101_gradient_count_mismatch(fn, facts, method, None, 1, method.node)
            for ret in method_facts.returns:
                self.agf101_gradient_count_mismatch(fn, facts, method, ret, ret.value.arity(),
                                                    ret.node)
                self.agf205_backward_returns_literal(fn, method, ret)
                self.agf114_gradient_for_non_tensor(fn, facts, method, ret)
        if forward is not None and forward.node is not None:
            self.agf107_needs_input_grad_index(fn)
            self.agf113_jvp_output_count(fn, facts)

    # -- AGF101 ----------------------------------------------------------------
    def agf101_gradient_count_mismatch(self, fn: FunctionClass, facts: FunctionFacts,
                                       method: Method, ret: Return | None, count: int | None,
                                       node: ast.AST) -> None:
        if count is None or facts.outputs_non_differentiable:
            return  # unknown length, or a backward that can never run
        declared = len(fn.inputs)
        required = fn.required_inputs
        varargs = fn.has_varargs
        detail = ""
        if count < required:
            pass
        elif count < declared and not varargs:
            if never_passes_beyond(fn, count):
                return  # the project's calls never pass the optional inputs: nothing raises
            optional = [a.arg for a in fn.inputs[count:]]
            detail = (" (the optional " + ", ".join(f"`{n}`" for n in optional)
                      + " included: autograd raises as soon as a caller passes "
                      + ("it" if len(optional) == 1 else "them") + ")")
        elif count > declared and not varargs:
            extras = ret.value.elems[declared:] if ret and ret.value.elems is not None else ()
            if not any(_definitely_not_none(v) for v in extras):
                return
            detail = " (extra gradients must be `None`)"
        else:
            return
        got = "no value (None, one gradient)" if ret is None else plural(count, "gradient")
        names = ", ".join(f"`{a.arg}`" for a in fn.inputs)
        expected = plural(declared, "input") + (f" ({names})" if names else "")
        if varargs:
            expected = f"at least {plural(required, 'input')}"
        autofix = None
        # `None` is only right for inputs that can never need a gradient: a
        # tensor input (`bias`) padded with None would silently lose its grad.
        missing = [a.arg for a in fn.inputs[count:]]
        cannot_need = all(facts.inputs[name].kind in (Kind.NONTENSOR, Kind.NONE)
                          for name in missing if name in facts.inputs)
        if count < declared and not varargs and cannot_need and isinstance(node, ast.Return) \
                and node.value is not None and ret is not None:
            is_tuple = isinstance(node.value, ast.Tuple)
            if is_tuple or ret.value.elems is None:  # not a name holding a tuple
                autofix = append_none_gradients(node.value, declared - count, is_tuple=is_tuple)
        self.reporter.add("AGF101", node, function=fn.name, method=method.name, got=got,
                          expected=expected, detail=detail, autofix=autofix)

    # -- AGF102 ----------------------------------------------------------------
    def agf102_grad_output_arity(self, fn: FunctionClass, facts: FunctionFacts,
                                 method: Method) -> None:
        boxed = _boxed_gradients(fn)
        if method.vararg is not None or (boxed and not self.supports_torch_before(BOXED_FROM)) \
                or (method.node is not None and only_raises(method.node)):
            return  # a backward that only raises fails whatever autograd passes it
        outputs = facts.output_count
        if outputs is None:
            return
        grads = method.params[1:]
        defaults = method.defaults
        required = sum(1 for a in grads if a.arg not in defaults)
        if required <= outputs <= len(grads):
            return
        unboxed = f" on torch {show_torch(self.reporter.target_torch)}, which ignores " \
            f"`boxed_grads_call` (honoured from {show_torch(BOXED_FROM)})" if boxed else ""
        self.reporter.add("AGF102", method.node, function=fn.name, method=method.name,  # type: ignore[arg-type]
                          got=plural(len(grads), "gradient argument"),
                          expected=plural(outputs, "output"), count=outputs, unboxed=unboxed)

    # -- AGF107 ----------------------------------------------------------------
    def agf107_needs_input_grad_index(self, fn: FunctionClass) -> None:
        if fn.has_varargs or not self.enabled("AGF107"):
            return
        count = len(fn.inputs)
        for ctx, node in nodes_with_ctx(fn):
            if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "needs_input_grad"
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == ctx):
                continue
            index = constant_index(node.slice)
            if index is not None and not -count <= index < count:
                self.reporter.add("AGF107", node, function=fn.name, index=index,
                                  inputs=plural(count, "input"), last=count - 1)

    # -- AGF112 ----------------------------------------------------------------
    def agf112_keyword_only_input(self, fn: FunctionClass, forward: Method) -> None:
        args = forward.node.args if forward.node else None
        defaults = dict(zip([a.arg for a in args.kwonlyargs], args.kw_defaults,
                            strict=True)) if args else {}
        # Without a default, forward can never run; with one, only a call that
        # tries to pass it (by name, or by position past the positional inputs)
        # raises: silent when the project's calls never do.
        tries = not never_passes_beyond(fn, len(fn.inputs))
        kwonly = [a for a in (args.kwonlyargs if args else [])
                  if defaults.get(a.arg) is None or tries or not never_passes_keyword(fn, a.arg)]
        if not kwonly:
            return
        self.reporter.add("AGF112", forward.node, function=fn.name,  # type: ignore[arg-type]
                          s="s" if len(kwonly) > 1 else "",
                          names=", ".join(f"`{a.arg}`" for a in kwonly),
                          them="them" if len(kwonly) > 1 else "it")

    # -- AGF113 ----------------------------------------------------------------
    def agf113_jvp_output_count(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        jvp = fn.own.get("jvp")
        outputs = facts.output_count
        jvp_facts = facts.facts("jvp") if jvp is not None and jvp.node is not None else None
        if jvp_facts is None or outputs is None or jvp_facts.has_yield:
            return
        for ret in jvp_facts.returns:
            count = ret.value.arity()
            if count is not None and count != outputs:
                self.reporter.add("AGF113", ret.node, function=fn.name,
                                  got=plural(count, "tangent"),
                                  expected=plural(outputs, "output"))

    # -- AGF114 ----------------------------------------------------------------
    def agf114_gradient_for_non_tensor(self, fn: FunctionClass, facts: FunctionFacts,
                                       method: Method, ret: Return) -> None:
        elems = ret.value.elems if ret.value.elems is not None else (
            (ret.value,) if ret.value.arity() == 1 else None)
        if elems is None:
            return
        for position, (arg, value) in enumerate(zip(fn.inputs, elems, strict=False)):
            if value.literal or not _definitely_not_none(value):
                continue  # literals are AGF205's
            reason = facts.non_tensor_reason(arg.arg)
            if reason is None:
                continue
            self.reporter.add("AGF114", ret.node, function=fn.name, method=method.name,
                              position=position, name=arg.arg, why=reason)
            return

    # -- AGF205 ----------------------------------------------------------------
    def agf205_backward_returns_literal(self, fn: FunctionClass, method: Method,
                                        ret: Return) -> None:
        value = ret.value
        candidates = list(enumerate(value.elems)) if value.elems is not None else [(None, value)]
        for position, item in candidates:
            if item.literal:
                where = f" at position {position}" if position is not None else ""
                self.reporter.add("AGF205", ret.node, function=fn.name, method=method.name,
                                  literal=item.text or "literal", position=where)
                return


def _definitely_not_none(value: Value) -> bool:
    if value.kind is Kind.NONE or value.maybe_none:
        return False
    return value.kind in (Kind.TENSOR, Kind.TENSORS, Kind.TENSORISH, Kind.NONTENSOR)


# torch 2.13 passes backward one list of gradients when a Function asks so.
BOXED_FROM = (2, 13)


def _boxed_gradients(fn: FunctionClass) -> bool:
    """`boxed_grads_call = True` (torch 2.13): backward receives one list of
    every output's gradient, whatever its parameters say."""
    value = fn.attr("boxed_grads_call")
    return isinstance(value, ast.Constant) and value.value is True
