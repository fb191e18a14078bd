"""flake8 plugin: `AGF` findings in flake8's output.

Registered as a `flake8.extension` entry point with the prefix `AGF`. flake8
hands over the tree it parsed, so nothing is parsed twice. A file is checked
on its own (flake8 works file by file): project-level AGF301 never runs here,
and a Function imported from another file is not resolved. Info rules are off
unless selected (`extend-select = AGF202`), through flake8's default ignore list.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from . import __version__

# Off unless selected, like in the CLI.
DEFAULT_IGNORED = ("AGF202", "AGF302", "AGF303")


class Flake8Checker:
    name = "autograd-lint"
    version = __version__

    def __init__(self, tree: ast.Module, filename: str = "(none)",
                 lines: list[str] | None = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser: Any) -> None:
        parser.extend_default_ignore(list(DEFAULT_IGNORED))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines) if self.lines is not None else None
        if source is not None and "Function" not in source:
            return  # no Function can be defined here (aliases name it too)
        from .engine import check_module
        from .model import build_module, module_name_for
        from .noqa import filter_findings
        from .project import Project
        from .registry import RULES

        if source is None:
            source = ast.unparse(self.tree)
        name, is_package = module_name_for(self.filename) if self.filename.endswith(".py") \
            else ("__main__", False)
        module = build_module(self.filename, name, is_package, self.tree, source)
        codes = frozenset(code for code in RULES if code not in ("AGF000", "AGF301"))
        # flake8 applies its own line suppressions; ours adds the file-level form.
        findings = filter_findings(check_module(module, Project([module]), codes), source)
        for finding in findings:
            yield (finding.line, finding.column, f"{finding.code} {finding.message}",
                   type(self))
