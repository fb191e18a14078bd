"""The built wheel has the user's layout: rules under autograd_lint.checkers,
rule pages as package data, no top-level `checkers` package, and it works
when installed on its own."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from .helpers import ROOT, clean_copy


def test_wheel_layout_and_installed_behaviour(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    clean_copy(source)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("autograd_lint-*.whl")
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert {n.split("/", 1)[0] for n in names if ".dist-info/" not in n} == {"autograd_lint"}
    assert "autograd_lint/checkers/ctx_state.py" in names
    assert "autograd_lint/rule_docs/AGF001.md" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "autograd-lint = autograd_lint.cli:run" in archive.read(entry_points).decode()

    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    # -S: no site-packages, so only the wheel's copy can be imported.
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = subprocess.run(
        [sys.executable, "-S", "-m", "autograd_lint", "rule", "AGF001"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == (ROOT / "docs" / "rules" / "AGF001.md").read_text()
    check = subprocess.run(
        [sys.executable, "-S", "-m", "autograd_lint", "check", str(ROOT / "examples")],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert check.returncode == 1 and "AGF001" in check.stdout, check.stderr
