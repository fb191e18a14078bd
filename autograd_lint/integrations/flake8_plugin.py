"""flake8 plugin: `AGF` findings in flake8's output.

Registered as a `flake8.extension` entry point with the prefix `AGF`. flake8
hands over the tree it parsed, so nothing is parsed twice. A file is checked
on its own (flake8 works file by file): project-level AGF301 never runs here,
and a Function imported from another file is not resolved. Info rules are
opt-in as in the command line: only their exact code in `--select` or
`--extend-select` turns them on (`--extend-select AGF` does not), and they
are in flake8's default ignore list too.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from .. import __version__
from ..core.findings import shown_text
from ..core.registry import all_rules

# Off unless selected by exact code, like in the CLI (info rules).
DEFAULT_IGNORED = tuple(rule.code for rule in all_rules() if not rule.default)


def _selected_opt_in(options: Any) -> frozenset[str]:
    """The opt-in codes flake8's options name exactly (`--select AGF202`)."""
    named: set[str] = set()
    for attribute in ("select", "extend_select"):
        for entry in getattr(options, attribute, None) or ():
            named.update(part.strip().upper() for part in str(entry).split(","))
    return frozenset(code for code in DEFAULT_IGNORED if code in named)


class Flake8Checker:
    name = "autograd-lint"
    version = __version__

    def __init__(self, tree: ast.Module, filename: str = "(none)",
                 lines: list[str] | None = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    # flake8 hands the options to the plugin class once per run (as pyflakes'
    # checker reads its builtins): which opt-in rules were named exactly.
    opt_in: frozenset[str] = frozenset()

    @classmethod
    def add_options(cls, parser: Any) -> None:
        parser.extend_default_ignore(list(DEFAULT_IGNORED))

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.opt_in = _selected_opt_in(options)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines) if self.lines is not None else ast.unparse(self.tree)
        if "Function" not in source and "torch" not in source:
            return  # before importing the engine: most files end here (ops name torch)
        from ..core.registry import RULES
        from ..engine.lint import lint_source

        # flake8 selects codes and applies its own line suppressions; lint_source
        # adds the file-level form. A tree in hand means no AGF000.
        codes = frozenset(code for code in RULES
                          if code not in DEFAULT_IGNORED or code in self.opt_in)
        for finding in lint_source(source, self.filename, codes, tree=self.tree):
            yield (finding.line, finding.column, f"{finding.code} {shown_text(finding.message)}",
                   type(self))
