"""pylint's own messages that are no defect on a custom Function, silenced
while the pylint plugin is loaded (as pylint-django does for Django's classes).

`torch.autograd.Function` declares `setup_context`, `jvp`, `vjp` and `vmap`
raising NotImplementedError, so pylint reports W0223 `abstract-method` for
each on every Function; a Function works without them (and without
`backward` when it defines `vjp`). Its `forward(*args, **kwargs)` and
`backward(ctx, *grad_outputs)` take anything: each Function's own methods
declare their parameters (`apply` passes them on), so W0221
`arguments-differ`, W0237 `arguments-renamed` and W0222 `signature-differs`
on them say nothing, against torch's or against a parent Function's.

pylint has no hook to drop another checker's message, so this linter's
`add_message` is wrapped (on the instance: other linters in the process are
untouched). Each message is judged on its own: `forward` missing from a
Function, any other message, and these messages on any other class still
show.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from astroid import nodes
from astroid.exceptions import AttributeInferenceError, ResolveError
from pylint.interfaces import UNDEFINED

from ..core.model import FUNCTION_BASES, SPECIAL_METHODS

if TYPE_CHECKING:
    from pylint.lint import PyLinter

SIGNATURE_MESSAGES = frozenset({"arguments-differ", "W0221", "arguments-renamed", "W0237",
                                "signature-differs", "W0222"})
ABSTRACT_MESSAGES = frozenset({"abstract-method", "W0223"})
# Declared by torch's Function raising NotImplementedError; a Function need
# not define them (`backward` is optional only beside a `vjp`, below).
OPTIONAL_METHODS = frozenset({"setup_context", "jvp", "vjp", "vmap"})
TORCH_FUNCTION_MODULE = "torch.autograd.function"
_ALIAS_DEPTH = 8  # `F = G = torch.autograd.Function` chains followed at most


def silence_function_noise(linter: PyLinter) -> None:
    """Drop pylint's noise on Functions from what `linter` reports. Once per
    linter: pylint's parallel workers register the plugin again on a copy
    of the linter that already carries the filter."""
    previous = vars(linter).get("add_message")
    if not isinstance(previous, FunctionNoiseFilter):
        linter.add_message = FunctionNoiseFilter(linter, previous)  # type: ignore[method-assign]


class FunctionNoiseFilter:
    """`linter.add_message`, less pylint's noise on Functions. The next
    `add_message` is another plugin's wrapper or the linter's class method
    (never a bound method kept here: the linter is pickled for `--jobs`)."""

    def __init__(self, linter: PyLinter, wrapped: Any = None) -> None:
        self.linter = linter
        self.wrapped = wrapped

    def __call__(self, msgid: str, line: int | None = None, node: nodes.NodeNG | None = None,
                 args: Any = None, confidence: Any = UNDEFINED, col_offset: int | None = None,
                 end_lineno: int | None = None, end_col_offset: int | None = None) -> None:
        if node is not None and is_function_noise(msgid, node, args):
            return
        passed = (msgid, line, node, args, confidence, col_offset, end_lineno, end_col_offset)
        if self.wrapped is not None:
            self.wrapped(*passed)
        else:
            type(self.linter).add_message(self.linter, *passed)


def is_function_noise(msgid: str, node: nodes.NodeNG, args: Any) -> bool:
    """Whether pylint's message `msgid` on `node` is one of the messages
    this module silences."""
    if msgid in SIGNATURE_MESSAGES:
        # node: the overriding method (a staticmethod, or a proxy of one).
        owner = getattr(node, "parent", None)
        return (getattr(node, "name", None) in SPECIAL_METHODS
                and isinstance(owner, nodes.ClassDef) and is_autograd_function(owner))
    if msgid in ABSTRACT_MESSAGES and isinstance(node, nodes.ClassDef):
        # args: (method, class declaring it abstract, this class)
        method = args[0] if isinstance(args, tuple) and args else None
        return (isinstance(method, str) and is_autograd_function(node)
                and _declared_by_torch(node, method) and _optional(node, method))
    return False


def _optional(cls: nodes.ClassDef, method: str) -> bool:
    """`backward` is optional where the class has its own `vjp` (torch's
    `vjp` is an alias of its `backward`)."""
    return method in OPTIONAL_METHODS or (
        method == "backward" and not _declared_by_torch(cls, "vjp", inherited_only=False))


def _declared_by_torch(cls: nodes.ClassDef, method: str, *, inherited_only: bool = True) -> bool:
    """Whether the definition of `method` that `cls` has (or inherits) is torch's."""
    try:
        lineage = cls.mro()
    except (ResolveError, NotImplementedError):  # pylint reports no abstract-method then
        return False
    for klass in lineage[1:] if inherited_only else lineage:
        if method in klass.locals:
            return bool(klass.root().name == TORCH_FUNCTION_MODULE)
    return False


def is_autograd_function(cls: nodes.ClassDef) -> bool:
    """Whether `cls` derives from torch's Function: by inference where
    astroid finds torch, and by the bases' names (imports and aliases
    followed) where it does not."""
    for klass in (cls, *cls.ancestors()):
        if klass.qname() in FUNCTION_BASES:
            return True
        if any(dotted_name(base) in FUNCTION_BASES for base in klass.bases):
            return True
    return False


def dotted_name(expr: nodes.NodeNG, depth: int = 0) -> str | None:
    """`F` after `from torch.autograd import Function as F`:
    `torch.autograd.Function`; None for what is not a plain name."""
    if isinstance(expr, nodes.Attribute):
        head = dotted_name(expr.expr, depth)
        return None if head is None else f"{head}.{expr.attrname}"
    if not isinstance(expr, nodes.Name) or depth > _ALIAS_DEPTH:
        return None
    _, bindings = expr.lookup(expr.name)
    if len(bindings) != 1:
        return None  # rebound: which one holds is not plain
    statement = bindings[0].statement()
    if isinstance(statement, nodes.Assign) and len(statement.targets) == 1:
        return dotted_name(statement.value, depth + 1)
    if not isinstance(statement, (nodes.Import, nodes.ImportFrom)) or getattr(
            statement, "level", None):
        return None  # a class, a def, a relative import: not torch's
    try:
        real = statement.real_name(expr.name)
    except AttributeInferenceError:
        return None
    return f"{statement.modname}.{real}" if isinstance(statement, nodes.ImportFrom) else real
