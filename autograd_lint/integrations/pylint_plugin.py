"""pylint plugin: `load-plugins=autograd_lint.pylint_plugin`.

Message symbols are the rule names (`ctx-tensor-attribute`), so
`--disable=ctx-tensor-attribute` and `# pylint: disable=...` work as for any
pylint message. Message ids are in pylint's range for external checkers
(checker ids 51-99): one checker per hundred of our codes, the id built from
the code, so it never changes when rules are added:

    AGF0xx -> x71xx    AGF1xx -> x72xx    AGF2xx -> x73xx    AGF3xx -> x74xx

with the letter from the severity (E error, W warning, C info). AGF001 is
E7101, AGF103 W7203. AGF001 has two severities (error for an input or output
kept on ctx, warning for an intermediate): its warnings are W7151
`ctx-tensor-attribute-intermediate`, so pylint's category matches the command
line's (each symbol is enabled and disabled on its own). A message's `obj`
is where it is: `Class.method` of the Function, or the class. pylint reports
syntax errors itself (AGF000 is not repeated) and lints file by file, so
project-level AGF301 does not run here. Info rules are disabled until
enabled (`--enable=builtin-reimplementation`).

The rules are not written twice: each module's source (astroid keeps it) goes
through the same engine as the command line, once per module for all five
checkers. They share one name, `autograd-lint`, so `--disable=autograd-lint`
turns every message off. Loading the plugin also silences pylint's own
messages that are no defect on a Function (`pylint_noise`).
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pylint.checkers import BaseChecker
from pylint.constants import WarningScope

from ..core.findings import Finding, shown_text
from ..core.registry import TREE_ONLY_CODES, Rule, all_rules

if TYPE_CHECKING:
    from astroid import nodes
    from pylint.lint import PyLinter

# Every checker's name: `--disable=autograd-lint` turns off all their messages.
CHECKER_NAME = "autograd-lint"
_LETTER = {"error": "E", "warning": "W", "info": "C"}
_CHECKER_ID = {"0": "71", "1": "72", "2": "73", "3": "74", "4": "75"}
# pylint reports syntax errors itself (and its `syntax-error` symbol is taken),
# and unused suppressions (`useless-suppression`: its disable comments are
# its own, not our noqa); tree-only rules cannot fire file by file.
NOT_IN_PYLINT = frozenset({"AGF000", "AGF901"}) | TREE_ONLY_CODES


# Rules whose findings may be rated below the rule's severity: the symbol of
# that rating's own message (its id: the code's number plus 50).
SEVERITY_VARIANTS = {"AGF001": ("warning", "ctx-tensor-attribute-intermediate")}


def message_id(rule: Rule, severity: str | None = None) -> str:
    """`AGF001` -> `E7101` (as a warning: `W7151`)."""
    if severity is None or severity == rule.severity:
        return f"{_LETTER[rule.severity]}{_CHECKER_ID[rule.code[3]]}{rule.code[4:]}"
    return f"{_LETTER[severity]}{_CHECKER_ID[rule.code[3]]}{int(rule.code[4:]) + 50:02d}"


def symbol_for(finding: Finding) -> str:
    variant = SEVERITY_VARIANTS.get(finding.code)
    return variant[1] if variant is not None and finding.severity == variant[0] else finding.name


def _messages(block: str) -> dict[str, tuple[str, str, str, dict[str, Any]]]:
    messages = {}
    for rule in all_rules():
        if not rule.code.startswith(f"AGF{block}") or rule.code in NOT_IN_PYLINT:
            continue
        about = f"{rule.summary} ({rule.code}; see `autograd-lint rule {rule.code}` or {rule.url})"
        # NODE scope: the message carries its node (for `obj`) and its own line.
        options = {"scope": WarningScope.NODE, "default_enabled": rule.default}
        messages[message_id(rule)] = ("%s", rule.name, about, options)
        if rule.code in SEVERITY_VARIANTS:
            severity, symbol = SEVERITY_VARIANTS[rule.code]
            messages[message_id(rule, severity)] = ("%s", symbol, f"{about}, rated {severity}",
                                                    options)
    return messages


def _located(module: nodes.Module, finding: Finding) -> nodes.NodeNG:
    """The Function class's method holding the finding (pylint's `obj`
    becomes `Class.method`), else the class; the module outside a Function."""
    from astroid import nodes as astroid_nodes

    if finding.function is None:
        return module
    for cls in module.nodes_of_class(astroid_nodes.ClassDef):
        if cls.name != finding.function or not (
                cls.fromlineno <= finding.line <= (cls.tolineno or cls.fromlineno)):
            continue
        for method in cls.mymethods():
            if method.fromlineno <= finding.line <= (method.tolineno or method.fromlineno):
                return method
        return cls
    return module


@contextlib.contextmanager
def _import_path(path: Sequence[str]) -> Iterator[None]:
    """sys.path as it was when the plugin loaded, for the engine's imports
    (lazy ones included). While it lints, pylint puts the linted folders
    first on sys.path: a repository's own `hashlib.py` would be imported,
    its code run, in place of the standard library's."""
    linting = sys.path[:]
    sys.path[:] = path
    try:
        yield
    finally:
        sys.path[:] = linting


class ModuleFindings:
    """The engine's findings for the module pylint is on, computed once and
    shared by the checkers (each reports its own codes)."""

    def __init__(self, linter: PyLinter) -> None:
        self.linter = linter
        self._module: nodes.Module | None = None
        self._findings: list[Finding] = []
        # Made at load time (register), before pylint adds the linted folders.
        self._import_path = tuple(sys.path)

    def for_module(self, node: nodes.Module) -> list[Finding]:
        if node is not self._module:
            self._module = node
            self._findings = self._check(node)
        return self._findings

    def _check(self, node: nodes.Module) -> list[Finding]:
        from ..core.registry import RULES

        with node.stream() as stream:
            data = stream.read()
        codes = frozenset(code for code, rule in RULES.items()
                          if code not in NOT_IN_PYLINT and any(
                              self.linter.is_message_enabled(symbol)
                              for symbol in (rule.name, *SEVERITY_VARIANTS.get(code, ())[1:])))
        if not codes:
            return []
        path = node.file or node.name
        with _import_path(self._import_path):
            from ..engine.lint import decode_source, lint_source

            source = decode_source(data) if isinstance(data, bytes) else data
            return lint_source(source, path, codes, module_name=(node.name, node.package))


class _AutogradLintChecker(BaseChecker):
    """Base of the five checkers; `block` is the hundreds digit of their codes."""

    block = ""

    def __init__(self, linter: PyLinter, shared: ModuleFindings | None = None) -> None:
        super().__init__(linter)
        self.shared = shared or ModuleFindings(linter)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.msgs = _messages(cls.block)  # the block's rules, from the registry

    def visit_module(self, node: nodes.Module) -> None:
        prefix = f"AGF{self.block}"
        for finding in self.shared.for_module(node):
            if finding.code.startswith(prefix):
                self.add_message(symbol_for(finding), line=finding.line,
                                 node=_located(node, finding), col_offset=finding.column,
                                 end_lineno=finding.end_line, end_col_offset=finding.end_column,
                                 args=(shown_text(finding.message),))


class CtxStateChecker(_AutogradLintChecker):
    """AGF0xx: ctx, saved tensors, in-place changes."""

    name = CHECKER_NAME
    block = "0"


class StructureChecker(_AutogradLintChecker):
    """AGF1xx: gradient arity, signatures, class structure, how Functions are used."""

    name = CHECKER_NAME
    block = "1"


class GradientChecker(_AutogradLintChecker):
    """AGF2xx: differentiability and gradient correctness."""

    name = CHECKER_NAME
    block = "2"


class TextbookChecker(_AutogradLintChecker):
    """AGF3xx (single-file ones): Functions that need not exist or miss torch.func."""

    name = CHECKER_NAME
    block = "3"


class CustomOpChecker(_AutogradLintChecker):
    """AGF4xx (single-file ones): custom operators, their fakes and autograd."""

    name = CHECKER_NAME
    block = "4"


CHECKERS = (CtxStateChecker, StructureChecker, GradientChecker, TextbookChecker,
            CustomOpChecker)


def register(linter: PyLinter) -> None:
    """pylint's plugin hook (called before pylint changes sys.path to lint)."""
    from ..engine import lint as engine  # noqa: F401  # its imports, from the standard library, now
    from .pylint_noise import silence_function_noise

    silence_function_noise(linter)

    shared = ModuleFindings(linter)
    for checker in CHECKERS:
        linter.register_checker(checker(linter, shared))
