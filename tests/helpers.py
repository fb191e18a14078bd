"""Shared test helpers: expectations written as `# expect: AGF001` comments."""
from __future__ import annotations

import importlib.util
import re
import shutil
import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from autograd_lint.core.findings import Finding
from autograd_lint.core.registry import RULES, default_codes
from autograd_lint.engine.lint import (
    SPARSE_MIN_BYTES,
    LintResult,
    SourceInput,
    lint_inputs,
    lint_source,
)

if TYPE_CHECKING:
    import pytest

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
    """The rules a fixture is checked with: the defaults, its opt-ins and
    every code it expects somewhere (as the shared conformance scorer does:
    a pedantic or style rule's fixture selects its rule)."""
    expected = frozenset(code.strip() for match in _EXPECT.finditer(text)
                         for code in match.group(1).split(",") if code.strip() in RULES)
    return DEFAULT_CODES | opted_in(text) | expected


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


def lint_tree_result(root: Path, codes: Iterable[str] | None = None, *,
                     scan_tree: bool = True, **options: object) -> LintResult:
    """Lint a directory as a project scan, the way `check DIR` does
    (`options`: those of `lint_inputs`, such as prefilter or jobs)."""
    enabled = frozenset(DEFAULT_CODES if codes is None else codes)
    inputs = [SourceInput(p, str(p), enabled) for p in sorted(root.rglob("*.py"))]
    return lint_inputs(inputs, scan_tree=scan_tree, **options)  # type: ignore[arg-type]


def lint_tree(root: Path, codes: Iterable[str] | None = None, *,
              scan_tree: bool = True, **options: object) -> list[Finding]:
    """The findings of `lint_tree_result`, which must report no error."""
    result = lint_tree_result(root, codes, scan_tree=scan_tree, **options)
    assert not result.errors, result.errors
    return result.findings


def write(root: Path, relative: str, text: str) -> None:
    """`text`, dedented, as the file `relative` under root (folders made)."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def unchecked(root: Path) -> set[str]:
    """Names of the Functions AGF301 reports in a project scan of root."""
    return {f.function for f in lint_tree(root, {"AGF301"}) if f.code == "AGF301"}


# A configuration that turns on AGF001, the finding of `leaky_function`: the
# rule is pedantic, off by default.
PEDANTIC_AGF001 = '[tool.autograd-lint]\nextend-select = ["AGF001"]\n'


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
    from autograd_lint.engine import lint as engine

    def refuse(*args: object) -> None:
        raise AssertionError("analysed although the cache had the answer")
    monkeypatch.setattr(engine._Run, "_lint", refuse)


FILLER = textwrap.dedent('''\
    def helper_{n}(values, scale=1.0):
        """Docstring with a column-0 body line:
    class NotReal_{n}(torch.autograd.Function):
        pass
    """
        total = [
    v * scale
        for v in values]
        return sum(total)


    ''')


def big(text: str) -> str:
    """Pad a module past the size where sparse parsing starts."""
    count = SPARSE_MIN_BYTES // len(FILLER) + 2
    return "".join(FILLER.format(n=n) for n in range(count)) + textwrap.dedent(text)


def write_tricky_project(root: Path) -> Path:
    """A project built to stress the prefilter's guesses and the cross-file
    analysis: aliases, re-exports, namespace packages, sparse parses of
    long files, syntax errors a sparse parse cannot see, gradcheck tests."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .ops import Scale as Scale\n")
    (pkg / "ops.py").write_text(big('''
        import torch
        from torch.autograd import Function as F


        class Scale(F):
            @staticmethod
            def forward(ctx, x, factor):
                ctx.x = x
                x.mul_(factor)
                return x

            @staticmethod
            def backward(ctx, grad):
                grad[grad != grad] = 0
                return grad


        if torch.cuda.is_available():
            class Fused(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x.numpy()
        '''))
    (pkg / "derived.py").write_text(big('''
        import torch
        from .ops import Scale


        class Child(Scale):
            @staticmethod
            def backward(ctx, grad):
                return grad


        class Untested(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''))
    (root / "app.py").write_text(big('''
        import pkg
        from pkg import ops


        result = call(
        pkg.Scale.forward(None, 1, 2),
        ops.Scale(),
        )


        def run(x):
            return ops.Scale.forward(None, x, 2.0)
        '''))
    # Reached without importing the name: an alias in another module, an
    # attribute path from a package, and a class deriving from an alias.
    (pkg / "api.py").write_text("from .ops import Scale\n\nLegacy = Scale\n")
    (root / "via_alias.py").write_text(textwrap.dedent('''
        from pkg.api import Legacy
        import pkg.api as api


        def run(x):
            return Legacy()(x) + api.Legacy.forward(None, x)
        '''))
    (root / "via_package.py").write_text(textwrap.dedent('''
        import pkg


        def run(x):
            return pkg.ops.Scale.forward(None, x)
        '''))
    (root / "base_alias.py").write_text(textwrap.dedent('''
        import pkg

        Base = pkg.api.Legacy


        class Derived(Base):
            @staticmethod
            def forward(ctx, x):
                ctx.keep = x
                return x
        '''))
    (root / "crlf.py").write_bytes(big('''
        import torch


        class Windows(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.saved = x
                return x.exp()
        ''').replace("\n", "\r\n").encode())
    # A syntax error outside the statements a sparse parse reads.
    (root / "legacy.py").write_text(big('''
        import torch


        class Legacy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x
                return x


        def py312_only[T](x: T) -> T:
            return x
        '''))
    # A long test class with a Function inside one method: only that method
    # and the class header are parsed (the class is split into its members).
    methods = "".join(f"    def test_{n}(self):\n        assert helper_{n}([1, 2]) == 3\n\n"
                      for n in range(40))
    inner = textwrap.indent(textwrap.dedent('''
        def test_inner(self):
            class Inner(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.x = x
                    return x * 2

                @staticmethod
                def backward(ctx, grad):
                    return grad * 2

            return Inner.apply(torch.ones(1))

        def test_direct(self):
            return ops.Scale.forward(None, 1.0, 2.0)
        '''), "    ")
    (root / "test_suite.py").write_text(
        big("import torch\nfrom pkg import ops\n\n\nclass TestSuite:\n") + methods + inner)
    # A helper the sparse parse leaves out (it names no Function) changes
    # the gradient in place: its summary needs the whole file.
    (root / "helpers.py").write_text(big('''
        import torch


        def clip_(grad, limit):
            grad.clamp_(-limit, limit)
            return grad


        class Clipped(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, grad):
                return clip_(grad, 1.0)
        '''))
    # A namespace package (no `__init__.py` above `core`): `from ns.core
    # import nsops` binds a module of the tree.
    (root / "ns" / "core").mkdir(parents=True)
    (root / "ns" / "core" / "__init__.py").write_text("")
    (root / "ns" / "core" / "nsops.py").write_text(textwrap.dedent('''
        import torch


        class NsFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''))
    (root / "test_ns.py").write_text(textwrap.dedent('''
        from ns.core import nsops


        def test_backward():
            return nsops.NsFn.backward(None, 1.0)
        '''))
    (root / "broken.py").write_text("import torch\nclass Bad(torch.autograd.Function:\n")
    (root / "unrelated.py").write_text("def f(:\n")  # broken, but not ours to report
    (root / "test_ops.py").write_text(textwrap.dedent('''
        from torch.autograd import gradcheck
        from pkg.derived import Child


        def test_child():
            assert gradcheck (Child.apply, (1.0,))
        '''))
    return root


def torch_source_tree() -> Path | None:
    """The installed torch package's sources (found without importing it)."""
    spec = importlib.util.find_spec("torch")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def finding_rows(findings: Iterable[Finding]) -> list[tuple]:
    """What two runs must agree on, finding by finding."""
    return [(f.path, f.line, f.column, f.code, f.message) for f in findings]


# A module of two Functions (with an AGF001 in Cube) that other files import.
CUBE_AND_BASE = textwrap.dedent('''\
    import torch


    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x.clone()
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            return 3 * ctx.x ** 2 * grad


    class Base(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad):
            return grad
    ''')


def check_isolated(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`autograd-lint check --isolated --no-cache ARGS` in this process:
    (exit status, standard output, standard error)."""
    from autograd_lint.cli.entry import main

    code = main(["check", "--isolated", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
