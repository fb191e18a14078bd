"""In-place changes: AGF005 (saved tensors), AGF006 (incoming gradients),
AGF007 (forward inputs without mark_dirty), AGF208/AGF209 (mark_dirty misuse),
and their by-design kinds (pedantic): AGF010 (in-place collectives), AGF011
(only under a caller's opt-in flag), AGF012 (an input changed and returned).

The interpreter records every in-place operation with the abstract value of
the tensor it changes; that value's roots say which saved tensor, gradient or
input it may alias on some path. A name rebound to a new tensor has no roots
left on that path, so `g = g.clone(); g.mul_(2)` is silent.
"""
from __future__ import annotations

import ast

from autograd_lint.analysis.apply_calls import temporary_everywhere
from autograd_lint.analysis.function_facts import FunctionFacts
from autograd_lint.analysis.interpreter import CtxCall, MethodFacts, Mutation
from autograd_lint.analysis.values import Kind
from autograd_lint.core.project import FunctionClass

from .base import Checker, source_text
from .fix_edits import clone_gradient


class InplaceChecker(Checker):
    family = "inplace"

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        # (code, tensor, statement line): `x.mul_(a).add_(b)` is one finding.
        self._reported: set[tuple[str, str, int]] = set()
        for name in ("backward", "vjp", "jvp"):
            method_facts = self._own_facts(fn, facts, name)
            for mutation in method_facts.of(Mutation) if method_facts else ():
                self._judge_backward(fn, facts, name, mutation)
        forward = self._own_facts(fn, facts, "forward")
        if forward is not None:
            dirty = self._dirty_inputs(fn, facts)
            for mutation in forward.of(Mutation):
                self._judge_forward(fn, facts, mutation, dirty)
        if fn.own.get("forward") is not None or fn.own.get("setup_context") is not None:
            for call in facts.calls("mark_dirty"):
                self.agf208_mark_dirty_non_input(fn, call)
            self.agf209_dirty_input_not_returned(fn, facts)

    @staticmethod
    def _own_facts(fn: FunctionClass, facts: FunctionFacts, name: str) -> MethodFacts | None:
        method = fn.own.get(name)
        if method is None or method.node is None:
            return None
        return facts.facts(name)

    # -- which rule a change in backward falls under ------------------------------
    def _judge_backward(self, fn: FunctionClass, facts: FunctionFacts, method: str,
                        mutation: Mutation) -> None:
        """A saved tensor (AGF005) or the incoming gradient (AGF006) changed in
        place; by design when it is a collective (AGF010) or happens only
        under a caller's flag (AGF011)."""
        if "saved" in mutation.value.roots and not self._by_design(
                fn, facts, method, mutation, "saved", "a tensor saved for backward"):
            self.agf005_saved_tensor_inplace(fn, mutation)
        if method == "jvp":
            return
        roots = sorted(r[5:] for r in mutation.value.roots if r.startswith("grad:"))
        if roots and not self._by_design(fn, facts, method, mutation, f"grad:{roots[0]}",
                                         f"the incoming gradient `{roots[0]}`"):
            self.agf006_grad_output_inplace(fn, mutation, roots[0])

    def _judge_forward(self, fn: FunctionClass, facts: FunctionFacts, mutation: Mutation,
                       dirty: set[str]) -> None:
        """A forward input changed in place without mark_dirty: AGF007, or
        AGF012 when forward returns it; AGF010 / AGF011 by design."""
        for root in sorted(mutation.value.roots):
            if not root.startswith("input:"):
                continue
            name = root[6:]
            if name in dirty or facts.inputs.get(name, mutation.value).seq:
                continue  # marked dirty, or a container: autograd sees no tensor there
            is_tensor = (mutation.certain_tensor or mutation.value.kind is Kind.TENSOR
                         or facts.input_is_tensor(name))
            if not is_tensor or facts.inputs.get(name, mutation.value).kind is Kind.NONTENSOR:
                continue
            if facts.side_effect_buffer(name):
                continue  # running statistics, caches: updated by design (RULES.md)
            if self._by_design(fn, facts, "forward", mutation, root, f"forward's input `{name}`"):
                return
            if root in facts.returned_roots:
                self.agf012_inplace_returned_input(fn, mutation, name)
            elif not _temporary(fn, name):
                self.agf007_input_inplace_without_mark_dirty(fn, mutation, name)
            return

    def _by_design(self, fn: FunctionClass, facts: FunctionFacts, method: str,
                   mutation: Mutation, root: str, source: str) -> bool:
        """Whether the write is no defect of every caller's: an in-place
        collective (AGF010), a write only under a caller's flag (AGF011), or a
        write the literal arguments of every call rule out (nothing)."""
        if mutation.collective:
            self.agf010_inplace_collective(fn, mutation, root, source)
            return True
        verdict = facts.opt_in.verdict(method, mutation, root)
        if verdict == "opt-in":
            self.agf011_inplace_opt_in(fn, facts, method, mutation, root, source)
        return verdict != "default"

    # -- AGF005 ----------------------------------------------------------------
    def agf005_saved_tensor_inplace(self, fn: FunctionClass, mutation: Mutation) -> None:
        target = source_text(mutation.target)
        name = _base_name(mutation.target) or "t"
        if self._seen("AGF005", "saved", mutation):
            return
        self.reporter.add("AGF005", mutation.node, function=fn.name, how=mutation.how,
                          target=target, source="a tensor saved for backward", via="",
                          name=name)

    # -- AGF006 ----------------------------------------------------------------
    def agf006_grad_output_inplace(self, fn: FunctionClass, mutation: Mutation,
                                   root: str) -> None:
        if self._seen("AGF006", root, mutation):
            return
        target = source_text(mutation.target)
        backward = fn.own.get("backward")
        autofix = None
        if backward is not None and backward.node is not None and \
                root in (a.arg for a in backward.params[1:]):
            autofix = clone_gradient(backward.node, root)
        self.reporter.add("AGF006", mutation.node, function=fn.name, how=mutation.how,
                          target=target, root=root, via=_via(mutation, root), autofix=autofix)

    # -- AGF007 ----------------------------------------------------------------
    def agf007_input_inplace_without_mark_dirty(self, fn: FunctionClass, mutation: Mutation,
                                                name: str) -> None:
        if self._seen("AGF007", name, mutation):
            return
        self.reporter.add("AGF007", mutation.node, function=fn.name, how=mutation.how,
                          target=source_text(mutation.target), root=name,
                          via=_via(mutation, name))

    # -- AGF010 ----------------------------------------------------------------
    def agf010_inplace_collective(self, fn: FunctionClass, mutation: Mutation, root: str,
                                  source: str) -> None:
        if self._seen("AGF010", root, mutation):
            return
        self.reporter.add("AGF010", mutation.node, function=fn.name, how=mutation.how,
                          target=source_text(mutation.target), source=source,
                          via=_via(mutation, root.partition(":")[2]))

    # -- AGF011 ----------------------------------------------------------------
    def agf011_inplace_opt_in(self, fn: FunctionClass, facts: FunctionFacts, method: str,
                              mutation: Mutation, root: str, source: str) -> None:
        if self._seen("AGF011", root, mutation):
            return
        space = facts.opt_in.space
        flag = space.describe(facts.opt_in.deciding(method, mutation, root)) \
            if space is not None else "a flag"
        self.reporter.add("AGF011", mutation.node, function=fn.name, how=mutation.how,
                          target=source_text(mutation.target), source=source,
                          via=_via(mutation, root.partition(":")[2]), flag=flag)

    # -- AGF012 ----------------------------------------------------------------
    def agf012_inplace_returned_input(self, fn: FunctionClass, mutation: Mutation,
                                      name: str) -> None:
        if self._seen("AGF012", name, mutation):
            return
        self.reporter.add("AGF012", mutation.node, function=fn.name, how=mutation.how,
                          target=source_text(mutation.target), root=name,
                          via=_via(mutation, name))

    # -- AGF208 ----------------------------------------------------------------
    def agf208_mark_dirty_non_input(self, fn: FunctionClass, call: CtxCall) -> None:
        for node, value, starred in call.args:
            if starred or value.kind in (Kind.NONE, Kind.NONTENSOR) or \
                    (value.src or "").startswith("input:"):
                continue
            inputs = sorted(r[6:] for r in value.roots if r.startswith("input:"))
            if inputs and value.view:
                what = f"a view of input `{inputs[0]}`"
                consequence = "autograd raises a RuntimeError"
            elif value.kind is Kind.TENSOR and not inputs and value.src != "output":
                what, consequence = "an intermediate tensor", "autograd ignores it with a warning"
            else:
                continue
            self.reporter.add("AGF208", call.node, function=fn.name, arg=source_text(node),
                              what=what, consequence=consequence)

    # -- AGF209 ----------------------------------------------------------------
    def agf209_dirty_input_not_returned(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        dirty = sorted({value.src[6:] for call in facts.calls("mark_dirty")
                        for _, value, starred in call.args
                        if not starred and (value.src or "").startswith("input:")})
        forward = facts.facts("forward")
        if not dirty or forward is None:
            return
        for ret in forward.returns:
            if isinstance(ret.node.value, ast.Call):
                continue  # `return wrap(x)`: what a call returns is an unknown form (RULES.md)
            values = ret.value.elems if ret.value.elems is not None else (ret.value,)
            if ret.value.elems is None and (ret.value.seq or ret.value.kind is Kind.UNKNOWN
                                            and not ret.value.single
                                            and not (ret.value.src or "").startswith("input:")):
                continue  # an unknown return form
            if any(v.kind is Kind.UNKNOWN and not v.roots for v in values):
                continue  # what an unknown callee gave back may be the input itself
            # What may be returned (an alias on some path) is not a missing return.
            returned = {root[6:] for v in values for root in v.roots if root.startswith("input:")}
            missing = [name for name in dirty if name not in returned]
            if missing:
                self.reporter.add("AGF209", ret.node, function=fn.name, name=missing[0])

    def _seen(self, code: str, tensor: str, mutation: Mutation) -> bool:
        """Whether this statement's change of `tensor` was already reported."""
        key = (code, tensor, getattr(mutation.node, "lineno", 0))
        if key in self._reported:
            return True
        self._reported.add(key)
        return False

    @staticmethod
    def _dirty_inputs(fn: FunctionClass, facts: FunctionFacts) -> set[str]:
        """Inputs passed to ctx.mark_dirty anywhere in forward / setup_context."""
        dirty: set[str] = set()
        for name in ("forward", "setup_context"):
            method_facts = facts.facts(name)
            for call in method_facts.of(CtxCall) if method_facts else ():
                if call.method == "mark_dirty":
                    for _, value, _ in call.args:
                        dirty.update(r[6:] for r in value.roots if r.startswith("input:"))
        return dirty


def _temporary(fn: FunctionClass, name: str) -> bool:
    """Every call seen passes a temporary for this input: no caller holds the
    tensor the write changes (RULES.md, the harm)."""
    names = [arg.arg for arg in fn.inputs]
    return name in names and temporary_everywhere(fn, names.index(name))


def _via(mutation: Mutation, name: str) -> str:
    """` (which `t` may alias)` when the changed expression is not the name itself."""
    target = source_text(mutation.target)
    return "" if _base_name(mutation.target) == name else f" (which `{target}` may alias)"


def _base_name(node: ast.expr) -> str | None:
    """The name an expression like `x`, `x[0]`, `x.data` or `x.view(-1)` starts from."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None
