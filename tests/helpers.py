"""Shared test helpers: expectations written as `# expect: AGF001` comments."""
from __future__ import annotations

import re
import shutil
import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from autograd_lint.engine import SourceInput, lint_inputs, lint_source
from autograd_lint.findings import Finding
from autograd_lint.registry import RULES, default_codes

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent


def clean_copy(destination: Path) -> None:
    """The sources alone: a stale build/ in the checkout must not leak in."""
    for name in ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, destination / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("autograd_lint", "checkers", "docs"):
        shutil.copytree(ROOT / name, destination / name, ignore=ignore)
_EXPECT = re.compile(r"#\s*expect:\s*(AG[FD]\d{3}(?:\s*,\s*AG[FD]\d{3})*)")
_ALSO = re.compile(r"#\s*also-score:\s*(AG[FD]\d{3}(?:\s*,\s*AG[FD]\d{3})*)")
ALL_CODES = frozenset(RULES)
DEFAULT_CODES = default_codes()


def opted_in(text: str) -> frozenset[str]:
    """Off-by-default rules a fixture turns on with `# also-score: AGF302`."""
    return frozenset(code.strip() for match in _ALSO.finditer(text)
                     for code in match.group(1).split(","))


def codes_for(text: str) -> frozenset[str]:
    """The rules a fixture is checked with: the defaults plus its opt-ins."""
    return DEFAULT_CODES | opted_in(text)


def expectations(path: Path) -> Counter[tuple[int, str]]:
    """(line, code) pairs a file expects, for rules the registry has."""
    expected: Counter[tuple[int, str]] = Counter()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if match := _EXPECT.search(line):
            for code in (c.strip() for c in match.group(1).split(",")):
                if code in RULES:
                    expected[(number, code)] += 1
    return expected


def found(findings: Iterable[Finding]) -> Counter[tuple[int, str]]:
    return Counter((f.line, f.code) for f in findings)


def lint(code: str, codes: Iterable[str] | None = None, path: str = "snippet.py") -> list[Finding]:
    """Lint a snippet with the default rules plus its opt-ins (or the given codes)."""
    return lint_source(code, path=path, codes=codes_for(code) if codes is None else codes)


def lint_tree(root: Path, codes: Iterable[str] | None = None, *,
              scan_tree: bool = True, prefilter: bool = True) -> list[Finding]:
    """Lint a directory as a project scan, the way `check DIR` does."""
    enabled = frozenset(DEFAULT_CODES if codes is None else codes)
    inputs = [SourceInput(p, str(p), enabled) for p in sorted(root.rglob("*.py"))]
    result = lint_inputs(inputs, scan_tree=scan_tree, prefilter=prefilter)
    assert not result.errors, result.errors
    return result.findings


def leaky_function(name: str = "Leaky") -> str:
    """A Function class that stores its input on ctx (AGF001 on line 4 of it)."""
    return textwrap.dedent(f'''\
        class {name}(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        ''')


def codes_of(findings: Iterable[Finding]) -> list[str]:
    return [f.code for f in findings]


def forbid_analysis(monkeypatch) -> None:
    """Make any real analysis fail: only a cached result can answer."""
    from autograd_lint import engine

    def refuse(self, scans):
        raise AssertionError("analysed although the cache had the answer")
    monkeypatch.setattr(engine._Run, "_lint", refuse)
