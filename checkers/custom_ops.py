"""Custom operators (torch.library): AGF401-AGF409, and AGF001 in a
registered setup_context.

The ops, their fakes and autograd registrations come from the op model
(analysis/op_model.py), built once per project; each finding is reported in
the module that holds the code it points at (the fake, the `mutates_args`
entry, the write, the registered function), so `# noqa` and editors find it.
Tensor-ness is the op's annotations (or schema): exact.
"""
from __future__ import annotations

import ast

from autograd_lint.analysis.op_model import (
    Op,
    OpParameter,
    Registration,
    body_writes,
    module_ops,
    ops_index,
    returned_arities,
)
from autograd_lint.analysis.syntax import assigned_names, own_nodes
from autograd_lint.analysis.torch_api import VIEW_ATTRIBUTES, VIEW_METHODS
from autograd_lint.model import FunctionNode, ModuleInfo

from .base import Checker, source_text

_SETUP_FORMS = (("ctx", "inputs", "output"), ("ctx", "inputs", "keyword_only_inputs", "output"))


class CustomOpsChecker(Checker):
    family = "custom_ops"

    @classmethod
    def codes(cls) -> frozenset[str]:
        return super().codes() | {"AGF001"}  # a tensor kept on ctx in setup_context

    def check_module(self, module: ModuleInfo) -> None:
        if module_ops(module, self.project) is None:
            return
        for op in ops_index(self.project).ops:
            if op.module.path == module.path:
                self._check_declaration(op)
            for fake in op.fakes:
                if fake.module.path == module.path:
                    self._check_fake(op, fake)
            for call, backward, setup in op.autograd:
                if setup is not None and setup.module.path == module.path:
                    self._check_setup(op, setup)
                if backward is not None and backward.module.path == module.path:
                    self._check_backward(op, backward, call)

    # -- the op itself ------------------------------------------------------------------
    def _check_declaration(self, op: Op) -> None:
        if self.enabled("AGF402"):
            self._mutates_entries(op)
        if op.impl is not None and op.mutates is not None and op.parameters and \
                op.impl.module.path == op.module.path and \
                (self.enabled("AGF403") or self.enabled("AGF404")):
            self._writes(op, op.impl)
        index = ops_index(self.project)
        if self.enabled("AGF405") and self.project.scan_tree and op.kind != "triton_op" and \
                op.returns_tensor and not _generated_fake(op) and \
                not index.may_have_fake(op, self.project.root_of(op.module.path)):
            self.reporter.add("AGF405", op.anchor, op=op.qualified)

    def _mutates_entries(self, op: Op) -> None:
        if op.mutates is None or not op.parameters or op.kind == "define":
            return
        for name, node in op.mutates:
            parameter = op.parameter(name)
            if not name:
                why = "is empty"
            elif parameter is None:
                why = f"names no parameter of the op (it takes {_names(op.parameters)})"
            elif not (parameter.tensor or parameter.tensor_list):
                why = f"names `{name}`, which is not a Tensor (only tensors can be mutated)"
            else:
                continue
            self.reporter.add("AGF402", node, op=op.qualified or "?", entry=repr(name), why=why)

    def _writes(self, op: Op, impl: Registration) -> None:
        declared = {name for name, _ in op.mutates or ()}
        written: dict[str, ast.AST] = {}
        for name, node in body_writes(impl, self.project):
            written.setdefault(name, node)
            parameter = op.parameter(name)
            if name in declared or parameter is None or \
                    not (parameter.tensor or parameter.tensor_list):
                continue
            self.reporter.add("AGF403", node, op=op.qualified or impl.node.name, param=name,
                              how=source_text(node))
            declared.add(name)  # once per parameter
        if self.enabled("AGF404"):
            for name, node in op.mutates or ():
                parameter = op.parameter(name)
                if name not in written and parameter is not None and \
                        (parameter.tensor or parameter.tensor_list) and \
                        _mentions(ast.Module(body=impl.node.body, type_ignores=[]), {name}) \
                        and not _passed_on(impl.node, name):
                    # (A parameter the body never uses is declared mutated on
                    # purpose: a dependency that keeps the compiler's order.)
                    self.reporter.add("AGF404", node, op=op.qualified or "?", param=name)

    # -- fakes ------------------------------------------------------------------------
    def _check_fake(self, op: Op, fake: Registration) -> None:
        if self.enabled("AGF401") and op.parameters:
            why = _signature_difference(op.parameters, fake.node)
            if why is not None:
                self.reporter.add("AGF401", fake.node, fake=fake.node.name,
                                  op=op.qualified or "?", why=why)
        if self.enabled("AGF409"):
            args = fake.node.args
            parameters = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            parameters -= assigned_names(fake.node)  # `x = x.to(dtype)`: a new tensor then
            for node in _own_returns(fake.node):
                aliased = _aliased_parameter(node.value, parameters)
                if aliased is not None and not _declared_alias(op, aliased):
                    self.reporter.add("AGF409", node, fake=fake.node.name, param=aliased)

    # -- autograd ---------------------------------------------------------------------
    def _check_setup(self, op: Op, setup: Registration) -> None:
        node = setup.node
        args = node.args
        names = tuple(a.arg for a in [*args.posonlyargs, *args.args])
        keyword_only = any(p.position is None for p in op.parameters)
        wanted = _SETUP_FORMS[1] if keyword_only else _SETUP_FORMS[0]
        if self.enabled("AGF407") and args.kwarg is None and args.vararg is None and \
                names != wanted:
            self.reporter.add("AGF407", node, name=node.name, got=", ".join(names),
                              wanted=", ".join(wanted))
        if self.enabled("AGF001") and len(names) >= 3 and names[1] == "inputs":
            self._setup_tensors_on_ctx(op, node, names)

    def _setup_tensors_on_ctx(self, op: Op, node: FunctionNode, names: tuple[str, ...]) -> None:
        """AGF001: `ctx.x = x` where `x` is a Tensor input (unpacked from
        `inputs`) or the output."""
        ctx, inputs, output = names[0], names[1], names[-1]
        tensors: dict[str, str] = {}
        if op.returns_tensor:
            tensors[output] = "the op's output"
        positional = [p for p in op.parameters if p.position is not None]
        for statement in ast.walk(node):
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name) and \
                    statement.value.id == inputs:
                for target in statement.targets:
                    if isinstance(target, (ast.Tuple, ast.List)):
                        for element, parameter in _unpacked(target.elts, positional):
                            if isinstance(element, ast.Name) and parameter.tensor:
                                tensors[element.id] = f"the op's input `{parameter.name}`"
        for statement in ast.walk(node):
            if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Name):
                continue
            what = tensors.get(statement.value.id)
            for target in statement.targets:
                if what and isinstance(target, ast.Attribute) and \
                        isinstance(target.value, ast.Name) and target.value.id == ctx:
                    self.reporter.add("AGF001", statement, attr=target.attr,
                                      what=f"a tensor ({what})",
                                      cycle=" and keeping it alive as long as the graph")

    def _check_backward(self, op: Op, backward: Registration, call: ast.Call) -> None:
        node = backward.node
        positional = [p for p in op.parameters if p.position is not None]
        if self.enabled("AGF406") and positional:
            arities = returned_arities(backward, self.project)
            for returned in _own_returns(node):
                self._gradient_count(op, positional, returned, arities.get(id(returned)))
        if self.enabled("AGF408"):
            self._needs_input_grad(op, positional, node)

    def _gradient_count(self, op: Op, positional: list[OpParameter], returned: ast.Return,
                        count: int | None) -> None:
        value = returned.value
        if value is None or count is None:
            return  # a length the analysis cannot count (a call, a starred unknown)
        if count < len(positional):
            self.reporter.add("AGF406", returned, op=op.qualified or "?",
                              got=count, wanted=len(positional), names=_names(positional))
            return
        elements = value.elts if isinstance(value, ast.Tuple) else [value]
        for element, parameter in zip(elements, positional, strict=False):
            if parameter.tensor_list and isinstance(element, ast.BinOp):
                self.reporter.add("AGF406", returned, op=op.qualified or "?",
                                  got=len(elements), wanted=len(positional),
                                  names=f"a list for `{parameter.name}` (a list of tensors)")
                return

    def _needs_input_grad(self, op: Op, positional: list[OpParameter],
                          node: FunctionNode) -> None:
        ctx = node.args.args[0].arg if node.args.args else None
        if ctx is None or _guards_length(node, ctx):
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Attribute) and \
                    sub.value.attr == "needs_input_grad" and \
                    isinstance(sub.value.value, ast.Name) and sub.value.value.id == ctx and \
                    isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, int):
                index = sub.slice.value
                if 0 <= index < len(positional) and positional[index].has_default:
                    self.reporter.add("AGF408", sub, index=index,
                                      param=positional[index].name)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
def _names(parameters: list[OpParameter]) -> str:
    return "(" + ", ".join(p.name for p in parameters) + ")"


def _signature_difference(parameters: list[OpParameter], fake: FunctionNode) -> str | None:
    """How a fake's parameters differ from its op's in a way that breaks the
    call torch makes (None: they fit). torch calls a fake with the op's
    positional arguments by position and its keyword-only ones by name, so a
    positional parameter renamed is harmless; one that takes another of the
    op's parameters' place, a count that does not fit, or a keyword-only
    parameter it cannot take is not."""
    args = fake.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    required = len(positional) - len(args.defaults)
    keyword_only = {a.arg for a in args.kwonlyargs}
    op_positional = [p.name for p in parameters if p.position is not None]
    op_keyword_only = [p.name for p in parameters if p.position is None]
    for index, name in enumerate(positional):
        if name in op_positional and op_positional.index(name) != index:
            return (f"takes the op's `{name}` at position {index}, where the op passes "
                    f"`{op_positional[index]}`" if index < len(op_positional) else
                    f"takes the op's `{name}` at position {index}, past the op's parameters")
    if args.vararg is None and len(positional) < len(op_positional):
        missing = op_positional[len(positional):]
        return f"has no parameter for {', '.join(f'`{n}`' for n in missing)}"
    extra = [n for n in positional[len(op_positional):required] if n not in op_keyword_only]
    if extra:  # (one named like a keyword-only parameter of the op gets it by name)
        return f"requires {', '.join(f'`{n}`' for n in extra)}, which the op does not pass"
    refused = [n for n in op_keyword_only if n not in keyword_only and n not in positional]
    if refused and args.kwarg is None:
        return f"cannot take the keyword-only {', '.join(f'`{n}`' for n in refused)}"
    return None


def _generated_fake(op: Op) -> bool:
    """An op tagged `torch.Tag.inplace` or `torch.Tag.out` (one tag or a
    sequence of them): torch 2.13 generates its fake (RULES.md, AGF405)."""
    anchor = op.anchor
    decorators = anchor.decorator_list if isinstance(anchor, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef)) else []
    calls = [d for d in decorators if isinstance(d, ast.Call)]
    if isinstance(anchor, ast.Call):
        calls.append(anchor)
    for call in calls:
        for keyword in call.keywords:
            if keyword.arg == "tags":
                tags = keyword.value.elts if isinstance(keyword.value, (ast.Tuple, ast.List,
                                                                         ast.Set)) \
                    else [keyword.value]
                if any(isinstance(t, ast.Attribute) and t.attr in ("inplace", "out")
                       for t in tags):
                    return True
    return False


def _own_returns(node: FunctionNode) -> list[ast.Return]:
    """The returns of a def's own body (not of nested defs or lambdas)."""
    return [n for n in own_nodes(node) if isinstance(n, ast.Return)]


def _aliased_parameter(value: ast.expr | None, parameters: set[str]) -> str | None:
    """The parameter a returned expression is, or is a view of."""
    while value is not None:
        if isinstance(value, ast.Name):
            return value.id if value.id in parameters else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                value.func.attr in VIEW_METHODS:
            value = value.func.value
        elif isinstance(value, ast.Attribute) and value.attr in VIEW_ATTRIBUTES:
            value = value.value
        elif isinstance(value, ast.Subscript):
            value = value.value
        else:
            return None
    return None


def _unpacked(elements: list[ast.expr], parameters: list[OpParameter]
              ) -> list[tuple[ast.expr, OpParameter]]:
    """The parameter each name of `a, *_, b = inputs` receives: those before
    a starred name from the front, those after it from the back."""
    star = next((i for i, e in enumerate(elements) if isinstance(e, ast.Starred)), None)
    if star is None:
        return list(zip(elements, parameters, strict=False)) \
            if len(elements) == len(parameters) else []
    tail = elements[star + 1:]
    if star + len(tail) > len(parameters):
        return []
    return [*zip(elements[:star], parameters, strict=False),
            *zip(tail, parameters[len(parameters) - len(tail):], strict=False)]


def _declared_alias(op: Op, name: str) -> bool:
    """The schema says an output aliases this input (`Tensor(a) x -> Tensor(a)`)."""
    parameter = op.parameter(name)
    return parameter is not None and parameter.alias is not None and \
        parameter.alias in op.returns_aliases


def _guards_length(node: FunctionNode, ctx: str) -> bool:
    """`len(ctx.needs_input_grad)` appears in the backward."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and \
                sub.func.id == "len" and sub.args and \
                isinstance(sub.args[0], ast.Attribute) and \
                sub.args[0].attr == "needs_input_grad":
            return True
    return False


def _passed_on(node: FunctionNode, name: str) -> bool:
    """Whether the body hands the parameter, or a name computed from it (a
    view: `q = query.view(...)`), to a call: code the analysis may not see
    into (an extension, a kernel launcher) may write it there."""
    derived = {name}
    changed = True
    while changed:
        changed = False
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and \
                    sub.value is not None and _mentions(sub.value, derived):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name) and leaf.id not in derived:
                            derived.add(leaf.id)
                            changed = True
    return any(isinstance(sub, ast.Call) and any(
        _mentions(argument, derived) for argument in [*sub.args, *(k.value for k in sub.keywords)])
        for sub in ast.walk(node))


def _mentions(expression: ast.AST, names: set[str]) -> bool:
    return any(isinstance(leaf, ast.Name) and leaf.id in names for leaf in ast.walk(expression))
