"""Custom operators (torch.library) as the rules see them: each op with its
parameters (tensor-ness from the annotations or the schema: exact), its
declared mutations, its fakes and its autograd registrations.

What counts (RULES.md, "Custom operators"):

- an op: a def decorated `@torch.library.custom_op("ns::name",
  mutates_args=...)` or `@torch.library.triton_op(...)`, the same called on a
  function (`custom_op("ns::name", fn, mutates_args=...)`), also through an
  alias (`register_op = torch.library.custom_op`, imported or version-guarded:
  the scope resolves it) or through a project wrapper that passes its
  parameters on to one (`direct_register_custom_op(name, fn, mutates_args,
  fake_impl)`: `wrapper_roles`); and `Library(...).define("name(Tensor x,
  Tensor(a!) y) -> Tensor")` with its `.impl`;
- its fake: `@op.register_fake`, `torch.library.register_fake("ns::name")`,
  `impl_abstract`, a library's `_register_fake`, a wrapper's fake argument;
- its autograd: `op.register_autograd(backward, setup_context=...)` or
  `torch.library.register_autograd("ns::name", backward, setup_context=...)`.

Registrations by name ("ns::name") may sit in another module than the op:
`ops_index` gathers a project's ops and registrations once (project.cache).
"""
from __future__ import annotations

import ast
import bisect
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.model import FunctionNode, ModuleInfo, Scope
from ..core.scan import REGISTRATION_WORDS, text_mentions_ops
from .custom_ops import OpParameter, mutates_entries, parse_schema, return_aliases
from .op_wrappers import FAKE_MAKERS, OP_MAKERS, factory_roles, wrapper_roles

if TYPE_CHECKING:
    from ..core.project import Project

AUTOGRAD_MAKERS = frozenset({"torch.library.register_autograd"})
LIBRARY_CLASS = "torch.library.Library"
# Implementations under these keys run on fake tensors themselves: the op
# needs no fake ("default" is torch.library.impl's CompositeExplicitAutograd).
_TRACEABLE_KEYS = frozenset({"CompositeImplicitAutograd", "CompositeExplicitAutograd",
                             "default"})


@dataclass(frozen=True)
class Registration:
    """A function registered for an op: a fake, a backward, a setup_context."""

    node: FunctionNode
    module: ModuleInfo


@dataclass
class Op:
    qualified: str | None  # "ns::name" ("::name" when the namespace is a Library's)
    kind: str  # custom_op | triton_op | define
    anchor: ast.AST  # the def or the define call: where AGF405 points
    module: ModuleInfo
    parameters: list[OpParameter]
    impl: Registration | None = None
    # The `mutates_args` entries (or `(a!)` parameters) with where each is
    # written; None: "unknown", or not a literal the analysis can read.
    mutates: list[tuple[str, ast.AST]] | None = field(default_factory=list)
    mutates_node: ast.AST | None = None
    returns_tensor: bool = False
    returns_aliases: frozenset[str] = frozenset()  # `-> Tensor(a)`: outputs alias inputs
    python_name: str | None = None  # the name the decorated def binds
    fakes: list[Registration] = field(default_factory=list)
    autograd: list[tuple[ast.Call, Registration | None, Registration | None]] = \
        field(default_factory=list)  # (call, backward, setup_context)
    # Made by a function of the project that registers ops (a wrapper, a
    # decorator factory): what else it registers for the op is not known.
    via_project_function: bool = False

    def parameter(self, name: str) -> OpParameter | None:
        return next((p for p in self.parameters if p.name == name), None)


@dataclass
class OpsIndex:
    """The scanned projects' ops, and the registrations made for them. Names
    pair within one project (files.ProjectRoots): projects side by side in
    one scan register their own ops."""

    ops: list[Op] = field(default_factory=list)
    # (project root, op name) of the ops with a fake (or a composite impl).
    fake_names: set[tuple[str | None, str]] = field(default_factory=set)
    # Projects that register a fake under a name built at run time.
    dynamic_fakes: set[str | None] = field(default_factory=set)
    # (project root, op name) of the ops with an implementation autograd
    # differentiates, and the projects that register autograd formulas under
    # names built at run time.
    differentiable_names: set[tuple[str | None, str]] = field(default_factory=set)
    dynamic_autograd: set[str | None] = field(default_factory=set)

    def has_no_gradient(self, op: Op, root: str | None) -> bool:
        """Whether `op` is known to have no gradient: a named op with no
        autograd formula registered anywhere in its project, and only
        implementations autograd does not differentiate (backend keys,
        CompositeExplicitAutograd, "default"). Not known (a registration
        under a name built at run time, a wrapper of the project's that
        registers ops, an implementation under a key not known): False."""
        return op.qualified is not None and op.kind in ("custom_op", "triton_op", "define") \
            and not op.via_project_function and not op.autograd \
            and root not in self.dynamic_autograd \
            and (root, _normal(op.qualified)) not in self.differentiable_names

    def may_have_fake(self, op: Op, root: str | None) -> bool:
        """Whether a fake for `op` may be registered in its project."""
        return bool(op.fakes) or root in self.dynamic_fakes or op.qualified is None or \
            (root, _normal(op.qualified)) in self.fake_names


# ---------------------------------------------------------------------------
# Annotations and schemas
# ---------------------------------------------------------------------------
def _annotation_kind(annotation: ast.expr | None) -> tuple[bool, bool]:
    """(tensor, tensor list) for a parameter annotation."""
    if annotation is None:
        return False, False
    text = ast.unparse(annotation).replace(" ", "")
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.replace(" ", "")
    is_list = any(text.startswith(p) for p in ("list[", "List[", "Sequence[", "tuple[",
                                                  "Tuple[", "typing.List[", "typing.Sequence["))
    mentions = "Tensor" in text
    return mentions and not is_list, mentions and is_list


def _returns_tensor(node: FunctionNode) -> bool:
    return node.returns is not None and "Tensor" in ast.unparse(node.returns)


def def_parameters(node: FunctionNode) -> list[OpParameter]:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        tensor, tensor_list = _annotation_kind(arg.annotation)
        found.append(OpParameter(arg.arg, index, tensor, tensor_list, default is not None, arg))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        tensor, tensor_list = _annotation_kind(arg.annotation)
        found.append(OpParameter(arg.arg, None, tensor, tensor_list, default is not None, arg))
    return found


# ---------------------------------------------------------------------------
# One module
# ---------------------------------------------------------------------------
class _ModuleOps:
    """The ops a module defines and the registrations it makes."""

    def __init__(self, module: ModuleInfo, project: Project | None) -> None:
        self.module = module
        self.project = project
        self.scope = module.scope
        self.ops: list[Op] = []
        self.libraries: dict[str, str] = {}  # library variable -> namespace
        self.fakes: list[tuple[str, Registration]] = []  # (op key, fake)
        self.autograds: list[tuple[str, ast.Call, Registration | None, Registration | None]] = []
        self.impls: list[tuple[str, Registration]] = []
        # A fake registered under a name built at run time (a registration
        # helper's parameter, an f-string): which ops have fakes is not known.
        self.dynamic_fakes = False
        self.traceable: set[str] = set()  # ops with a composite implementation
        # Ops with an implementation autograd differentiates (an Autograd key,
        # CompositeImplicitAutograd, or a key not known), and whether an
        # autograd formula is registered under a name built at run time.
        self.differentiable: set[str] = set()
        self.dynamic_autograd = False
        self.unresolved = False  # a registered function's name found no binding

    # -- names --------------------------------------------------------------------
    def resolve(self, node: ast.expr, deep: bool = False) -> str | None:
        """The torch.library name an expression denotes (aliases followed;
        with `deep`, also into a project module that binds one: asked only
        for calls that look like op definitions, since it may parse it)."""
        qualified = self.scope.resolve(node) if isinstance(node, (ast.Name, ast.Attribute)) \
            else None
        if qualified is None or qualified.startswith("torch.") or self.project is None or \
                not deep:
            return qualified
        resolved = self.project.resolve(qualified, self.module, load=True)
        owner = resolved.module if resolved is not None else None
        if owner is None or not owner.module_name or \
                not resolved.name.startswith(owner.module_name + "."):
            return qualified
        inner = resolved.name[len(owner.module_name) + 1:]
        if "." in inner:
            return qualified
        found, bound = owner.scope.lookup(inner)
        return bound if found and bound is not None else qualified

    def function(self, node: ast.expr | None) -> Registration | None:
        """The def a name passed to a registration denotes."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        if isinstance(node, ast.Name):
            found, bound = self.scope.lookup(node.id)
            if found and bound is None:
                definition = self.module.defs.get(node.id)
                if definition is not None:
                    return Registration(definition, self.module)
            if not found:
                self.unresolved = True  # a sparse parse may have left its def out
        if self.project is None:
            return None
        from .effects import effects_of

        callee = effects_of(self.project).callee(node, self.scope, self.module)
        return Registration(*callee) if callee is not None else None

    def op_key(self, node: ast.expr | None) -> str | None:
        """"ns::name" from a string literal, or "=name" for an op bound to a
        Python name (`scale.register_fake`)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value if "::" in node.value else f"::{node.value}"
        if isinstance(node, ast.Name):
            return f"={node.id}"
        return None

    # -- collection -----------------------------------------------------------
    def collect(self) -> _ModuleOps:
        calls: list[ast.Call] = []
        for node in self._registering_nodes():
            if isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._decorated(node)
            elif isinstance(node, ast.Assign):
                self._library(node)
        for call in calls:  # after the defs and libraries they may name
            self._call(call)
        return self

    def _registering_nodes(self) -> Iterator[ast.AST]:
        """The nodes, breadth first as `ast.walk` visits them, whose lines
        take in a line naming one of torch.library's words: a module of
        thousands of lines registers ops in a few, and a class that
        registers one op need not be walked whole."""
        lines = self._registering_lines()
        if not lines:
            return

        def spans_one(node: ast.AST) -> bool:
            first = getattr(node, "lineno", None)
            if first is None:
                return True  # (`arguments`, comprehensions): their children say
            first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            at = bisect.bisect_left(lines, first)
            return at < len(lines) and lines[at] <= (getattr(node, "end_lineno", None) or first)

        for statement in self.module.tree.body:
            queue = deque([statement] if spans_one(statement) else [])
            while queue:
                node = queue.popleft()
                yield node
                queue.extend(child for child in ast.iter_child_nodes(node) if spans_one(child))

    def _registering_lines(self) -> list[int]:
        """The lines naming one of torch.library's words, in order."""
        source = self.module.source
        lines: list[int] = []
        line, counted = 1, 0
        for match in REGISTRATION_WORDS.finditer(source):  # in order: count as we go
            line += source.count("\n", counted, match.start())
            counted = match.start()
            if not lines or lines[-1] != line:
                lines.append(line)
        return lines

    def _library(self, node: ast.Assign) -> None:
        value = node.value
        if isinstance(value, ast.Call) and self.resolve(value.func) == LIBRARY_CLASS and \
                value.args and isinstance(value.args[0], ast.Constant) and \
                isinstance(value.args[0].value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.libraries[target.id] = value.args[0].value

    def _decorated(self, node: FunctionNode) -> None:
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            func = call.func if call is not None else decorator
            name = self.resolve(func, deep=call is not None and _defines_op(call))
            if call is not None and name in OP_MAKERS:
                self._new_op(call, OP_MAKERS[name], Registration(node, self.module), node.name)
            elif call is not None and name in FAKE_MAKERS:
                key = self.op_key(call.args[0] if call.args else None)
                if key is not None and not key.startswith("="):
                    self.fakes.append((key, Registration(node, self.module)))
                else:
                    self.dynamic_fakes = True
            elif call is None and isinstance(func, ast.Attribute) and \
                    func.attr in ("register_fake", "register_abstract"):
                self.fakes.append((f"={ast.unparse(func.value)}",
                                   Registration(node, self.module)))
            elif call is not None and name == "torch.library.impl":
                self._library_impl(call, Registration(node, self.module))
            elif call is not None and _defines_op(call) and self.project is not None:
                self.ops.extend(_factory_op(call, node, self.module, self.scope, self.project))

    def _new_op(self, call: ast.Call, kind: str, impl: Registration | None,
                python_name: str | None, mutates: ast.expr | None = None) -> None:
        first = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "name"), None)
        qualified = first.value if isinstance(first, ast.Constant) and \
            isinstance(first.value, str) else None
        if mutates is None:
            mutates = next((k.value for k in call.keywords if k.arg == "mutates_args"), None)
        op = Op(qualified, kind, impl.node if impl is not None and
                impl.module is self.module else call, self.module,
                def_parameters(impl.node) if impl is not None else [], impl,
                python_name=python_name,
                returns_tensor=impl is not None and _returns_tensor(impl.node))
        op.mutates, op.mutates_node = _mutates(mutates)
        self.ops.append(op)

    def _library_impl(self, call: ast.Call, registration: Registration) -> None:
        """`torch.library.impl(lib, "name", "CUDA")` or `("ns::name", "CUDA")`."""
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            key: str | None = self.op_key(first)
            types = call.args[1:2]
        elif len(call.args) >= 2:
            key, types = self._library_key(call.args[0], call.args[1]), call.args[2:3]
        else:
            return
        if key is not None:
            self._impl(key, registration, types, call)

    def _applied(self, call: ast.Call) -> None:
        """`torch.library.register_fake("ns::x")(fn)`: a decorator applied by hand."""
        maker = call.func
        assert isinstance(maker, ast.Call)
        name = self.resolve(maker.func)
        registration = self.function(call.args[0]) if call.args else None
        if registration is None:
            if name in FAKE_MAKERS:
                self.dynamic_fakes = True  # a fake, of a function not known here
            return
        if name in OP_MAKERS:
            self._new_op(maker, OP_MAKERS[name], registration, None)
        elif name in FAKE_MAKERS:
            key = self.op_key(maker.args[0] if maker.args else None)
            if key is None or key.startswith("="):
                self.dynamic_fakes = True
            else:
                self.fakes.append((key, registration))
        elif name == "torch.library.impl":
            self._library_impl(maker, registration)

    def _call(self, call: ast.Call) -> None:
        func = call.func
        if isinstance(func, ast.Call):
            self._applied(call)
            return
        name = self.resolve(func, deep=_defines_op(call))
        if name in OP_MAKERS and len(call.args) >= 2:  # custom_op("ns::x", fn, ...)
            impl = self.function(call.args[1])
            if impl is not None:
                self._new_op(call, OP_MAKERS[name], impl, None)
            return
        if name in FAKE_MAKERS:
            key = self.op_key(call.args[0]) if call.args else None
            if key is None or key.startswith("="):
                self.dynamic_fakes = True
            elif len(call.args) >= 2:
                fake = self.function(call.args[1])
                if fake is not None:
                    self.fakes.append((key, fake))
            return
        if name in AUTOGRAD_MAKERS and len(call.args) >= 2:
            self._autograd(self.op_key(call.args[0]), call, call.args[1])
            return
        if not isinstance(func, ast.Attribute):
            self._wrapper_call(call)
            return
        owner = ast.unparse(func.value)
        if func.attr == "register_fake" and call.args:
            fake = self.function(call.args[0])
            if fake is not None:
                self.fakes.append((f"={owner}", fake))
        elif func.attr == "register_autograd" and call.args:
            self._autograd(f"={owner}", call, call.args[0])
        elif func.attr == "define" and call.args:
            self._define(call, owner)
        elif func.attr in ("impl", "_register_fake") and len(call.args) >= 2 and \
                owner in self.libraries:
            key = self._library_key(func.value, call.args[0])
            registration = self.function(call.args[1])
            if key is None and func.attr == "_register_fake":
                self.dynamic_fakes = True
            if key is not None and registration is not None:
                if func.attr == "impl":
                    self._impl(key, registration, call.args[2:], call)
                else:
                    self.fakes.append((key, registration))
        else:
            self._wrapper_call(call)

    def _impl(self, key: str, registration: Registration, rest: list[ast.expr],
              call: ast.Call) -> None:
        """An implementation; one for the Meta key (or a composite one, which
        traces through torch's ops) is what a fake is."""
        keys = [*rest, *(k.value for k in call.keywords if k.arg in ("dispatch_key", "types"))]
        keys = [e for k in keys for e in (k.elts if isinstance(k, (ast.List, ast.Tuple)) else [k])]
        literal = [k.value for k in keys if isinstance(k, ast.Constant) and
                   isinstance(k.value, str)]
        if "Meta" in literal:
            self.fakes.append((key, registration))  # what a fake is, under another name
        elif any(k in _TRACEABLE_KEYS for k in literal) or (keys and not literal):
            self.traceable.add(key)  # runs on fake tensors itself (or may: a key not known)
        if any(k.startswith("Autograd") or k == "CompositeImplicitAutograd" for k in literal) \
                or (keys and not literal):
            self.differentiable.add(key)
        self.impls.append((key, registration))

    def _library_key(self, library: ast.expr, name: ast.expr) -> str | None:
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return None
        if "::" in name.value:
            return name.value
        namespace = self.libraries.get(ast.unparse(library))
        return f"{namespace}::{name.value}" if namespace else f"::{name.value}"

    def _define(self, call: ast.Call, owner: str) -> None:
        strings = [a.value for a in call.args if isinstance(a, ast.Constant)
                   and isinstance(a.value, str)]
        if owner in self.libraries and len(strings) == 1:
            text, namespace = strings[0], self.libraries[owner]
        elif self.resolve(call.func) == "torch.library.define" and len(strings) == 2:
            text, namespace = strings[0] + strings[1], ""
        else:
            return
        parsed = parse_schema(text)
        if parsed is None:
            return
        name, parameters, written, returns = parsed
        qualified = name if "::" in name else f"{namespace}::{name}"
        op = Op(qualified, "define", call, self.module, parameters, returns_tensor=returns,
                returns_aliases=return_aliases(text))
        op.mutates = [(w, call) for w in sorted(written)]
        self.ops.append(op)

    def _autograd(self, key: str | None, call: ast.Call, backward: ast.expr) -> None:
        if key is None:
            self.dynamic_autograd = True  # which op gets the formula is not known
            return
        setup = next((k.value for k in call.keywords if k.arg == "setup_context"), None)
        self.autograds.append((key, call, self.function(backward), self.function(setup)))

    def _wrapper_call(self, call: ast.Call) -> None:
        """`direct_register_custom_op("name", fn, mutates_args=[...], fake_impl=f)`:
        a project function that registers its arguments as an op."""
        if self.project is None or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in arguments) \
                or not any(isinstance(a, ast.Name) for a in arguments):
            return  # no op name, or no function passed: no registration
        from .effects import effects_of

        callee = effects_of(self.project).callee(call.func, self.scope, self.module)
        if callee is None:
            return
        roles = wrapper_roles(callee[0], callee[1], self.project)
        if roles is None:
            return
        bound = _bind(call, callee[0])
        name, fn = bound.get(roles.get("name", "")), bound.get(roles.get("fn", ""))
        impl = self.function(fn)
        if impl is None or not isinstance(name, ast.Constant) or \
                not isinstance(name.value, str):
            return
        qualified = name.value if "::" in name.value else f"::{name.value}"
        mutates = bound.get(roles.get("mutates", ""))
        op = Op(qualified, "custom_op", impl.node if impl.module is self.module else call,
                self.module, def_parameters(impl.node), impl,
                returns_tensor=_returns_tensor(impl.node), via_project_function=True)
        op.mutates, op.mutates_node = _mutates(mutates) if mutates is not None else ([], None)
        self.ops.append(op)
        fake = self.function(bound.get(roles.get("fake", "")))
        if fake is not None:
            # This op's own fake, passed in the same call: not one to pair by
            # name (another project's `ns::name` may share the name).
            op.fakes.append(fake)


def _factory_op(call: ast.Call, node: FunctionNode, module: ModuleInfo, scope: Scope,
                project: Project) -> list[Op]:
    """`@cute_op("ns::name", mutates_args=())`: the op a project decorator
    factory makes of the decorated def (op_wrappers.factory_roles), if any."""
    from .effects import effects_of

    if not isinstance(call.func, (ast.Name, ast.Attribute)):
        return []
    callee = effects_of(project).callee(call.func, scope, module)
    roles = factory_roles(callee[0], callee[1], project) if callee else None
    if callee is None or roles is None:
        return []
    bound = _bind(call, callee[0])
    name = bound.get(roles.get("name", ""))
    if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
        return []
    qualified = name.value if "::" in name.value else f"::{name.value}"
    op = Op(qualified, "custom_op", node, module, def_parameters(node), Registration(node, module),
            python_name=node.name, returns_tensor=_returns_tensor(node),
            via_project_function=True)
    mutates = bound.get(roles.get("mutates", ""))
    op.mutates, op.mutates_node = _mutates(mutates) if mutates is not None else ([], None)
    return [op]


def _defines_op(call: ast.Call) -> bool:
    """A call that looks like an op's definition: an "ns::name" string first,
    or `mutates_args=`."""
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Constant) and isinstance(first.value, str) and \
        "::" in first.value or any(k.arg == "mutates_args" for k in call.keywords)


def _mutates(node: ast.expr | None) -> tuple[list[tuple[str, ast.AST]] | None, ast.AST | None]:
    """The literal entries of `mutates_args`; None for "unknown" or what the
    analysis cannot read."""
    if node is None:
        return [], None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        entries: list[tuple[str, ast.AST]] = list(mutates_entries(node))
        return (entries if len(entries) == len(node.elts) else None), node
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (None if node.value == "unknown" else [(node.value, node)]), node
    return None, node


def _bind(call: ast.Call, node: FunctionNode) -> dict[str, ast.expr]:
    positional = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    bound = dict(zip(positional, call.args, strict=False))
    bound.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return bound


# ---------------------------------------------------------------------------
# The project
# ---------------------------------------------------------------------------
def module_ops(module: ModuleInfo, project: Project | None) -> _ModuleOps | None:
    """The ops and registrations of one module (None when it mentions none)."""
    if not text_mentions_ops(module.source):
        return None
    cache = project.cache.setdefault("module_ops", {}) if project is not None else {}
    key = id(module)
    if key not in cache:  # type: ignore[operator]
        collected = _ModuleOps(module, project).collect()
        if module.partial and project is not None and collected.unresolved:
            # The sparse parse keeps the registrations, not always the defs
            # they name: the whole file, then.
            collected = _ModuleOps(project.complete(module), project).collect()
        cache[key] = collected  # type: ignore[index]
    return cache[key]  # type: ignore[index]


def ops_index(project: Project) -> OpsIndex:
    """Every op of the scanned modules, with the fakes and autograd
    registrations made for it in any module of its project."""
    index = project.cache.get("ops_index")
    if isinstance(index, OpsIndex):
        return index
    index = OpsIndex()
    names = project.cache.get("op_module_names")
    if isinstance(names, list):
        project.load_modules(names)  # a run in parts: the other parts' op modules too
    # One file's ops once: a sparse parse completed by a whole one is two
    # module objects of the same file, and both collect the whole file's ops.
    by_file: dict[str, _ModuleOps] = {}
    for module in project.all_modules():
        collected = module_ops(module, project)
        if collected is not None:
            by_file.setdefault(collected.module.path, collected)
    found = list(by_file.values())
    by_key: dict[tuple[str | None, str], list[Op]] = {}
    for collected in found:
        root = project.root_of(collected.module.path)
        for op in collected.ops:
            index.ops.append(op)
            if op.qualified is not None:
                by_key.setdefault((root, op.qualified), []).append(op)
                if not op.qualified.startswith("::"):
                    by_key.setdefault((root, f"::{_normal(op.qualified)}"), []).append(op)
            if op.python_name is not None:
                by_key.setdefault((root, f"{collected.module.path}={op.python_name}"),
                                  []).append(op)
    for collected in found:
        path, root = collected.module.path, project.root_of(collected.module.path)
        if collected.dynamic_fakes:
            index.dynamic_fakes.add(root)
        if collected.dynamic_autograd:
            index.dynamic_autograd.add(root)
        index.differentiable_names |= {(root, _normal(key)) for key in collected.differentiable}
        index.fake_names |= {(root, _normal(key)) for key in collected.traceable}
        for key, fake in collected.fakes:
            for op in _targets(by_key, root, key, path):
                op.fakes.append(fake)
            index.fake_names.add((root, _normal(key)))
        for key, registration in collected.impls:
            for op in _targets(by_key, root, key, path):
                if op.impl is None:
                    op.impl = registration
        for key, call, backward, setup in collected.autograds:
            targets = _targets(by_key, root, key, path)
            if not targets:  # a formula for an op not known here: any op's, perhaps
                index.dynamic_autograd.add(root)
            for op in targets:
                op.autograd.append((call, backward, setup))
    project.cache["ops_index"] = index
    return index


def _normal(key: str) -> str:
    """"ns::name" and "::name" (a Library's namespace not known) by the name."""
    return key.split("::", 1)[-1] if "::" in key else key


def _targets(by_key: dict[tuple[str | None, str], list[Op]], root: str | None, key: str,
             path: str) -> list[Op]:
    """The ops of project `root` a registration key names: by Python name in
    its module, by "ns::name", or by name ("::name": a Library's namespace
    not known). A registration that names a namespace is not matched to an
    op whose namespace is not known: `_C::marlin_gemm` is not `vllm::marlin_gemm`."""
    if key.startswith("="):
        return by_key.get((root, f"{path}{key}"), [])
    return by_key.get((root, key), [])



def body_writes(impl: Registration, project: Project | None) -> list[tuple[str, ast.AST]]:
    """(parameter, in-place operation) for each change the op's body makes to
    one of its parameters: directly, through a view, in a helper or a Triton
    kernel it launches, or through an op declared as mutating it (the effect
    analysis of AGF005-AGF007)."""
    from .events import Mutation
    from .markers import param_names

    found = []
    for mutation in _interpreted(impl, project).of(Mutation):
        for name in sorted(param_names(mutation.value.roots)):
            found.append((name, mutation.node))
    return found


def returned_arities(registration: Registration, project: Project | None
                     ) -> dict[int, int | None]:
    """How many values each `return` of a registered function hands back (by
    the return's node id; None: a length the analysis cannot count), from
    the interpreter's values: `(None,) * 18`, `grads + (None,) * k`, a name
    bound to a tuple."""
    facts = _interpreted(registration, project, gradients=True)
    return {id(ret.node): ret.value.arity() for ret in facts.returns}


def _interpreted(registration: Registration, project: Project | None,
                 gradients: bool = False):  # -> MethodFacts
    """The interpreter's facts of a registered function, each parameter a
    root (with `gradients`: a backward, whose parameters after ctx are tensors)."""
    from .effects import effects_of
    from .interpreter import Interpreter
    from .values import Kind, Value

    node, module = registration.node, registration.module
    names = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
    initial = {name: Value(Kind.TENSOR if gradients and index else Kind.UNKNOWN,
                           roots=frozenset({f"param:{name}"}),
                           taint=frozenset({f"param:{name}"}))
               for index, name in enumerate(names)}
    inner = module.scopes.get(id(node))
    scope = inner.parent if inner is not None and inner.parent is not None else module.scope
    effects = effects_of(project) if project is not None else None
    return Interpreter(module, scope, node, initial, effects=effects).run()
