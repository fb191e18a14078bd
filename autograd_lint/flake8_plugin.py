"""flake8 plugin: `AGF` findings in flake8's output.

Registered as a `flake8.extension` entry point with the prefix `AGF`. flake8
hands over the tree it parsed, so nothing is parsed twice. A file is checked
on its own (flake8 works file by file): project-level AGF301 never runs here,
and a Function imported from another file is not resolved. Info rules are off
unless selected, through flake8's default ignore list; as for any flake8
default ignore, an explicit `--select AGF` selects them too (use
`--select AGF0,AGF1,AGF2` or `extend-ignore = AGF202,AGF3` to keep them off).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from . import __version__
from .registry import all_rules

# Off unless selected, like in the CLI (info rules).
DEFAULT_IGNORED = tuple(rule.code for rule in all_rules() if not rule.default)


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
        source = "".join(self.lines) if self.lines is not None else ast.unparse(self.tree)
        if "Function" not in source:
            return  # before importing the engine: most files end here
        from .engine import lint_source
        from .registry import RULES

        # flake8 selects codes and applies its own line suppressions; lint_source
        # adds the file-level form. A tree in hand means no AGF000.
        for finding in lint_source(source, self.filename, RULES, tree=self.tree):
            yield (finding.line, finding.column, f"{finding.code} {finding.message}",
                   type(self))
