"""Class structure and signatures: AGF103, AGF104, AGF106, AGF108, AGF110, AGF111, AGF207.

These rules look at which methods a Function defines (here or in known bases)
and at their signatures, against what autograd, apply and torch.vmap call.
"""
from __future__ import annotations

import ast

from autograd_lint.analysis.function_facts import FunctionFacts, only_raises
from autograd_lint.analysis.values import Kind
from autograd_lint.core.model import SPECIAL_METHODS, FunctionNode
from autograd_lint.core.project import CTX_PARAM_NAMES, FunctionClass, Method

from .base import Checker, plural, source_text
from .fix_edits import add_staticmethod


class StructureChecker(Checker):
    family = "structure"

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        for name in SPECIAL_METHODS:
            method = fn.own.get(name)
            if method is not None and method.node is not None:
                self.agf103_not_staticmethod(fn, method)
        self.agf104_ctx_signature_mismatch(fn)
        self.agf106_missing_backward(fn, facts)
        self.agf108_vmap_rule_conflict(fn)
        self.agf110_backward_and_vjp(fn)
        self.agf111_missing_forward(fn)
        self.agf115_custom_bwd_without_custom_fwd(fn)
        self.agf207_vmap_signature(fn, facts)

    # -- AGF115 ----------------------------------------------------------------
    def agf115_custom_bwd_without_custom_fwd(self, fn: FunctionClass) -> None:
        forward, backward = fn.method("forward"), fn.own.get("backward")
        if backward is None or backward.node is None or forward is None or \
                not _autocast_decorated(backward, "custom_bwd") or \
                _autocast_decorated(forward, "custom_fwd") or forward.node is None:
            return
        decorator = _autocast_decorator(fn, backward.node, "custom_bwd")
        self.reporter.add("AGF115", decorator if decorator is not None else backward.node,
                          function=fn.name,
                          decorator=source_text(decorator) if decorator is not None
                          else "custom_bwd",
                          forward_decorator=_matching_custom_fwd(decorator))

    # -- AGF103 ----------------------------------------------------------------
    def agf103_not_staticmethod(self, fn: FunctionClass, method: Method) -> None:
        if method.is_static or method.is_classmethod:
            return
        assert method.node is not None
        self.reporter.add("AGF103", method.node, function=fn.name, method=method.name,
                          autofix=add_staticmethod(method.node))

    # -- AGF104 ----------------------------------------------------------------
    def agf104_ctx_signature_mismatch(self, fn: FunctionClass) -> None:
        forward = fn.own.get("forward")
        if forward is not None and forward.node is not None:
            params = forward.params
            if fn.style == "setup_context" and params and params[0].arg in CTX_PARAM_NAMES:
                rest = ", ".join(a.arg for a in params[1:])
                self.reporter.add(
                    "AGF104", forward.node, function=fn.name,
                    problem=f"forward takes `{params[0].arg}` first although setup_context is "
                            "defined, so autograd passes the first input there, not ctx",
                    fix=f"drop it (`def forward({rest})`) and do the ctx work in setup_context")
            elif fn.style == "ctx" and not params and forward.vararg is None:
                self.reporter.add(
                    "AGF104", forward.node, function=fn.name,
                    problem="forward takes no parameters, but without setup_context autograd "
                            "calls it as `forward(ctx, *inputs)`",
                    fix="add ctx as its first parameter (or define setup_context)")
        setup = fn.own.get("setup_context")
        if setup is not None and setup.node is not None and setup.vararg is None:
            params = setup.params
            required = sum(1 for a in params if a.arg not in setup.defaults)
            if not required <= 3 <= len(params):
                self.reporter.add(
                    "AGF104", setup.node, function=fn.name,
                    problem=f"setup_context takes {plural(len(params), 'parameter')} but "
                            "autograd calls it as `setup_context(ctx, inputs, output)`",
                    fix="take exactly those three parameters")

    # -- AGF106 ----------------------------------------------------------------
    def agf106_missing_backward(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        forward = fn.own.get("forward")
        if forward is None or forward.node is None or not fn.bases_known:
            return
        if fn.method("backward") is not None or fn.method("vjp") is not None:
            return
        if only_raises(forward.node, "NotImplementedError") or facts.outputs_non_differentiable \
                or _returns_nothing(facts):
            return
        self.reporter.add("AGF106", fn.node, function=fn.name, name=fn.name)

    # -- AGF108 ----------------------------------------------------------------
    def agf108_vmap_rule_conflict(self, fn: FunctionClass) -> None:
        flag = fn.attr("generate_vmap_rule")
        if not (isinstance(flag, ast.Constant) and flag.value is True):
            return
        vmap = fn.method("vmap")
        owns = "generate_vmap_rule" in fn.class_attrs
        if vmap is not None and (owns or vmap.owner is fn):
            self.reporter.add("AGF108", fn.node, function=fn.name,
                              conflict="is set together with a `vmap` staticmethod",
                              fix="keep only one of the two vmap rules")
        elif vmap is None and fn.style == "ctx" and fn.forward is not None and \
                (owns or fn.forward.owner is fn) and not fn.ctx_confused:
            self.reporter.add("AGF108", fn.node, function=fn.name,
                              conflict="needs a forward without ctx, but this forward takes ctx "
                                       "and there is no setup_context",
                              fix="use `forward(*inputs)` with a `setup_context`")

    # -- AGF110 ----------------------------------------------------------------
    def agf110_backward_and_vjp(self, fn: FunctionClass) -> None:
        backward, vjp = fn.method("backward"), fn.method("vjp")
        if backward is None or vjp is None:
            return
        own = [m for m in (backward, vjp) if m.owner is fn]
        if not own:
            return  # reported where the pair was created
        later = max(own, key=lambda m: m.node.lineno if m.node is not None else
                    fn.node.lineno)
        node = later.node if later.node is not None else fn.node
        self.reporter.add("AGF110", node, function=fn.name, name=fn.name)

    # -- AGF111 ----------------------------------------------------------------
    def agf111_missing_forward(self, fn: FunctionClass) -> None:
        if fn.method("forward") is not None or not fn.bases_known:
            return
        if self.project.has_subclasses(fn) or not fn.own:
            return  # a base or marker class (no methods at all): never applied itself
        self.reporter.add("AGF111", fn.node, function=fn.name, name=fn.name)

    # -- AGF207 ----------------------------------------------------------------
    def agf207_vmap_signature(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        vmap = fn.own.get("vmap")
        if vmap is None or vmap.node is None or fn.forward is None or fn.forward.node is None:
            return
        taken = len(vmap.params) - 2
        if vmap.vararg is None and not fn.has_varargs and taken != len(fn.inputs):
            self.reporter.add(
                "AGF207", vmap.node, function=fn.name,
                problem=f"vmap takes {plural(max(taken, 0), 'argument')} after "
                        f"`(info, in_dims)` but forward takes {plural(len(fn.inputs), 'input')}",
                fix="take one argument per forward input, in forward's order")
        vmap_facts = facts.facts("vmap")
        outputs = facts.output_count
        for ret in vmap_facts.returns if vmap_facts else ():
            count = ret.value.arity()
            if count is not None and count != 2:
                what = "a single value" if count == 1 else f"{count} values"
                self.reporter.add(
                    "AGF207", ret.node, function=fn.name,
                    problem=f"vmap returns {what} instead of an `(output, out_dims)` pair",
                    fix="return the batched output and the dimension(s) its batch is in")
                continue
            out_dims = ret.elements[1] if ret.elements and len(ret.elements) == 2 else None
            if not isinstance(out_dims, ast.Tuple) or outputs is None:
                continue
            if outputs == 1:
                self.reporter.add(
                    "AGF207", ret.node, function=fn.name,
                    problem=f"vmap returns out_dims `{source_text(out_dims)}`, a tuple, but "
                            "forward has a single output",
                    fix="give a single int (or None) for a single output")
            elif len(out_dims.elts) != outputs:
                self.reporter.add(
                    "AGF207", ret.node, function=fn.name,
                    problem=f"vmap returns {len(out_dims.elts)} out_dims but forward returns "
                            f"{plural(outputs, 'output')}",
                    fix="give one out_dim per output")


def _returns_nothing(facts: FunctionFacts) -> bool:
    """forward returns no value on any path (an abstract base whose forward
    raises through a helper, a stub): it has no output to differentiate."""
    forward = facts.facts("forward")
    return forward is not None and not forward.has_yield and \
        all(ret.value.kind is Kind.NONE for ret in forward.returns)


# torch's autocast decorators for Functions, by the modules that define them
# (`torch.cuda.amp` and `torch.cpu.amp` forward to `torch.amp`).
_AUTOCAST_MODULES = ("torch.amp.", "torch.cuda.amp.", "torch.cpu.amp.")


def _autocast_decorated(method: Method, kind: str) -> bool:
    """Whether a method carries torch's `custom_fwd` / `custom_bwd` (through
    any alias: the decorators are resolved names)."""
    return any(d.startswith(_AUTOCAST_MODULES) and d.rsplit(".", 1)[-1] == kind
               for d in method.decorators)


def _autocast_decorator(fn: FunctionClass, node: FunctionNode, kind: str) -> ast.expr | None:
    """The decorator that is torch's `kind` (called or not, through any
    alias), where the finding points."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        resolved = fn.info.body_scope.resolve(target) \
            if isinstance(target, (ast.Name, ast.Attribute)) else None
        if resolved and resolved.startswith(_AUTOCAST_MODULES) and \
                resolved.rsplit(".", 1)[-1] == kind:
            return decorator
    return None


def _matching_custom_fwd(decorator: ast.expr | None) -> str:
    """The forward decorator to add: the backward's own spelling, with its
    arguments (`device_type` must agree)."""
    spelled = source_text(decorator) if decorator is not None else ""
    if "custom_bwd" not in spelled:  # through an alias: torch's own name
        return "@torch.amp.custom_fwd(device_type=...)"
    return "@" + spelled.replace("custom_bwd", "custom_fwd")
