"""Static mode never imports torch and never runs the code it checks."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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

    Leaky.apply(torch.ones(1))
    ''')


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd)


def test_check_does_not_import_torch(tmp_path: Path) -> None:
    target = FIXTURES / "rules"
    proc = _run(["-X", "importtime", "-m", "autograd_lint", "check", str(target)], tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")]
    assert "autograd_lint.checkers" in imported  # the rules really ran
    assert not [name for name in imported if name.split(".")[0] == "torch"]


def test_checked_code_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    package = tmp_path / "victim"
    package.mkdir()
    (package / "__init__.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    (package / "conftest.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    proc = _run(["-m", "autograd_lint", "check", str(package)], tmp_path)
    assert proc.returncode == 1 and "AGF001" in proc.stdout
    assert not marker.exists()


def test_startup_imports_stay_small(tmp_path: Path) -> None:
    script = ("import sys; from autograd_lint.cli import main; "
              "code = main(['rules']); "
              "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
              "{'torch', 'numpy', 'json', 'tomllib', 'autograd_lint.checkers'}); "
              "print(heavy)")
    proc = _run(["-c", script], tmp_path)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout
