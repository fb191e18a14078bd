"""Incremental runs: after an edit, only the edited file and the files whose
analysis read it are analysed again, and the findings are a cold run's."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.engine import lint as engine

from .helpers import leaky_function

BASE = '''
import torch


class Base(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, grad * 2
'''

FILES = {
    "pkg/__init__.py": "",
    "pkg/base.py": BASE,
    "pkg/derived.py": '''
        from pkg.base import Base


        class Child(Base):
            @staticmethod
            def backward(ctx, grad):
                return grad * 2, grad * 2
        ''',
    "pkg/helpers.py": '''
        def scale(grad, factor):
            return grad * factor
        ''',
    "pkg/uses_helper.py": '''
        import torch

        from pkg.helpers import scale


        class Scaled(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return scale(grad, 2)
        ''',
    "pkg/unrelated.py": "\nimport torch\n\n\n" + leaky_function("Alone"),
    "app.py": '''
        import pkg.base


        def run(x):
            return x
        ''',
    "tests/test_ops.py": '''
        from torch.autograd import gradcheck

        from pkg.unrelated import Alone


        def test_alone():
            assert gradcheck(Alone.apply, (1.0,))
        ''',
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files each run analyses (runs the rules on)."""
    names: list[str] = []
    real = engine.check_module

    def spy(module, project, codes, *rest):  # type: ignore[no-untyped-def]
        names.append(Path(module.path).name)
        return real(module, project, codes, *rest)

    monkeypatch.setattr(engine, "check_module", spy)
    return names


def run(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    main(["check", ".", "--isolated", "--select", "ALL", "--format", "json", *args])
    return sorted(json.dumps(f, sort_keys=True) for f in json.loads(capsys.readouterr().out))


def rows(findings: list[str]) -> set[tuple[str, int, str]]:
    return {(Path(f["path"]).name, f["line"], f["code"]) for f in map(json.loads, findings)}


def test_editing_a_base_class_analyses_its_subclasses_again(project: Path, capsys,
                                                            analysed: list[str]) -> None:
    first = run(capsys)
    assert ("derived.py", 8, "AGF101") not in rows(first)
    analysed.clear()
    base = project / "pkg" / "base.py"
    base.write_text(base.read_text().replace("forward(ctx, x, y)", "forward(ctx, x)")
                    .replace("x * y", "x * 2"))
    second = run(capsys)
    # The subclass now returns two gradients for one input: its finding changed.
    assert ("derived.py", 8, "AGF101") in rows(second)
    assert sorted(analysed) == ["base.py", "derived.py"]
    assert second == run(capsys, "--no-cache")


def test_nothing_changed_analyses_nothing(project: Path, capsys, analysed: list[str]) -> None:
    first = run(capsys)
    analysed.clear()
    assert run(capsys) == first and analysed == []


# A warm run with nothing changed takes its findings from the cache: its time
# is mostly the interpreter's start and its imports, so it loads none of what
# only an analysis needs (nor ctypes, which only a run that forks workers needs).
LOADED = """\
import sys
from autograd_lint.cli.entry import main
main(["check", ".", "--isolated", "-q"])
print(" ".join(sorted(sys.modules)))
"""
LOADED_ONLY_TO_ANALYSE = {"autograd_lint.core.project", "autograd_lint.engine.noqa",
                          "autograd_lint.core.notebooks", "ctypes"}


def test_a_warm_run_with_nothing_changed_loads_nothing_it_does_not_need(project: Path) -> None:
    (project / "notes.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, '
                                         '"nbformat_minor": 5}')
    first = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True,
                           check=True)
    assert LOADED_ONLY_TO_ANALYSE & set(first.stdout.split()) == {
        "autograd_lint.core.project", "autograd_lint.engine.noqa", "autograd_lint.core.notebooks"}
    warm = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True,
                          check=True)
    assert warm.stderr == first.stderr
    assert LOADED_ONLY_TO_ANALYSE & set(warm.stdout.split()) == set()


def test_editing_a_helper_analyses_its_callers_again(project: Path, capsys,
                                                     analysed: list[str]) -> None:
    run(capsys)
    analysed.clear()
    helpers = project / "pkg" / "helpers.py"
    helpers.write_text("def scale(grad, factor):\n    grad.mul_(factor)\n    return grad\n")
    second = run(capsys)
    assert ("uses_helper.py", 14, "AGF006") in rows(second)
    assert "uses_helper.py" in analysed and "unrelated.py" not in analysed
    assert second == run(capsys, "--no-cache")


def test_a_subclass_moving_to_another_base_analyses_both_bases_again(
        project: Path, capsys, analysed: list[str]) -> None:
    (project / "pkg" / "other.py").write_text(textwrap.dedent(BASE))
    first = rows(run(capsys))
    # AGF301 stays silent on a Function that serves as a base class.
    assert ("base.py", 5, "AGF301") not in first and ("other.py", 5, "AGF301") in first
    analysed.clear()
    derived = project / "pkg" / "derived.py"
    derived.write_text(derived.read_text().replace("pkg.base", "pkg.other"))
    second = run(capsys)
    assert ("base.py", 5, "AGF301") in rows(second)
    assert ("other.py", 5, "AGF301") not in rows(second)
    assert {"base.py", "other.py", "derived.py"} <= set(analysed)
    assert "unrelated.py" not in analysed
    assert second == run(capsys, "--no-cache")


def test_a_new_gradcheck_analyses_the_functions_again(project: Path, capsys) -> None:
    assert ("unrelated.py", 5, "AGF301") not in rows(run(capsys))
    assert ("uses_helper.py", 7, "AGF301") in rows(run(capsys))
    with open(project / "tests" / "test_ops.py", "a") as handle:
        handle.write("\n\nfrom pkg.uses_helper import Scaled\n\n\n"
                     "def test_scaled():\n    assert gradcheck(Scaled.apply, (1.0,))\n")
    incremental = run(capsys)
    assert ("uses_helper.py", 7, "AGF301") not in rows(incremental)
    assert incremental == run(capsys, "--no-cache")


def test_a_new_attribute_reference_is_judged_without_the_whole_tree(
        project: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    import autograd_lint.engine.relevance as relevance

    run(capsys)
    judged: list[int] = []
    real = relevance.judge
    monkeypatch.setattr(relevance, "judge", lambda *a, **k: judged.append(1) or real(*a, **k))
    app = project / "app.py"
    # The same imports, a new use: only app.py's own part of the judgement changes.
    app.write_text(app.read_text().replace("return x", "return pkg.base.Base.backward(None, x)"))
    incremental = run(capsys)
    assert judged == []
    assert ("app.py", 6, "AGF105") in rows(incremental)
    assert incremental == run(capsys, "--no-cache")


def test_a_sibling_subclass_read_for_its_base_keeps_its_findings(
        project: Path, capsys, analysed: list[str]) -> None:
    # A second subclass of Base: editing it makes base.py stale (it may now
    # have another subclass), and derived.py is parsed beside base.py (it
    # derives from it) without being analysed: its stored findings stand.
    (project / "pkg" / "sibling.py").write_text(textwrap.dedent('''
        from pkg.base import Base


        class Sibling(Base):
            pass
        '''))
    first = run(capsys)
    kept = {row for row in rows(first) if row[0] == "derived.py"}
    assert kept  # derived.py has findings to keep
    analysed.clear()
    sibling = project / "pkg" / "sibling.py"
    sibling.write_text(sibling.read_text() + "\n# edited\n")
    second = run(capsys)
    assert "derived.py" not in analysed and "base.py" in analysed
    assert kept <= rows(second)
    assert second == run(capsys, "--no-cache")
