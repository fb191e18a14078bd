"""Which classes are custom Functions, across every scanned module.

A class is a Function when one of its bases resolves to torch's Function
classes, or to a class already known to be a Function in any scanned module
(following re-exports such as `from .ops import MyFn` in a package's
`__init__.py`). The answer is a fixpoint over all classes.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from .analysis.torch_api import FUNCTION_BASES, SPECIAL_METHODS
from .model import ClassInfo, FunctionNode, ModuleInfo

_MAX_REEXPORT_HOPS = 8
CTX_PARAM_NAMES = frozenset({"ctx", "context", "_ctx"})


@dataclass
class Method:
    """One method of a Function class (own or inherited)."""

    name: str
    node: FunctionNode | None  # None: bound by assignment (`forward = staticmethod(f)`)
    owner: FunctionClass
    decorators: tuple[str, ...] = ()

    @property
    def is_static(self) -> bool:
        return "staticmethod" in self.decorators

    @property
    def is_classmethod(self) -> bool:
        return "classmethod" in self.decorators

    @property
    def once_differentiable(self) -> bool:
        return any(d.rsplit(".", 1)[-1] == "once_differentiable" for d in self.decorators)

    @property
    def params(self) -> list[ast.arg]:
        """Positional parameters as autograd passes them (cls dropped)."""
        if self.node is None:
            return []
        args = [*self.node.args.posonlyargs, *self.node.args.args]
        return args[1:] if self.is_classmethod else args

    @property
    def defaults(self) -> dict[str, ast.expr]:
        """Default value of each positional parameter that has one."""
        if self.node is None:
            return {}
        args = [*self.node.args.posonlyargs, *self.node.args.args]
        defaults = self.node.args.defaults
        return {a.arg: d for a, d in zip(args[len(args) - len(defaults):], defaults, strict=False)}

    @property
    def vararg(self) -> ast.arg | None:
        return self.node.args.vararg if self.node is not None else None


@dataclass
class FunctionClass:
    """A custom torch.autograd.Function subclass and what we know of it."""

    info: ClassInfo
    bases: list[FunctionClass | None] = field(default_factory=list)  # None: torch's or unknown
    bases_known: bool = True  # every base is torch's Function or a known Function
    own: dict[str, Method] = field(default_factory=dict)
    class_attrs: dict[str, ast.expr] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def node(self) -> ast.ClassDef:
        return self.info.node

    @property
    def module(self) -> ModuleInfo:
        return self.info.module

    def method(self, name: str) -> Method | None:
        """A method defined here or inherited from a known Function base."""
        seen: set[int] = set()
        stack: list[FunctionClass] = [self]
        while stack:
            cls = stack.pop(0)
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            if name in cls.own:
                return cls.own[name]
            stack.extend(base for base in cls.bases if base is not None)
        return None

    def attr(self, name: str) -> ast.expr | None:
        """A class attribute defined here or in a known base."""
        if name in self.class_attrs:
            return self.class_attrs[name]
        for base in self.bases:
            if base is not None and (value := base.attr(name)) is not None:
                return value
        return None

    @cached_property
    def style(self) -> str:
        """"setup_context" when setup_context is defined (forward takes no ctx)."""
        return "setup_context" if self.method("setup_context") is not None else "ctx"

    @cached_property
    def ctx_confused(self) -> bool:
        """forward's parameters are not what autograd passes, so input positions
        are unknowable and input-count rules must stay silent:

        - a ctx-named first parameter although setup_context is defined
          (autograd passes an input there: AGF104);
        - a staticmethod `forward(cls, ctx, ...)`, a helper that subclasses call
          as `super().forward(cls=cls, ctx=ctx, ...)` rather than through apply.
        """
        forward = self.forward
        if forward is None or not forward.params:
            return False
        first = forward.params[0].arg
        if self.style == "setup_context":
            return first in CTX_PARAM_NAMES
        return first == "cls" and not forward.is_classmethod

    @property
    def forward(self) -> Method | None:
        return self.method("forward")

    @cached_property
    def inputs(self) -> list[ast.arg]:
        """forward's inputs: its params after ctx (ctx style) or all of them."""
        forward = self.forward
        if forward is None:
            return []
        params = forward.params
        return params if self.style == "setup_context" else params[1:]

    @cached_property
    def required_inputs(self) -> int:
        forward = self.forward
        defaults = forward.defaults if forward is not None else {}
        return sum(1 for arg in self.inputs if arg.arg not in defaults)

    @property
    def has_varargs(self) -> bool:
        forward = self.forward
        return forward is not None and forward.vararg is not None

    def ctx_name(self, method: Method) -> str | None:
        """The name of ctx in a method that receives it."""
        params = method.params
        if method.name == "forward":
            return params[0].arg if self.style == "ctx" and params else None
        if method.name in ("backward", "vjp", "jvp", "setup_context") and params:
            return params[0].arg
        return None


class ModuleLoader(Protocol):
    """Parses scanned files on demand, for resolution across modules."""

    def load(self, module_name: str) -> ModuleInfo | None:
        """The module of that name in the scanned files, parsed whole (or None)."""

    def complete(self, module: ModuleInfo) -> ModuleInfo:
        """The whole-file version of a sparsely parsed module."""


class Project:
    """All scanned modules and the Functions found in them."""

    def __init__(self, modules: list[ModuleInfo], *, scan_tree: bool = False,
                 loader: ModuleLoader | None = None,
                 candidates: frozenset[str] | None = None) -> None:
        self.modules = modules
        # A scan of a whole tree (directories given): project-level rules
        # such as AGF301 only make sense then.
        self.scan_tree = scan_tree
        # Modules not parsed up front are loaded when a name that may be a
        # Function (one of `candidates`) resolves into them.
        self.loader = loader
        self.candidates = candidates
        self._tried: set[str] = set()
        self.cache: dict[str, object] = {}  # project-wide results shared by checkers
        self.by_name: dict[str, ModuleInfo] = {}
        for module in modules:
            self.by_name.setdefault(module.module_name, module)
        self.classes: dict[str, ClassInfo] = {}
        for module in modules:
            for info in module.classes:
                self.classes.setdefault(info.key, info)
        self._state: dict[str, bool | None] = {}  # None while being decided (cycles)
        self.functions: dict[str, FunctionClass] = {}
        self.subclassed: set[str] = set()
        self._build()

    # -- resolution ------------------------------------------------------------
    def canonical(self, qualname: str | None, *, load: bool = False) -> str | None:
        """Follow re-exports until a class key or an external name.

        load: parse modules that are not loaded yet when the path leads there
        (always done for names that may be Functions)."""
        hops = 0
        while qualname is not None and hops < _MAX_REEXPORT_HOPS:
            if qualname in self.classes or qualname in FUNCTION_BASES:
                return qualname
            module_name, _, attr = qualname.rpartition(".")
            may_load = load or (self.candidates is not None and attr in self.candidates)
            # Find the longest scanned module that prefixes the name.
            rest: list[str] = [attr]
            while module_name and module_name not in self.by_name:
                if may_load and self._load(module_name):
                    break
                module_name, _, part = module_name.rpartition(".")
                rest.insert(0, part)
            if not module_name:
                return qualname
            target = self.by_name[module_name].top_bindings.get(rest[0])
            if target is None:
                return qualname
            qualname = ".".join([target, *rest[1:]])
            hops += 1
        return qualname

    def _load(self, module_name: str) -> bool:
        if self.loader is None or module_name in self._tried:
            return False
        self._tried.add(module_name)
        module = self.loader.load(module_name)
        if module is None:
            return False
        self._register(module)
        return True

    def _register(self, module: ModuleInfo) -> None:
        self.by_name[module.module_name] = module
        for info in module.classes:
            self.classes.setdefault(info.key, info)

    def complete(self, module: ModuleInfo) -> ModuleInfo:
        """The whole version of a sparsely parsed module (for lookups of things
        the sparse parse left out)."""
        if not module.partial or self.loader is None:
            return module
        whole = self.loader.complete(module)
        if whole is not module:
            self.by_name[module.module_name] = whole
            for info in whole.classes:
                self.classes.setdefault(info.key, info)
        return whole

    def is_function_key(self, key: str) -> bool:
        if key in self._state:
            return bool(self._state[key])  # None: still being decided (a cycle)
        self._state[key] = None
        result = any(self._is_function_base(name) for name in self.classes[key].base_names)
        self._state[key] = result
        return result

    def _is_function_base(self, name: str | None) -> bool:
        canonical = self.canonical(name)
        if canonical is None:
            return False
        if canonical in FUNCTION_BASES:
            return True
        return canonical in self.classes and self.is_function_key(canonical)

    # -- model building --------------------------------------------------------
    def _build(self) -> None:
        # torch's own base classes (when scanning torch itself) define the API;
        # they are not custom Functions.
        keys = [key for key in self.classes
                if key not in FUNCTION_BASES and self.is_function_key(key)]
        for key in keys:
            self.functions[key] = FunctionClass(info=self.classes[key])
        for key in keys:
            fn = self.functions[key]
            for name in fn.info.base_names:
                canonical = self.canonical(name)
                if canonical in FUNCTION_BASES:
                    fn.bases.append(None)
                elif canonical in self.functions:
                    fn.bases.append(self.functions[canonical])
                else:
                    fn.bases.append(None)
                    fn.bases_known = False
            _collect_members(fn)
        self.subclassed = {base.info.key for fn in self.functions.values()
                           for base in fn.bases if base is not None}

    def has_subclasses(self, fn: FunctionClass) -> bool:
        """Whether some known Function derives from `fn` (it is a base class)."""
        return fn.info.key in self.subclassed

    def functions_in(self, module: ModuleInfo) -> list[FunctionClass]:
        return [self.functions[info.key] for info in module.classes if info.key in self.functions]


def _collect_members(fn: FunctionClass) -> None:
    for stmt in fn.node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = tuple(_decorator_name(d, fn) for d in stmt.decorator_list)
            fn.own[stmt.name] = Method(stmt.name, stmt, fn, decorators)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if not isinstance(target, ast.Name) or stmt.value is None:
                    continue
                fn.class_attrs[target.id] = stmt.value
                if target.id in SPECIAL_METHODS:
                    fn.own[target.id] = Method(target.id, None, fn, ("staticmethod",))


def _decorator_name(node: ast.expr, fn: FunctionClass) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    resolved = fn.info.body_scope.resolve(target)
    if resolved is not None:
        return resolved
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return "?"
