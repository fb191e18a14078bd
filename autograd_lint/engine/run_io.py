"""What a run takes in and hands out: the files to check (`SourceInput`),
the result (`LintResult`: findings, internal errors, the Functions found) and
the record of a Function class that the dynamic mode imports and runs
(`FunctionTarget`, made from the project's view of the class by `_target`).

Plain records: nothing here reads a file's syntax or runs a rule.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.files import is_notebook, read_regular_file

if TYPE_CHECKING:
    from ..core.findings import Finding
    from ..core.project import Project


@dataclass
class SourceInput:
    """One file to check: where it is, how to show it, which rules apply."""

    path: str  # a Path is accepted and stored as text (big trees: Paths cost)
    display: str
    codes: frozenset[str]
    explicit: bool = False  # named on the command line: always parsed whole
    context: bool = False  # read only for what other files import, never reported
    # An editor's (or stdin's) text for this path, checked instead of the
    # file on disk (which may be older, or absent).
    text: bytes | None = None
    # The oldest torch the file's project supports (`target-torch`); None:
    # the newest this release knows.
    target_torch: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.path = os.fspath(self.path)

    def read(self) -> bytes:
        """What the checks read: the file's bytes (or the editor's text); of a
        notebook, its code cells as one module (notebooks.py; raises
        NotebookError when it is not a notebook)."""
        if not is_notebook(self.path):
            return self.read_bytes()
        from ..core.notebooks import python_source

        return python_source(self.path, self.read_bytes())

    def read_bytes(self) -> bytes:
        """The file's bytes (or the editor's text), a notebook's JSON too."""
        if self.text is not None:
            return self.text
        return read_regular_file(self.path)


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    # Files that could not be read (permissions, a device or FIFO planted in
    # the tree): skipped with a warning, as ruff does; the rest is reported.
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    files_checked: int = 0
    functions: list[FunctionTarget] = field(default_factory=list)  # with functions=True
    workers: int = 1  # processes the analysis ran in


@dataclass(frozen=True)
class FunctionTarget:
    """A Function class the dynamic mode can import and check."""

    path: str  # on disk
    display: str
    module: str  # dotted module name
    import_root: str  # the directory to put on sys.path to import `module`
    qualname: str  # within the module ("Outer.Inner")
    line: int
    end_line: int  # the class statement's last line
    once_differentiable: bool
    has_jvp: bool
    has_vmap: bool  # a vmap staticmethod or generate_vmap_rule = True
    # Set when the class's name is bound again later in its scope: the line
    # where, and the first line of each method it defines, so that the worker
    # can tell whether the class it imports by name is this one.
    rebound_at: int | None = None
    method_lines: tuple[tuple[str, int], ...] = ()
    # Why it cannot run at all (no backward): reported as AGD900 without a worker.
    skip_reason: str | None = None
    # forward's inputs that static analysis saw used as tensors: synthesis
    # never guesses a number for them.
    tensor_inputs: tuple[str, ...] = ()
    legacy: bool = False  # forward is an instance method (pre-1.3 style)
    # A custom op instead of a Function: its name ("ns::name"; "::name" when
    # the Library's namespace is not known statically), checked by opcheck.
    op: str | None = None
    op_autograd: bool = False  # an autograd formula is registered for it

    @property
    def key(self) -> str:
        """Unique within a module, also for two classes of one name."""
        return f"{self.qualname}:{self.line}"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def to_json(self) -> dict[str, object]:
        return {**self.__dict__, "key": self.key}


def _target(source: SourceInput, fn: object, project: Project) -> FunctionTarget | None:
    from ..core.project import FunctionClass

    assert isinstance(fn, FunctionClass)
    module = fn.module
    if module.module_name == "__main__":
        return None
    forward, backward = fn.method("forward"), fn.method("backward") or fn.method("vjp")
    skip_reason = None
    if forward is None or backward is None:
        if project.has_subclasses(fn):
            return None  # a base class: its subclasses are what runs
        skip_reason = ("it defines no forward (AGF111)" if forward is None else
                       "it defines neither backward nor vjp (AGF106): nothing to differentiate")
    generate = fn.attr("generate_vmap_rule")
    from ..analysis.function_facts import facts_of

    facts = facts_of(fn)
    node = fn.info.node
    method_lines: tuple[tuple[str, int], ...] = ()
    if fn.info.rebound_at is not None:
        method_lines = tuple(
            (name, min([method.node.lineno, *(d.lineno for d in method.node.decorator_list)]))
            for name, method in fn.own.items() if method.node is not None)
    return FunctionTarget(
        path=source.path, display=source.display,
        **_importable(source.path, module.module_name, module.import_root),
        qualname=fn.info.qualname, line=fn.info.line,
        end_line=node.end_lineno or node.lineno,
        once_differentiable=backward is not None and backward.once_differentiable,
        has_jvp=fn.method("jvp") is not None,
        has_vmap=fn.method("vmap") is not None or (
            isinstance(generate, ast.Constant) and generate.value is True),
        rebound_at=fn.info.rebound_at, method_lines=method_lines, skip_reason=skip_reason,
        tensor_inputs=tuple(sorted(name for name in facts.inputs if facts.input_is_tensor(name))),
        legacy=forward is not None and forward.node is not None and not forward.is_static
        and not forward.is_classmethod)


def _op_target(source: SourceInput, op: object) -> FunctionTarget:
    """A custom op the dynamic mode can import and opcheck."""
    from ..analysis.op_model import Op

    assert isinstance(op, Op)
    module = op.module
    name = op.qualified or ""
    qualname = op.python_name or name.rpartition("::")[2] or "<op>"
    line = getattr(op.anchor, "lineno", 1)
    return FunctionTarget(
        path=source.path, display=source.display,
        **_importable(source.path, module.module_name, module.import_root),
        qualname=qualname, line=line, end_line=getattr(op.anchor, "end_lineno", None) or line,
        once_differentiable=False, has_jvp=False, has_vmap=False,
        skip_reason=None if op.qualified else "its name is built at run time",
        op=op.qualified, op_autograd=bool(op.autograd))


def _importable(path: str, module: str, import_root: str) -> dict[str, str]:
    """The module name and `sys.path` entry the dynamic mode imports a file
    by, as Python finds it: a folder without `__init__.py` inside a package
    is a namespace portion of that package (`pkg/ops/k.py` with only
    `pkg/__init__.py` is `pkg.ops.k`), so its relative imports resolve."""
    directory = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    while True:
        parent = os.path.dirname(directory)
        if parent == directory or not (
                os.path.isfile(os.path.join(directory, "__init__.py")) or
                os.path.isfile(os.path.join(parent, "__init__.py"))):
            break
        parts.insert(0, os.path.basename(directory))
        directory = parent
    if parts and len(parts) > module.count(".") + 1:
        module, import_root = ".".join(parts), directory
    own = _root_by_own_imports(path)
    if own is not None and own[0].count(".") > module.count("."):
        module, import_root = own
    return {"module": module, "import_root": import_root or os.path.dirname(os.path.abspath(path))}


# An absolute import of a dotted name: `from xopes.ops.act import f`, `import pkg.sub`.
_DOTTED_IMPORT = re.compile(r"^[ \t]*(?:from|import)[ \t]+([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)",
                            re.M)
# How far above a file its package's top folder is looked for.
_MAX_PACKAGE_DEPTH = 8


def _root_by_own_imports(path: str) -> tuple[str, str] | None:
    """(module, sys.path entry) for a file of a package without `__init__.py`
    files (a namespace package), found from its own absolute imports: an
    import `xopes.ops.act` from a file under a folder `xopes` that holds
    `ops/act` says that folder's parent is where the package is imported
    from. None when no import says so."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    imported: dict[str, list[list[str]]] = {}
    for match in _DOTTED_IMPORT.finditer(text):
        imported.setdefault(match.group(1), []).append(match.group(2).split(".")[1:])
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(_MAX_PACKAGE_DEPTH):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        for rest in imported.get(os.path.basename(folder), ()):
            inside = os.path.join(folder, *rest)
            if os.path.isdir(inside) or os.path.isfile(inside + ".py") or \
                    os.path.isfile(os.path.join(folder, *rest[:-1]) + ".py"):
                dotted = os.path.relpath(os.path.abspath(path), parent)[:-3]
                dotted = dotted.replace(os.sep, ".").removesuffix(".__init__")
                return dotted, parent
        folder = parent
    return None


def _describe(exc: BaseException) -> str:
    """The message of an internal error: in one file, or in a worker."""
    return f"internal error: {type(exc).__name__}: {exc}"
