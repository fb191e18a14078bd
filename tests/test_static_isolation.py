"""Static mode never imports torch and never runs the code it checks."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import FIXTURES

MARKER_MODULE = textwrap.dedent('''\
    import pathlib
    pathlib.Path({marker!r}).write_text("imported")
    import torch


    class Leaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x.exp()
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            return g * ctx.x

    Leaky()(torch.ones(1))
    ''')


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd)


def test_check_does_not_import_torch(tmp_path: Path) -> None:
    """Nor triton: not even on Triton kernels (those fixtures are in the run)."""
    # (--no-cache: a cached answer would load no rule at all)
    proc = _run(["-X", "importtime", "-m", "autograd_lint", "check", "--no-cache",
                 str(FIXTURES / "rules"), str(FIXTURES / "dynamic")], tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")]
    assert "autograd_lint.checkers" in imported  # the rules really ran
    assert not [name for name in imported if name.split(".")[0] in ("torch", "triton")]


@pytest.fixture
def victim(tmp_path: Path) -> tuple[Path, Path]:
    """A package whose import (or conftest collection) writes a marker file."""
    marker = tmp_path / "marker.txt"
    package = tmp_path / "victim"
    package.mkdir()
    (package / "__init__.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    (package / "conftest.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    return package, marker


# Every way users run the static checker: (command, exit status, text of the finding).
ENTRY_POINTS = {
    "cli": (["-m", "autograd_lint", "check"], 1, "AGF105"),
    "flake8": (["-m", "flake8", "--select", "AGF"], 1, "AGF105"),
    # pylint's exit status is a bit mask: 4 = a warning was issued (`ctx.x` holds
    # an intermediate: AGF001 rated a warning).
    "pylint": (["-m", "pylint", "--load-plugins=autograd_lint.pylint_plugin", "--disable=all",
                "--enable=ctx-tensor-attribute,ctx-tensor-attribute-intermediate"], 4,
               "(ctx-tensor-attribute-intermediate)"),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_checked_code_is_never_executed(victim: tuple[Path, Path], entry: str) -> None:
    package, marker = victim
    command, status, expected = ENTRY_POINTS[entry]
    proc = _run([*command, str(package)], package.parent)
    assert proc.returncode == status and expected in proc.stdout, proc.stdout + proc.stderr
    assert not marker.exists()


def test_startup_imports_stay_small(tmp_path: Path) -> None:
    script = ("import sys; from autograd_lint.cli.entry import main; "
              "code = main(['rules']); "
              "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
              "{'torch', 'numpy', 'json', 'tomllib', 'autograd_lint.checkers'}); "
              "print(heavy)")
    proc = _run(["-c", script], tmp_path)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout


def test_dynamic_import_hooks_are_not_triggered_by_a_tree_scan(tmp_path: Path) -> None:
    """A `.pth`-style trap: a sitecustomize and a package __main__ next to the
    checked code are plain files to the linter, never run."""
    marker = tmp_path / "marker.txt"
    trap = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    for name in ("sitecustomize.py", "usercustomize.py", "__main__.py", "setup.py"):
        (tmp_path / name).write_text(trap)
    (tmp_path / "ops.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    proc = _run(["-m", "autograd_lint", "check", "."], tmp_path)
    assert proc.returncode == 1 and "AGF105" in proc.stdout
    assert not marker.exists()


def test_python_dash_m_does_not_import_modules_of_the_working_directory(tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    trap = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    # Standard-library names the linter imports after start-up.
    for name in ("ast", "tokenize", "json", "fnmatch", "tomllib", "dataclasses", "hashlib"):
        (tmp_path / f"{name}.py").write_text(trap)
    (tmp_path / "ops.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    proc = _run(["-m", "autograd_lint", "check", "ops.py", "--format", "json"], tmp_path)
    assert proc.returncode == 1 and "AGF105" in proc.stdout, proc.stderr[-2000:]
    assert not marker.exists()


def test_declaring_inputs_imports_no_torch(tmp_path: Path) -> None:
    """`from autograd_lint.dynamic import example_inputs` is safe in any module."""
    script = ("import sys; from autograd_lint.dynamic import example_inputs; "
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))")
    proc = _run(["-c", script], tmp_path)
    assert proc.stdout.strip() == "[]", proc.stderr
