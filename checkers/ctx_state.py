"""ctx and saved state: AGF001-AGF004, AGF008, AGF009, AGF109, AGF203, AGF206,
AGF210-AGF213, AGF215."""
from __future__ import annotations

import ast

from autograd_lint.analysis.apply_calls import held_by_owner
from autograd_lint.analysis.function_facts import FunctionFacts
from autograd_lint.analysis.interpreter import (
    Compute,
    CtxCall,
    CtxEscape,
    CtxRead,
    CtxStore,
    DataAccess,
    MethodFacts,
    Mutation,
)
from autograd_lint.analysis.values import Kind, Value
from autograd_lint.core.model import FunctionNode
from autograd_lint.core.project import FunctionClass
from autograd_lint.core.registry import ERROR, WARNING

from .base import Checker, nodes_with_ctx, source_text
from .fix_edits import (
    cuda_autocast_to_amp,
    data_read_to_detach,
    rename_attribute,
)

# Methods that run while the graph is built (forward-time methods).
_FORWARD_TIME = ("forward", "setup_context")
_CTX_LIKE_NAMES = frozenset({"ctx", "context", "_ctx", "self"})


class CtxStateChecker(Checker):
    family = "ctx_state"

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        for name in _FORWARD_TIME:
            method_facts = facts.facts(name)
            if method_facts is None or fn.method(name).owner is not fn:  # type: ignore[union-attr]
                continue
            for store in method_facts.of(CtxStore):
                self.agf001_ctx_tensor_attribute(fn, facts, name, store)
            for read in method_facts.of(CtxRead):
                self.agf003_saved_tensors_in_forward(fn, name, read)
            for call in method_facts.of(CtxCall):
                self.agf004_save_for_backward_twice(fn, call)
                self.agf203_mark_non_differentiable_input(fn, facts, call)
                self.agf212_setup_context_saves_returned_input(fn, facts, name, call)
                self.agf215_saved_output_view(fn, facts, call)
            if name == "setup_context":
                self.agf206_setup_context_compute(fn, method_facts.of(Compute))
        for name, method in fn.own.items():
            method_facts = facts.facts(name) if method.node is not None else None
            if method_facts is None:
                continue
            for call in method_facts.of(CtxCall):
                self.agf002_save_non_tensor(fn, facts, call)
            for escape in method_facts.of(CtxEscape):
                self.agf211_ctx_escapes(fn, escape)
            if name in ("backward", "vjp", "jvp"):
                # One finding per method: every later read is the same defect,
                # fixed by the same single unpack.
                again = [read for read in method_facts.of(CtxRead) if read.prior]
                if again:
                    self.agf210_saved_tensors_read_twice(fn, min(again, key=_position))
        self.agf109_jvp_without_save_for_forward(fn, facts)
        self.agf008_data_attribute(fn, facts)
        self.agf213_deprecated_ctx_api(fn)

    # -- AGF001 ----------------------------------------------------------------
    def agf001_ctx_tensor_attribute(self, fn: FunctionClass, facts: FunctionFacts,
                                    method: str, store: CtxStore) -> None:
        value = store.value
        if value.src == "rng" or value.kind in (Kind.NONE, Kind.NONTENSOR):
            return
        holds_tensor = value.kind.holds_tensor or (
            value.kind is Kind.UNKNOWN and not value.seq
            and store.attr in facts.ctx_attrs_used_as_tensors)
        if not holds_tensor:
            return
        if facts.opt_in.store_verdict(method, store) != "default":
            return  # kept only when a caller opts in (a debug solver, a mode): not established
        if (why := _constant_reason(value, facts)) is not None:
            self.agf009_ctx_constant_tensor(fn, store, why)
            return
        endpoint = _endpoint(value, store.value_node, facts, store.attr)
        what = endpoint or _describe_tensor(value, store.value_node)
        if endpoint is None:
            cycle = ""
        elif endpoint.startswith("input"):
            cycle = " and keeping the input alive as long as the graph"
        else:
            cycle = " and keeping the graph alive in a reference cycle (a leak)"
        self.reporter.add("AGF001", store.node, function=fn.name,
                          severity=ERROR if endpoint else WARNING,
                          attr=store.attr, what=what, cycle=cycle)

    # -- AGF009 ----------------------------------------------------------------
    def agf009_ctx_constant_tensor(self, fn: FunctionClass, store: CtxStore, why: str) -> None:
        """AGF001's by-design case: the tensor kept on ctx carries no gradient."""
        self.reporter.add("AGF009", store.node, function=fn.name, attr=store.attr,
                          what=f"`{source_text(store.value_node)}`", why=why)

    # -- AGF002 ----------------------------------------------------------------
    def agf002_save_non_tensor(self, fn: FunctionClass, facts: FunctionFacts,
                               call: CtxCall) -> None:
        if call.method not in ("save_for_backward", "save_for_forward", "mark_dirty",
                               "mark_non_differentiable"):
            return
        for node, value, starred in call.args:
            if starred or value.kind is Kind.NONE:
                continue
            what = _non_tensor_description(node, value, facts)
            if what is not None:
                self.reporter.add("AGF002", node, function=fn.name, method=call.method,
                                  what=what)

    # -- AGF003 ----------------------------------------------------------------
    def agf003_saved_tensors_in_forward(self, fn: FunctionClass, method: str,
                                        read: CtxRead) -> None:
        self.reporter.add("AGF003", read.node, function=fn.name, attr=read.attr, method=method)

    # -- AGF004 ----------------------------------------------------------------
    def agf004_save_for_backward_twice(self, fn: FunctionClass, call: CtxCall) -> None:
        if call.method != "save_for_backward" or not call.prior:
            return
        earlier = sorted(getattr(n, "lineno", 0) for n in call.prior if n is not call.node)
        if earlier:
            where = f"on a path that already called it (line {earlier[0]})"
        else:
            where = "on every iteration of the loop around it"
        self.reporter.add("AGF004", call.node, function=fn.name, where=where)

    # -- AGF008 ----------------------------------------------------------------
    def agf008_data_attribute(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        if not self.enabled("AGF008"):
            return
        for name, method in fn.own.items():
            if method.node is None:
                continue
            ctx = fn.ctx_name(method)
            writes = _data_writes(method.node)
            method_facts = facts.facts(name)
            # The interpreter's in-place changes (no facts: assume the worst).
            mutated = _reached_by(method_facts.of(Mutation)) if method_facts else None
            for node in _data_of_tensors(method_facts, facts.ctx_tensor_attrs):
                if isinstance(node.value, ast.Name) and (node.value.id == ctx or
                                                         node.value.id in _CTX_LIKE_NAMES):
                    continue
                base = source_text(node.value)
                autofix = None
                if isinstance(node.ctx, ast.Store) or id(node) in writes:
                    access = "write"
                    fix = f"change `{base}` itself inside a `torch.no_grad()` block instead"
                else:
                    access, fix = "read", f"use `{base}.detach()` instead"
                    # An in-place change through `x.data[i]` would start bumping
                    # x's version counter once detached: not a safe rewrite.
                    autofix = None if mutated is None or id(node) in mutated \
                        else data_read_to_detach(node)
                self.reporter.add("AGF008", node, function=fn.name, access=access, fix=fix,
                                  autofix=autofix)


    # -- AGF109 ----------------------------------------------------------------
    def agf109_jvp_without_save_for_forward(self, fn: FunctionClass,
                                            facts: FunctionFacts) -> None:
        jvp = fn.own.get("jvp")
        if jvp is None or jvp.node is None or facts.calls("save_for_forward"):
            return
        jvp_facts = facts.facts("jvp")
        reads = jvp_facts.of(CtxRead) if jvp_facts else []
        if reads:
            self.reporter.add("AGF109", reads[0].node, function=fn.name, attr=reads[0].attr)

    # -- AGF203 ----------------------------------------------------------------
    def agf203_mark_non_differentiable_input(self, fn: FunctionClass, facts: FunctionFacts,
                                             call: CtxCall) -> None:
        if call.method != "mark_non_differentiable":
            return
        returned = _returned_inputs(facts)
        for _, value, starred in call.args:
            src = value.src or ""
            if starred or not src.startswith("input:") or value.kind is Kind.NONTENSOR:
                continue
            name = src[6:]
            if name not in returned:
                self.reporter.add("AGF203", call.node, function=fn.name, name=name)
                return

    # -- AGF206 ----------------------------------------------------------------
    def agf206_setup_context_compute(self, fn: FunctionClass, computes: list[Compute]) -> None:
        """One finding per statement line, on its outermost computation."""
        outermost: dict[int, ast.expr] = {}
        for compute in computes:
            node = compute.node
            line = node.lineno
            current = outermost.get(line)
            if current is None or _span(node) > _span(current):
                outermost[line] = node
        for node in outermost.values():
            self.reporter.add("AGF206", node, function=fn.name, expr=source_text(node))

    # -- AGF210 ----------------------------------------------------------------
    def agf210_saved_tensors_read_twice(self, fn: FunctionClass, read: CtxRead) -> None:
        if not read.prior:
            return
        earlier = sorted(getattr(n, "lineno", 0) for n in read.prior if n is not read.node)
        where = (f"on a path that already read it (line {earlier[0]})" if earlier
                 else "on every iteration of the loop around it")
        self.reporter.add("AGF210", read.node, function=fn.name, attr=read.attr, where=where)

    # -- AGF211 ----------------------------------------------------------------
    def agf211_ctx_escapes(self, fn: FunctionClass, escape: CtxEscape) -> None:
        self.reporter.add("AGF211", escape.node, function=fn.name, how=escape.how)

    # -- AGF212 ----------------------------------------------------------------
    def agf212_setup_context_saves_returned_input(self, fn: FunctionClass,
                                                  facts: FunctionFacts, method: str,
                                                  call: CtxCall) -> None:
        if method != "setup_context" or call.method not in ("save_for_backward",
                                                            "save_for_forward"):
            return
        # An input changed in place and marked dirty may be returned and saved.
        dirty = {value.src[6:] for dirty_call in facts.calls("mark_dirty")
                 for _, value, _ in dirty_call.args if (value.src or "").startswith("input:")}
        returned = _returned_inputs(facts) - dirty
        for _, value, _ in call.args:
            names = {r[6:] for r in value.roots if r.startswith("input:")} & returned
            if names and (value.src == "output" or (value.src or "").startswith("input:")):
                self.reporter.add("AGF212", call.node, function=fn.name, name=sorted(names)[0])
                return

    # -- AGF213 ----------------------------------------------------------------
    def agf213_deprecated_ctx_api(self, fn: FunctionClass) -> None:
        if not self.enabled("AGF213"):
            return
        for ctx, node in nodes_with_ctx(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == ctx and node.attr in _DEPRECATED:
                detail, fix = _DEPRECATED[node.attr]
                autofix = rename_attribute(node, "saved_tensors") \
                    if node.attr == "saved_variables" else None
                self.reporter.add("AGF213", node, function=fn.name, what=f"ctx.{node.attr}",
                                  detail=detail, fix=fix, autofix=autofix)
        for name in ("forward", "backward"):
            method = fn.own.get(name)
            if method is not None and method.node is not None:
                self._deprecated_autocast(fn, method.node)

    def _deprecated_autocast(self, fn: FunctionClass, node: FunctionNode) -> None:
        """`@torch.cuda.amp.custom_fwd` / `custom_bwd` (deprecated since torch
        2.4, a FutureWarning at every definition): `torch.amp`'s with
        `device_type="cuda"` does the same."""
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            resolved = fn.info.body_scope.resolve(target) \
                if isinstance(target, (ast.Name, ast.Attribute)) else None
            kind = resolved.rsplit(".", 1)[-1] if resolved else None
            if resolved not in _CUDA_AUTOCAST or kind is None:
                continue
            replacement = f"torch.amp.{kind}(device_type=\"cuda\")"
            torch_name = ast.copy_location(ast.Name("torch", ast.Load()), decorator)
            torch_bound = fn.info.body_scope.resolve(torch_name) == "torch"
            self.reporter.add("AGF213", decorator, function=fn.name,
                              what=f"torch.cuda.amp.{kind}",
                              detail=" since torch 2.4 (a FutureWarning at every import)",
                              fix=f"use `@{replacement}`",
                              autofix=cuda_autocast_to_amp(decorator, kind)
                              if torch_bound else None)

    # -- AGF215 ----------------------------------------------------------------
    def agf215_saved_output_view(self, fn: FunctionClass, facts: FunctionFacts,
                                 call: CtxCall) -> None:
        if call.method != "save_for_backward":
            return
        outputs = {f"local:{name}": name for name in facts.returned_names}
        outputs["output"] = "output"
        for node, value, starred in call.args:
            if starred or not value.view or value.detached:
                continue  # a detached copy shares storage, not the graph (RULES.md)
            if value.src == "output" or (isinstance(node, ast.Name)
                                         and node.id in facts.returned_names):
                continue  # the output itself (setup_context's `output`, or forward's name)
            hits = sorted(outputs[r] for r in value.roots if r in outputs)
            if hits:
                self.reporter.add("AGF215", node, function=fn.name, arg=source_text(node),
                                  name=hits[0])


_CUDA_AUTOCAST = frozenset({"torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd",
                            "torch.cuda.amp.autocast_mode.custom_fwd",
                            "torch.cuda.amp.autocast_mode.custom_bwd"})
_DEPRECATED = {
    "saved_variables": ("", "use `ctx.saved_tensors`"),
    "mark_shared_storage": (" and does nothing in current PyTorch", "remove the call"),
}


def _returned_inputs(facts: FunctionFacts) -> set[str]:
    """Inputs that forward returns unchanged (as the value or a tuple element)."""
    forward = facts.facts("forward")
    names: set[str] = set()
    for ret in forward.returns if forward else ():
        for value in ret.value.elems if ret.value.elems is not None else (ret.value,):
            if value.src and value.src.startswith("input:"):
                names.add(value.src[6:])
    return names


def _position(read: CtxRead) -> tuple[int, int]:
    return read.node.lineno, read.node.col_offset


def _span(node: ast.expr) -> tuple[int, int]:
    return (-(node.col_offset), (node.end_col_offset or 0))


def _data_of_tensors(method_facts: MethodFacts | None,
                     ctx_tensors: frozenset[str]) -> list[ast.Attribute]:
    """`.data` accesses whose receiver has tensor evidence (RULES.md: a
    project class or container with a `data` attribute is no tensor), a ctx
    attribute forward set to a tensor included, once each, in source order."""
    if method_facts is None:
        return []
    found: dict[int, ast.Attribute] = {}
    for access in method_facts.of(DataAccess):
        base = access.base
        if base.kind in (Kind.TENSOR, Kind.TENSORISH) or \
                (base.src or "").startswith("ctx.") and base.src[4:] in ctx_tensors:
            found[id(access.node)] = access.node
    return sorted(found.values(), key=lambda n: (n.lineno, n.col_offset))


def _data_writes(method: ast.AST) -> set[int]:
    """`.data` nodes that are written through (`x.data.add_()`, `x.data += y`)."""
    writes: set[int] = set()
    for node in ast.walk(method):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            writes.add(id(node.target))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.endswith("_") and not node.func.attr.startswith("__"):
            writes.add(id(node.func.value))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    writes.add(id(target.value))
    return writes


def _reached_by(mutations: list[Mutation]) -> set[int]:
    """Nodes an in-place change reaches through: each changed expression and the
    objects it is reached from (`a.b[i]` in `a.b[i].add_()`: also `a.b`, `a`)."""
    reached: set[int] = set()
    for mutation in mutations:
        target: ast.AST = mutation.target
        while True:
            reached.add(id(target))
            if isinstance(target, (ast.Subscript, ast.Attribute)):
                target = target.value
            elif isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):
                target = target.func.value
            else:
                break
    return reached


def _endpoint(value: Value, node: ast.expr | None, facts: FunctionFacts,
              attr: str) -> str | None:
    """'input `x`' / 'output `y`' when the stored tensor is one of forward's
    inputs or outputs (the reference-cycle case), else None."""
    if f"ctx.{attr}" in facts.returned_names:
        return f"forward's output `ctx.{attr}`"
    candidates = value.elems if value.elems is not None else (value,)
    nodes = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    for index, item in enumerate(candidates):
        if item.kind is Kind.NONTENSOR or value.elems is not None and not item.kind.holds_tensor:
            continue  # in a tuple, only elements known to be tensors count
        if item.src and item.src.startswith("input:"):
            return f"input `{item.src[6:]}`"
        if item.src == "output":
            return "forward's output"
        item_node = nodes[index] if index < len(nodes) else None
        if isinstance(item_node, ast.Name) and item_node.id in facts.returned_names:
            return f"output `{item_node.id}`"
        if (input_name := _contiguous_input(item, item_node)) is not None:
            return f"input `{input_name}` (`.contiguous()` returns the input itself when it " \
                "is already contiguous)"
    return None


def _contiguous_input(value: Value, node: ast.expr | None) -> str | None:
    """The input `x` of `x.contiguous()`, which may be `x` itself."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            node.func.attr == "contiguous" and isinstance(node.func.value, ast.Name)):
        return None
    name = node.func.value.id
    return name if value.roots == {f"input:{name}"} else None


def _constant_reason(value: Value, facts: FunctionFacts) -> str | None:
    """Why a tensor kept on ctx is a constant of the graph (AGF009), or None:
    an integer or bool tensor, a scalar, or inputs backward gives no gradient."""
    if value.elems is not None:  # a tuple or list display: each tensor in it
        tensors = [e for e in value.elems if e.kind.holds_tensor]
        reasons = [_constant_reason(e, facts) for e in tensors]
        if not tensors or None in reasons:
            return None
        return "holds only constants" if len(set(reasons)) > 1 else reasons[0]
    if value.integral:
        return "is an integer or bool tensor (indices, a mask) and carries no gradient"
    if value.scalar:
        return "is a scalar tensor"
    inputs = {root[6:] for root in value.roots if root.startswith("input:")}
    if not inputs or len(inputs) != len(value.roots):
        return None
    names = ", ".join(f"`{name}`" for name in sorted(inputs))
    if inputs <= facts.no_gradient_inputs:
        return f"is forward's input {names}, for which backward returns no gradient"
    positions = {arg.arg: index for index, arg in enumerate(facts.fn.inputs)}
    if all(name in positions and held_by_owner(facts.fn, positions[name]) for name in inputs):
        return (f"is forward's input {names}, which every call passes as an object's "
                f"attribute (a parameter or buffer its module keeps alive)")
    return None


def _describe_tensor(value: Value, node: ast.expr | None) -> str:
    text = f"`{source_text(node)}`" if node is not None else "a value"
    if value.kind is Kind.TENSORS:
        return f"{text}, a container of tensors,"
    return f"the tensor {text}"


def _non_tensor_description(node: ast.expr, value: Value, facts: FunctionFacts) -> str | None:
    """How to call an argument that is certainly not a tensor, or None."""
    if value.src == "inputs":
        return "setup_context's whole `inputs` tuple (unpack it: `*inputs`)"
    text = f"`{source_text(node)}`"
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                         ast.SetComp)):
        return f"the {type(node).__name__.lower().replace('comp', '')} {text}"
    if value.seq and value.kind is not Kind.NONE:
        return f"{text}, a tuple or list"
    if value.kind is Kind.NONTENSOR and not value.maybe_none:
        if value.literal:
            return f"the literal {text}"
        if value.src and value.src.startswith("input:"):
            reason = facts.non_tensor_reason(value.src[6:])
            return f"input {text}" + (f" ({reason})" if reason else "")
        return text
    return None
