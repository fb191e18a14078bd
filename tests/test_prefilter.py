"""The prefilter (byte scan, relevance, sparse parsing) never changes findings.

A run with the prefilter must report exactly what a run that parses every file
whole reports: on a synthetic project built to stress the prefilter's guesses,
and on the installed torch package's source tree (about 2,300 files).
"""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from autograd_lint.engine import SPARSE_MIN_BYTES, SourceInput, lint_inputs
from autograd_lint.files import iter_python_files
from autograd_lint.findings import Finding
from autograd_lint.registry import RULES

ALL_CODES = frozenset(RULES)


def run(root: Path, prefilter: bool, jobs: int = 1) -> list[Finding]:
    paths = list(iter_python_files(root, lambda path, is_dir: False))
    inputs = [SourceInput(p, str(p), ALL_CODES) for p in paths]
    result = lint_inputs(inputs, scan_tree=True, prefilter=prefilter, jobs=jobs)
    assert not result.errors, result.errors[:5]
    return result.findings


def as_rows(findings: list[Finding]) -> list[tuple]:
    return [(f.path, f.line, f.column, f.code, f.message) for f in findings]


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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
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
    (tmp_path / "app.py").write_text(big('''
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
    (tmp_path / "via_alias.py").write_text(textwrap.dedent('''
        from pkg.api import Legacy
        import pkg.api as api


        def run(x):
            return Legacy()(x) + api.Legacy.forward(None, x)
        '''))
    (tmp_path / "via_package.py").write_text(textwrap.dedent('''
        import pkg


        def run(x):
            return pkg.ops.Scale.forward(None, x)
        '''))
    (tmp_path / "base_alias.py").write_text(textwrap.dedent('''
        import pkg

        Base = pkg.api.Legacy


        class Derived(Base):
            @staticmethod
            def forward(ctx, x):
                ctx.keep = x
                return x
        '''))
    (tmp_path / "crlf.py").write_bytes(big('''
        import torch


        class Windows(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.saved = x
                return x * 2
        ''').replace("\n", "\r\n").encode())
    # A syntax error outside the statements a sparse parse reads.
    (tmp_path / "legacy.py").write_text(big('''
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
    (tmp_path / "test_suite.py").write_text(
        big("import torch\nfrom pkg import ops\n\n\nclass TestSuite:\n") + methods + inner)
    # A helper the sparse parse leaves out (it names no Function) changes
    # the gradient in place: its summary needs the whole file.
    (tmp_path / "helpers.py").write_text(big('''
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
    (tmp_path / "ns" / "core").mkdir(parents=True)
    (tmp_path / "ns" / "core" / "__init__.py").write_text("")
    (tmp_path / "ns" / "core" / "nsops.py").write_text(textwrap.dedent('''
        import torch


        class NsFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''))
    (tmp_path / "test_ns.py").write_text(textwrap.dedent('''
        from ns.core import nsops


        def test_backward():
            return nsops.NsFn.backward(None, 1.0)
        '''))
    (tmp_path / "broken.py").write_text("import torch\nclass Bad(torch.autograd.Function:\n")
    (tmp_path / "unrelated.py").write_text("def f(:\n")  # broken, but not ours to report
    (tmp_path / "test_ops.py").write_text(textwrap.dedent('''
        from torch.autograd import gradcheck
        from pkg.derived import Child


        def test_child():
            assert gradcheck (Child.apply, (1.0,))
        '''))
    return tmp_path


@pytest.mark.parametrize("jobs", [1, 2])  # syntax checks in-process, or in a worker
def test_prefilter_keeps_every_finding_of_a_tricky_project(project: Path, jobs: int) -> None:
    filtered, whole = run(project, prefilter=True, jobs=jobs), run(project, prefilter=False)
    assert as_rows(filtered) == as_rows(whole)
    codes = {(Path(f.path).name, f.code) for f in filtered}
    # The project really exercises the rules the prefilter must not hide.
    assert {("ops.py", "AGF001"), ("ops.py", "AGF007"), ("ops.py", "AGF006"),
            ("app.py", "AGF105"), ("crlf.py", "AGF001"), ("broken.py", "AGF000"),
            ("derived.py", "AGF301"), ("via_alias.py", "AGF105"),
            ("via_package.py", "AGF105"), ("base_alias.py", "AGF001"),
            ("test_suite.py", "AGF001"), ("test_suite.py", "AGF105"), ("helpers.py", "AGF006"),
            ("test_ns.py", "AGF105")} <= codes
    assert not any(name == "unrelated.py" for name, _ in codes)
    assert [f.code for f in filtered if Path(f.path).name == "legacy.py"] == ["AGF000"]
    assert not any(f.function and f.function.startswith("NotReal") for f in filtered)


def torch_source_tree() -> Path | None:
    spec = importlib.util.find_spec("torch")  # finds it without importing it
    return Path(spec.origin).parent if spec is not None and spec.origin else None


@pytest.mark.skipif(torch_source_tree() is None, reason="torch is not installed")
def test_prefilter_keeps_every_finding_on_the_torch_tree() -> None:
    tree = torch_source_tree()
    assert tree is not None
    filtered = run(tree, prefilter=True)
    whole = run(tree, prefilter=False)
    assert as_rows(filtered) == as_rows(whole)
    assert len(filtered) > 50  # the tree has real findings, so the comparison means something
