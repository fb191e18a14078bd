"""Which classes are custom Functions, across every scanned module.

A class is a Function when one of its bases resolves to torch's Function
classes, or to a class already known to be a Function in any scanned module
(following re-exports such as `from .ops import MyFn` in a package's
`__init__.py`). The answer is a fixpoint over all classes.
"""
from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from .model import (
    FUNCTION_BASES,
    SPECIAL_METHODS,
    ClassInfo,
    FunctionNode,
    ModuleInfo,
    parameter_defaults,
)

if TYPE_CHECKING:
    from .files import ProjectRoots

_MAX_REEXPORT_HOPS = 8
# Read by every analysis that asks which Functions some gradcheck exercises:
# a file that starts calling gradcheck makes those analyses stale.
GRADCHECK_READS = "<gradcheck calls>"


class DependencyLog:
    """Which files a piece of analysis read, so that a file's findings can be
    reused while none of those files changed (the per-file result cache).

    Reads are noted in the innermost open frame; a closed frame's reads count
    for the frame around it too. A memoised result keeps the reads it was
    computed from (`replay` them on each reuse): a helper's summary computed
    while checking one file is also a read of the helper's file for every
    other file that uses it."""

    __slots__ = ("_frames",)

    def __init__(self) -> None:
        self._frames: list[set[str]] = []

    @property
    def recording(self) -> bool:
        return bool(self._frames)

    def read(self, path: str) -> None:
        if self._frames:
            self._frames[-1].add(path)

    def replay(self, paths: Iterable[str]) -> None:
        if self._frames:
            self._frames[-1].update(paths)

    @contextmanager
    def frame(self) -> Iterator[set[str]]:
        frame: set[str] = set()
        self._frames.append(frame)
        try:
            yield frame
        finally:
            self._frames.pop()
            if self._frames:
                self._frames[-1].update(frame)


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
        return parameter_defaults(self.node) if self.node is not None else {}

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
    project: Project | None = field(default=None, repr=False, compare=False)
    # The analysis layer's facts about this class, once computed
    # (analysis.function_facts.facts_of): the model keeps them, never computes them.
    analysed: object = field(default=None, repr=False, compare=False)

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

    def load(self, module_name: str, origin_path: str | None = None, *,
             relevant_only: bool = False) -> list[ModuleInfo]:
        """The files of that module name not in the project yet, parsed whole;
        with `origin_path`, also the files `import module_name` reaches from
        there through namespace packages (see `reachable_as`)."""

    def complete(self, module: ModuleInfo) -> ModuleInfo:
        """The whole-file version of a sparsely parsed module."""


@dataclass(frozen=True)
class Resolved:
    """Where a dotted name leads, followed through imports and re-exports."""

    name: str  # the last dotted name reached
    module: ModuleInfo | None = None  # the scanned module `name` lives in; None: outside
    cls: ClassInfo | None = None  # the class it names (or an attribute of)
    attrs: tuple[str, ...] = ()  # attributes after that class: ("apply",)


class Project:
    """All scanned modules and the Functions found in them.

    Identity is per file and per definition: a name is only how an import is
    resolved. Two files may claim one module name (two projects side by
    side, `tests/` folders without `__init__.py`); a name is then looked up
    the way Python would find it from the importing file: its own import
    root first, else the nearest one (see `_choose`). Two classes that share
    a name are two classes (ClassInfo compares by identity).
    """

    def __init__(self, modules: list[ModuleInfo], *, scan_tree: bool = False,
                 tested_projects: tuple[ProjectRoots, frozenset[str | None]] | None = None,
                 loader: ModuleLoader | None = None,
                 candidates: frozenset[str] | None = None, lazy: bool = False) -> None:
        self.modules = modules
        # A scan of a whole tree (directories given): project-level rules
        # such as AGF301 only make sense then.
        self.scan_tree = scan_tree
        # The roots of the projects whose test files were scanned (None: not
        # known, assume every project's tests were), for AGF301's `has_tests`.
        self.tested_projects = tested_projects
        # Modules not parsed up front are loaded when a name that may be a
        # Function (one of `candidates`) resolves into them.
        self.loader = loader
        self.candidates = candidates
        # lazy: files that matter were not all parsed up front (an incremental
        # run); any name that leads to one loads it, as if it had been.
        self.lazy = lazy
        self._tried: set[str] = set()
        # Project-wide results shared by checkers and by the analysis (the
        # effect summaries of helpers: analysis/effects.py, `effects_of`).
        self.cache: dict[str, object] = {}
        self.by_name: dict[str, list[ModuleInfo]] = {}
        self._by_last_part: dict[str, list[ModuleInfo]] = {}
        self._state: dict[ClassInfo, bool | None] = {}  # None while being decided (cycles)
        self._state_reads: dict[ClassInfo, frozenset[str]] = {}
        self.functions: dict[ClassInfo, FunctionClass] = {}
        # Functions that others derive from, and the files deriving from each.
        self._subclass_paths: dict[ClassInfo, set[str]] = {}
        self.reads = DependencyLog()
        # Per file: what deciding its classes (Functions? which bases?) read.
        self._build_reads: dict[str, frozenset[str]] = {}
        self._built = False  # modules registered later are classified at once
        for module in modules:
            self._register(module)
        self._build()
        self._built = True

    def root_of(self, path: str) -> str | None:
        """The project (see files.ProjectRoots) a file belongs to; None where
        the scan does not tell projects apart."""
        return self.tested_projects[0].of(path) if self.tested_projects is not None else None

    def has_tests(self, module: ModuleInfo) -> bool:
        """Whether the project `module` belongs to (see files.ProjectRoots;
        files without a marked root form one project) was scanned with tests."""
        if self.tested_projects is None:
            return True
        roots, tested = self.tested_projects
        return roots.of(module.path) in tested

    # -- resolution ------------------------------------------------------------
    def resolve(self, name: str | None, origin: ModuleInfo, *,
                load: bool = False) -> Resolved | None:
        """Follow a qualified name, as bound in `origin`, through re-exports
        until a class, a name outside the scanned modules, or a name a module
        binds to something else (a def).

        load: parse modules that are not loaded yet when the path leads there
        (always done for names that may be Functions)."""
        if name is None:
            return None
        module = origin
        for _ in range(_MAX_REEXPORT_HOPS):
            if name in FUNCTION_BASES:
                return Resolved(name)
            self.read(module)
            found = module.class_named(name)
            if found is not None:
                return Resolved(name, module, *found)
            parts = name.split(".")
            may_load = load or (self.candidates is not None and parts[-1] in self.candidates)
            # The longest scanned module that prefixes the name.
            target: ModuleInfo | None = None
            cut = len(parts) - 1
            while cut > 0:
                target = self.module_named(".".join(parts[:cut]), module, load=may_load)
                if target is not None:
                    break
                cut -= 1
            if target is None:
                return Resolved(name)
            self.read(target)
            found = target.class_named(name)
            if found is not None:
                return Resolved(name, target, *found)
            binding = target.top_bindings.get(parts[cut])
            if binding is None:
                return Resolved(name, target)
            name, module = ".".join([binding, *parts[cut + 1:]]), target
        return Resolved(name, module)

    def module_named(self, name: str, origin: ModuleInfo, *,
                     load: bool = False) -> ModuleInfo | None:
        """The scanned module `import name` gives in `origin`."""
        if load or self.lazy:
            self._load(name, relevant_only=not load)
        found = self.by_name.get(name)
        if not found:
            found = self._through_namespaces(name, origin, load)
        if not found:
            return None
        module = found[0] if len(found) == 1 else _choose(found, origin)
        self.read(module)
        return module

    def _through_namespaces(self, name: str, origin: ModuleInfo,
                            load: bool) -> list[ModuleInfo]:
        """`from src.ops import fns` where no folder has an `__init__.py`:
        the files under those folders that the import reaches (namespace
        packages), though their own module name is the file's alone; `import
        helpers` of a file beside the importing one (a script's folder is
        its `sys.path[0]`; `setup.py` installs such files as top-level
        modules), though a package claims it."""
        if (load or self.lazy) and self.loader is not None:
            key = f"{name} from {os.path.dirname(os.path.abspath(origin.path))} {load}"
            if key not in self._tried:
                self._tried.add(key)
                for module in self.loader.load(name, origin.path, relevant_only=not load):
                    self._register(module)
        last = name.rpartition(".")[2]
        return [module for module in self._by_last_part.get(last, ())
                if reachable_as(module.path, name, origin.path)]

    def function_named(self, name: str | None, origin: ModuleInfo) -> FunctionClass | None:
        """The custom Function a qualified name bound in `origin` denotes."""
        resolved = self.resolve(name, origin)
        if resolved is None or resolved.cls is None or resolved.attrs:
            return None
        return self.functions.get(resolved.cls)

    def load_modules(self, module_names: Iterable[str]) -> None:
        """Parse the named modules if they are not in the project yet (a run
        in parts parses only its part up front)."""
        for name in module_names:
            if name not in self.by_name:
                self._load(name)

    def all_modules(self) -> list[ModuleInfo]:
        """The modules parsed up front and those loaded since."""
        seen: dict[int, ModuleInfo] = {id(m): m for m in self.modules}
        for same in self.by_name.values():
            for module in same:
                seen.setdefault(id(module), module)
        return list(seen.values())

    def _load(self, module_name: str, *, relevant_only: bool = False) -> None:
        key = f"{module_name} {relevant_only}"
        if self.loader is None or key in self._tried:
            return
        self._tried.add(key)
        for module in self.loader.load(module_name, relevant_only=relevant_only):
            self._register(module)

    def _register(self, module: ModuleInfo) -> None:
        same = self.by_name.setdefault(module.module_name, [])
        if all(m is not module for m in same):
            same.append(module)
            self._by_last_part.setdefault(module.module_name.rpartition(".")[2],
                                          []).append(module)
            if self._built:
                # Loaded while checking (a name led there): its Functions count
                # too, as they would had it been parsed up front.
                self._link(self._classify([module]))

    def read(self, module: ModuleInfo) -> None:
        """Note that the analysis under way read `module` (and, through it,
        whatever deciding its classes read)."""
        log = self.reads
        if log.recording:
            log.read(module.path)
            log.replay(self._build_reads.get(module.path, ()))

    def complete(self, module: ModuleInfo) -> ModuleInfo:
        """The whole version of a sparsely parsed module (for lookups of things
        the sparse parse left out)."""
        self.read(module)
        if not module.partial or self.loader is None:
            return module
        whole = self.loader.complete(module)
        if whole is not module:
            whole.adopt_classes(module)
            same = self.by_name.setdefault(module.module_name, [])
            same[:] = [whole if m is module else m for m in same]
        return whole

    def is_function_class(self, info: ClassInfo) -> bool:
        if info in self._state:
            self.reads.replay(self._state_reads.get(info, ()))
            return bool(self._state[info])  # None: still being decided (a cycle)
        self._state[info] = None
        with self.reads.frame() as reads:
            self.read(info.module)
            result = info.key not in FUNCTION_BASES and any(
                self._is_function_base(name, info.module) for name in info.base_names)
        self._state[info] = result
        self._state_reads[info] = frozenset(reads)
        return result

    def _is_function_base(self, name: str | None, origin: ModuleInfo) -> bool:
        resolved = self.resolve(name, origin)
        if resolved is None or resolved.attrs:
            return False
        if resolved.cls is None:
            return resolved.name in FUNCTION_BASES
        return self.is_function_class(resolved.cls)

    # -- model building --------------------------------------------------------
    def _build(self) -> None:
        # torch's own base classes (when scanning torch itself) define the API;
        # they are not custom Functions. Resolution may load more modules:
        # their classes count too (as bases), until no module is added.
        done: set[int] = set()
        found: list[FunctionClass] = []
        while True:
            pending = [m for same in self.by_name.values() for m in same if id(m) not in done]
            if not pending:
                break
            done.update(id(module) for module in pending)
            found += self._classify(pending)
        self._link(found)

    def _classify(self, modules: list[ModuleInfo]) -> list[FunctionClass]:
        """The Functions of these modules."""
        found: list[FunctionClass] = []
        for module in modules:
            with self.reads.frame() as reads:
                for info in module.classes:
                    if info not in self.functions and self.is_function_class(info):
                        fn = self.functions[info] = FunctionClass(info=info, project=self)
                        found.append(fn)
            self._build_reads[module.path] = self._build_reads.get(module.path, frozenset()) \
                | reads
        return found

    def _link(self, found: list[FunctionClass]) -> None:
        """Resolve the bases of these Functions and collect their members."""
        for fn in found:
            with self.reads.frame() as reads:
                for name in fn.info.base_names:
                    resolved = self.resolve(name, fn.module)
                    base = self.functions.get(resolved.cls) if resolved is not None and \
                        resolved.cls is not None and not resolved.attrs else None
                    fn.bases.append(base)
                    if base is None and (resolved is None or resolved.name not in FUNCTION_BASES
                                         or resolved.attrs):
                        fn.bases_known = False
                    if base is not None:
                        self._subclass_paths.setdefault(base.info, set()).add(fn.module.path)
            path = fn.module.path
            self._build_reads[path] = self._build_reads[path] | reads
            _collect_members(fn)

    def has_subclasses(self, fn: FunctionClass) -> bool:
        """Whether some known Function derives from `fn` (it is a base class)."""
        paths = self._subclass_paths.get(fn.info)
        if paths:
            self.reads.replay(paths)
        return bool(paths)

    def functions_in(self, module: ModuleInfo) -> list[FunctionClass]:
        return [self.functions[info] for info in module.classes if info in self.functions]


def reachable_as(path: str, dotted: str, origin_path: str) -> bool:
    """Whether `import dotted`, written in `origin_path`, may load the file
    `path` through namespace packages (folders without `__init__.py`): the
    file's folders spell the dotted name, and the folder that would have to
    be on sys.path is one holding the importing file (the project root a test
    runner starts from) or a child of one (a `src/` layout on the path). A
    top-level name reaches only a file beside the importing one."""
    where = os.path.abspath(path)
    if where.endswith(os.sep + "__init__.py"):
        where = os.path.dirname(where)
    elif where.endswith(".py"):
        where = where[:-3]
    else:
        return False
    suffix = os.sep + os.sep.join(dotted.split("."))
    if not where.endswith(suffix):
        return False
    root = where[:-len(suffix)] or os.sep
    here = os.path.dirname(os.path.abspath(origin_path))
    if "." not in dotted:  # a top-level name: a file beside the importing one
        return here == root
    return _within(here, root) or _within(here, os.path.dirname(root))


def _within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def _choose(modules: list[ModuleInfo], origin: ModuleInfo) -> ModuleInfo:
    """Which of several files with one module name an import in `origin`
    gets: the one under origin's own import root (what `sys.path[0]` or
    pytest's rootdir insertion gives), else the one whose root is nearest to
    origin (the same project), else the first scanned."""
    for module in modules:
        if module is origin or module.import_root == origin.import_root:
            return module
    here = origin.import_root or os.path.dirname(os.path.abspath(origin.path))
    best, best_depth = modules[0], -1
    for module in modules:
        try:
            common = os.path.commonpath([here, module.import_root or here])
        except ValueError:  # different drives
            continue
        depth = len(common)
        if depth > best_depth:
            best, best_depth = module, depth
    return best


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
