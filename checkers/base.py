"""What every rule family shares: the reporter and the checker base class."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

from autograd_lint.analysis.function_facts import FunctionFacts
from autograd_lint.core.config import NEWEST_TORCH
from autograd_lint.core.findings import Edit, Finding, Fix
from autograd_lint.core.lines import LineIndex
from autograd_lint.core.model import ModuleInfo
from autograd_lint.core.project import FunctionClass, Project
from autograd_lint.core.registry import RULES, family_codes


class Reporter:
    """Builds findings from rule codes and AST nodes for one module."""

    def __init__(self, path: str, enabled: frozenset[str], source: str | None = None,
                 target_torch: tuple[int, int] | None = None) -> None:
        self.path = path
        self.enabled_codes = enabled
        # The oldest torch the project supports (RULES.md, "Target torch version").
        self.target_torch = target_torch or NEWEST_TORCH
        self.findings: list[Finding] = []
        self._source = source
        self._lines: LineIndex | None = None

    def enabled(self, code: str) -> bool:
        return code in self.enabled_codes

    def add(self, code: str, node: ast.AST, *, function: str | None = None,
            severity: str | None = None, autofix: Fix | None = None,
            **fields: object) -> None:
        if code not in self.enabled_codes:
            return
        rule = RULES[code]
        line, column, end_line, end_column = node_range(node)
        self.findings.append(Finding(
            path=self.path,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            code=code,
            name=rule.name,
            severity=severity or rule.severity,
            message=rule.format(**fields),
            function=function,
            fix=self._literal(autofix),
        ))

    def _literal(self, fix: Fix | None) -> Fix | None:
        """The fix with each inserted line indented as the code around it, so
        that every consumer (--fix, JSON, SARIF, the language server) applies
        its edits as written."""
        if fix is None or self._source is None or \
                not any("\n" in edit.text for edit in fix.edits):
            return fix
        if self._lines is None:
            self._lines = LineIndex(self._source)
        edits = tuple(Edit(e.line, e.column, e.end_line, e.end_column,
                           self._lines.indent(e.text, e.line)) for e in fix.edits)
        return Fix(fix.title, fix.applicability, edits)


def node_range(node: ast.AST) -> tuple[int, int, int | None, int | None]:
    """The range a finding on `node` covers.

    A def or class points at its header (`def name`), not its whole body, so
    editors underline the signature and `# noqa` goes on the `def` line.
    """
    line = getattr(node, "lineno", 1)
    column = getattr(node, "col_offset", 0)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        keyword = {ast.FunctionDef: "def ", ast.AsyncFunctionDef: "async def ",
                   ast.ClassDef: "class "}[type(node)]
        return line, column, line, column + len(keyword) + len(node.name)
    return line, column, getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)


def nodes_with_ctx(fn: FunctionClass) -> Iterator[tuple[str, ast.AST]]:
    """(ctx's name, node) for every node of the class's own methods that take ctx."""
    for method in fn.own.values():
        ctx = fn.ctx_name(method)
        if method.node is not None and ctx is not None:
            for node in ast.walk(method.node):
                yield ctx, node


def plural(count: int, word: str) -> str:
    """`1 input`, `3 inputs`."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def source_text(node: ast.AST | None, limit: int = 40) -> str:
    """A short source rendering of an expression for messages."""
    if node is None:
        return "?"
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Checker:
    """One rule family. Subclasses set `family` and override the hooks."""

    family: ClassVar[str] = ""

    def __init__(self, reporter: Reporter, project: Project) -> None:
        self.reporter = reporter
        self.project = project

    @classmethod
    def codes(cls) -> frozenset[str]:
        return family_codes(cls.family)

    def enabled(self, code: str) -> bool:
        return self.reporter.enabled(code)

    def supports_torch_before(self, version: tuple[int, int]) -> bool:
        """Whether the project supports a torch older than `version`
        (`target-torch`): a rule true only from `version` on holds then."""
        return self.reporter.target_torch < version

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        """Called once per custom Function defined in the module."""

    def check_module(self, module: ModuleInfo) -> None:
        """Called once per module (rules about call sites, not classes)."""
