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
from autograd_lint.core.config import show_torch
from autograd_lint.core.model import FunctionNode, ModuleInfo

from .base import Checker, source_text

# From torch 2.14 an op's registered backward returns exactly one gradient per
# input; earlier versions dropped trailing extras (RULES.md, AGF406).
EXACT_GRADIENTS_FROM = (2, 14)
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
        if self.enabled("AGF411"):
            self._registered_twice(module)

    # -- registrations made twice (AGF411) ------------------------------------------------
    def _registered_twice(self, module: ModuleInfo) -> None:
        """The same op defined, or given a fake or an autograd registration,
        twice by statements of this module that both run when it is imported
        (top-level and unconditional: a registration under an `if`, a `try`
        or in a function may be the other's alternative, and is left alone)."""
        top = _top_level_nodes(module)
        kinds: dict[tuple[str, str], dict[int, ast.AST]] = {}
        for op in ops_index(self.project).ops:
            if op.qualified is None:
                continue
            name = _defined_name(op)
            registered = [("the op", op.anchor)] if op.module.path == module.path else []
            if op.kind != "define":  # a schema's overloads share the op's fakes and name
                registered += [("a fake", fake.node) for fake in op.fakes
                               if fake.module.path == module.path]
                registered += [("an autograd registration", call)
                               for call, _, _ in op.autograd]
            for what, node in registered:
                if id(node) in top:
                    kinds.setdefault((name, what), {})[id(node)] = node
        for (qualified, what), nodes in kinds.items():
            first, *later = sorted(nodes.values(), key=lambda n: (n.lineno, n.col_offset))
            for node in later:
                # A decorated def registers at its decorator: the finding goes there.
                at = getattr(node, "decorator_list", None) or [node]
                self.reporter.add("AGF411", at[0], what=what[0].upper() + what[1:],
                                  op=qualified, first_line=_first_line(first),
                                  first_path=module.path)

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
        if self.enabled("AGF410"):
            self._fake_defaults(op, fake)
        if self.enabled("AGF409"):
            args = fake.node.args
            parameters = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            parameters -= assigned_names(fake.node)  # `x = x.to(dtype)`: a new tensor then
            # An op tagged `torch.Tag.inplace` returns its mutated first argument
            # by contract, and so does its fake (RULES.md, AGF409).
            contract = _first_parameter(fake.node) if "inplace" in _tags(op) else None
            for node in _own_returns(fake.node):
                aliased = _aliased_parameter(node.value, parameters)
                if aliased is not None and aliased != contract and \
                        not _declared_alias(op, aliased):
                    self.reporter.add("AGF409", node, fake=fake.node.name, param=aliased)

    def _fake_defaults(self, op: Op, fake: Registration) -> None:
        """AGF410: a parameter the op gives a literal default that the fake
        gives none, or another literal. Only ops defined by a def (a schema's
        defaults are the schema's), only defaults both sides can read."""
        if op.kind not in ("custom_op", "triton_op") or op.impl is None:
            return
        fake_defaults = _literal_defaults(fake.node)
        fake_names = {a.arg for a in _all_parameters(fake.node)}
        for name, default in _literal_defaults(op.impl.node).items():
            if default is _UNREADABLE or name not in fake_names:
                continue  # a computed default; a parameter AGF401 reports
            shown = fake_defaults.get(name, _MISSING)
            if shown is _UNREADABLE or (shown is not _MISSING and shown == default):
                continue  # (1 and 1.0 give the fake and the kernel the same value)
            self.reporter.add("AGF410", fake.node, fake=fake.node.name, param=name,
                              fake_default="no default" if shown is _MISSING
                              else f"the default `{shown!r}`",
                              op=op.qualified or "?", op_default=f"`{default!r}`")

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
                              got=count, wanted=len(positional), names=_names(positional),
                              consequence="every backward raises")
            return
        if count > len(positional):  # trailing extras: an error from torch 2.14 on
            older = self.supports_torch_before(EXACT_GRADIENTS_FROM)
            self.reporter.add("AGF406", returned, op=op.qualified or "?",
                              got=count, wanted=len(positional), names=_names(positional),
                              consequence=f"from torch {show_torch(EXACT_GRADIENTS_FROM)} every "
                              "backward raises (\"expected "
                              f"{len(positional)}, got {count}\"" + (
                                  f", where torch {show_torch(self.reporter.target_torch)} "
                                  "still drops the extras" if older else "") + ")")
            return
        elements = value.elts if isinstance(value, ast.Tuple) else [value]
        for element, parameter in zip(elements, positional, strict=False):
            if parameter.tensor_list and isinstance(element, ast.BinOp):
                self.reporter.add("AGF406", returned, op=op.qualified or "?",
                                  got=len(elements), wanted=len(positional),
                                  names=f"a list for `{parameter.name}` (a list of tensors)",
                                  consequence="every backward raises")
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
    """An op tagged `torch.Tag.inplace` or `torch.Tag.out`: torch 2.13
    generates its fake (RULES.md, AGF405)."""
    return bool(_tags(op) & {"inplace", "out"})


def _tags(op: Op) -> set[str]:
    """The `torch.Tag` names an op's definition passes as `tags=` (one tag or
    a sequence of them)."""
    anchor = op.anchor
    decorators = anchor.decorator_list if isinstance(anchor, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef)) else []
    calls = [d for d in decorators if isinstance(d, ast.Call)]
    if isinstance(anchor, ast.Call):
        calls.append(anchor)
    names: set[str] = set()
    for call in calls:
        for keyword in call.keywords:
            if keyword.arg == "tags":
                tags = keyword.value.elts if isinstance(keyword.value, (ast.Tuple, ast.List,
                                                                         ast.Set)) \
                    else [keyword.value]
                names.update(t.attr for t in tags if isinstance(t, ast.Attribute))
    return names


def _first_parameter(node: FunctionNode) -> str | None:
    positional = [*node.args.posonlyargs, *node.args.args]
    return positional[0].arg if positional else None


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


_MISSING = object()  # a parameter without a default
_UNREADABLE = object()  # a default that is not a literal


def _all_parameters(node: FunctionNode) -> list[ast.arg]:
    args = node.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


def _literal_defaults(node: FunctionNode) -> dict[str, object]:
    """Each parameter's default: its literal value, or _UNREADABLE."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                     strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
              if d is not None]
    found: dict[str, object] = {}
    for arg, default in pairs:
        try:
            found[arg.arg] = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            found[arg.arg] = _UNREADABLE
    return found


def _defined_name(op: Op) -> str:
    """The name an op's definition registers: a schema's with its overload
    (`quantize_per_tensor.tensor` is another op than `quantize_per_tensor`)."""
    anchor = op.anchor
    first = anchor.args[0] if isinstance(anchor, ast.Call) and anchor.args else None
    if op.kind == "define" and isinstance(first, ast.Constant) and isinstance(first.value, str):
        namespace = (op.qualified or "").partition("::")[0]
        return f"{namespace}::{first.value.split('(', 1)[0].strip()}"
    return op.qualified or "?"


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno  # type: ignore[attr-defined]


def _top_level_nodes(module: ModuleInfo) -> set[int]:
    """The ids of what runs unconditionally on import: the module's top-level
    statements, and the call a top-level expression or assignment makes."""
    found: set[int] = set()
    for statement in module.tree.body:
        found.add(id(statement))
        if isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) and \
                isinstance(statement.value, ast.Call):
            found.add(id(statement.value))
    return found
