"""Analysis in worker processes reports exactly what one process reports.

Each worker analyses a run of neighbouring files and parses whatever else a
name leads to, so a Function, base, helper or gradcheck test in another
worker's part must still be seen; these tests compare the findings (and the
Functions listed for the dynamic mode) of both ways on the tricky project of
the prefilter tests and on the installed torch tree.
"""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from autograd_lint.engine import lint as engine
from autograd_lint.engine.lint import SPARSE_MIN_BYTES, LintResult

from .helpers import (
    ALL_CODES,
    finding_rows,
    lint_tree_result,
    torch_source_tree,
    write_tricky_project,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="workers are forked on Linux only")


def run(root: Path, jobs: int) -> LintResult:
    return lint_tree_result(root, ALL_CODES, jobs=jobs, functions=True)


def rows(result: LintResult) -> list[tuple]:
    return finding_rows(result.findings)


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split even a small project into parts (two files make one)."""
    monkeypatch.setattr(engine, "_PARALLEL_MIN_FILES", 2)


@pytest.mark.parametrize("jobs", [2, 5])
def test_workers_find_what_one_process_finds_in_a_tricky_project(
        tmp_path: Path, small_parts: None, jobs: int) -> None:
    write_tricky_project(tmp_path)
    serial, parallel = run(tmp_path, jobs=1), run(tmp_path, jobs=jobs)
    assert serial.workers == 1 and parallel.workers == jobs
    assert rows(parallel) == rows(serial)
    assert parallel.errors == serial.errors
    assert parallel.functions == serial.functions  # the same, in the same order
    # Findings that need another part's files: a base class's Function-ness,
    # a gradcheck test, a reference through a package's re-export.
    codes = {(Path(f.path).name, f.code) for f in parallel.findings}
    assert {("derived.py", "AGF301"), ("via_package.py", "AGF105"),
            ("base_alias.py", "AGF001")} <= codes


def test_a_base_beside_a_syntax_error_no_rule_reads_is_a_base_in_every_worker(
        tmp_path: Path, small_parts: None) -> None:
    # base.py is parsed sparsely (it is long), by the worker analysing it
    # and by the one analysing child.py; the syntax error is in a statement
    # no rule reads, which AGF000 does not cover (RULES.md), so both
    # workers, and one process, see the same `Base`.
    padding = "".join(f"def pad_{n}(x):\n    return x + {n}\n\n\n"
                      for n in range(SPARSE_MIN_BYTES // 30))
    (tmp_path / "base.py").write_text(padding + textwrap.dedent('''
        import torch


        class Base(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x


        def unused(values):
            values = = 2.0
        '''))
    (tmp_path / "child.py").write_text(textwrap.dedent('''
        from base import Base


        class Child(Base):
            @staticmethod
            def backward(ctx, grad):
                return grad, grad
        '''))
    serial, parallel = run(tmp_path, jobs=1), run(tmp_path, jobs=2)
    assert parallel.workers == 2
    assert rows(parallel) == rows(serial)
    found = {(Path(f.path).name, f.code) for f in parallel.findings}
    # Child derives from Base: `forward(x)` given two gradients is AGF101's.
    assert ("child.py", "AGF101") in found and ("base.py", "AGF303") in found
    assert not any(code == "AGF000" for _, code in found)


def test_a_base_knows_its_subclasses_in_another_part(tmp_path: Path, small_parts: None) -> None:
    # Base is a base: no test must gradcheck it and the dynamic mode does
    # not run it, because a Function derives from it, in another part.
    (tmp_path / "a_base.py").write_text(textwrap.dedent('''
        import torch


        class Base(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
        '''))
    (tmp_path / "b_sub.py").write_text(textwrap.dedent('''
        from a_base import Base


        class Sub(Base):
            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''))
    (tmp_path / "test_smoke.py").write_text("def test_imports():\n    pass\n")
    serial, parallel = run(tmp_path, jobs=1), run(tmp_path, jobs=2)
    assert parallel.workers == 2
    assert rows(parallel) == rows(serial)
    assert [(Path(f.path).name, f.code) for f in parallel.findings if f.code == "AGF301"] == \
        [("b_sub.py", "AGF301")]
    assert [t.qualname for t in parallel.functions] == ["Sub"]  # the base is not run


def test_a_worker_that_dies_leaves_the_analysis_to_one_process(
        tmp_path: Path, small_parts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tricky_project(tmp_path)
    serial = run(tmp_path, jobs=1)
    monkeypatch.setattr(engine._Run, "_run_part", lambda *args: os._exit(3))
    fallback = run(tmp_path, jobs=2)
    assert fallback.workers == 1
    assert rows(fallback) == rows(serial)


@pytest.mark.skipif(torch_source_tree() is None, reason="torch is not installed")
def test_workers_find_what_one_process_finds_on_the_torch_tree() -> None:
    tree = torch_source_tree()
    assert tree is not None
    serial, parallel = run(tree, jobs=1), run(tree, jobs=2)
    assert parallel.workers == 2  # the tree is large enough without help
    assert rows(parallel) == rows(serial)
    assert parallel.functions == serial.functions
    assert len(parallel.findings) > 50


def _function(name: str, factor: int) -> str:
    return textwrap.dedent(f'''
        import torch


        class {name}(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * {factor}

            @staticmethod
            def backward(ctx, grad):
                return grad * {factor}
        ''')


def test_one_worker_answers_which_functions_gradcheck_exercises(
        tmp_path: Path, small_parts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # The answer is a search of the whole project's tests; every part used
    # to compute it again. One worker computes it now, the others' AGF301
    # findings wait for it: those it covers are dropped, the rest stand.
    for n in range(6):
        (tmp_path / f"m{n}_ops.py").write_text(_function(f"Op{n}", n + 2))
    backends = tmp_path / "backends"
    backends.mkdir()
    (backends / "cpu.py").write_text(_function("Op0", 2))  # stands in for m0_ops.Op0
    (tmp_path / "test_ops.py").write_text(textwrap.dedent('''
        import torch
        from m0_ops import Op0
        from m4_ops import Op4


        def test_gradients():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert torch.autograd.gradcheck(Op0.apply, (x,))
            assert torch.autograd.gradcheck(Op4.apply, (x,))
        '''))
    from autograd_lint.checkers import usage

    computed = tmp_path.parent / f"{tmp_path.name}-answers"
    search = usage.gradchecked

    def counted(project):  # the workers are forked: they count in a file
        if "gradchecked" not in project.cache:
            with computed.open("a") as log:
                log.write(f"{os.getpid()}\n")
        return search(project)

    monkeypatch.setattr(usage, "gradchecked", counted)
    serial = run(tmp_path, jobs=1)
    computed.unlink()
    parallel = run(tmp_path, jobs=2)
    assert parallel.workers == 2
    assert len(computed.read_text().split()) == 1
    assert rows(parallel) == rows(serial)
    unchecked = sorted(Path(f.path).name for f in parallel.findings if f.code == "AGF301")
    assert unchecked == ["m1_ops.py", "m2_ops.py", "m3_ops.py", "m5_ops.py"]
