"""The pre-commit hook, driven by real `pre-commit` against a throwaway git
repository that points at a copy of this checkout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from .helpers import PEDANTIC_AGF001, ROOT, clean_copy, leaky_function

PRE_COMMIT = shutil.which("pre-commit", path=os.path.dirname(sys.executable))


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          check=True)
    return proc.stdout.strip()


def _commit_all(repo: Path) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "snapshot")
    return _git(repo, "rev-parse", "HEAD")


def test_hook_definitions_are_what_the_readme_promises() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load(
        (ROOT / ".pre-commit-hooks.yaml").read_text())}
    static, dynamic = hooks["autograd-lint"], hooks["autograd-lint-dynamic"]
    assert static["types_or"] == ["python", "jupyter"] and static["require_serial"] is True
    assert "--dynamic" not in static["entry"] and "stages" not in static
    assert "--dynamic" in dynamic["entry"] and dynamic["stages"] == ["manual"]
    coverage = hooks["autograd-lint-coverage"]
    assert coverage["entry"] == "autograd-lint coverage" and coverage["pass_filenames"] is False
    assert "pre-push" in coverage["stages"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout's sources as a git repository pre-commit can clone."""
    repo = tmp_path_factory.mktemp("hook-repo")
    clean_copy(repo)
    _git(repo, "init", "-q")
    return repo, _commit_all(repo)


def test_precommit_fails_on_a_buggy_file_and_passes_on_a_clean_one(
        hook_repo: tuple[Path, str], tmp_path: Path) -> None:
    assert PRE_COMMIT is not None, "pre-commit is part of the test extra"
    hook_path, rev = hook_repo
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_path.as_uri()}\n    rev: {rev}\n"
        "    hooks:\n      - id: autograd-lint\n")
    (project / "pyproject.toml").write_text(PEDANTIC_AGF001)  # the hook reads it
    (project / "ops.py").write_text("import torch\n\n\n" + leaky_function("Leaky"))
    (project / "notes.txt").write_text("ctx.x = x  # not Python: the hook must not see it\n")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("%matplotlib inline\nimport torch"),
                      nbformat.v4.new_code_cell(leaky_function("InNotebook"))]
    nbformat.write(notebook, str(project / "explore.ipynb"))
    _commit_all(project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PYTHONPATH": ""}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([PRE_COMMIT, "run", "--all-files", "--color", "never"],
                              cwd=project, capture_output=True, text=True, env=env,
                              timeout=600)

    failing = run()
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "ops.py:" in failing.stdout and "AGF001" in failing.stdout
    assert "notes.txt" not in failing.stdout
    assert "explore.ipynb:cell 2:" in failing.stdout  # notebooks too (types_or: jupyter)

    fixed = "import torch\n\n\n" + leaky_function("Leaky").replace("ctx.x = ", "x_saved = ")
    (project / "ops.py").write_text(fixed)
    (project / "explore.ipynb").unlink()
    _commit_all(project)
    passing = run()
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "autograd-lint" in passing.stdout and "Passed" in passing.stdout


def test_dynamic_hook_runs_in_the_manual_stage(hook_repo: tuple[Path, str],
                                               tmp_path: Path) -> None:
    """`language: system`: the project's own environment (here: this one) runs it."""
    pytest.importorskip("torch")
    assert PRE_COMMIT is not None
    hook_path, rev = hook_repo
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_path.as_uri()}\n    rev: {rev}\n"
        "    hooks:\n      - id: autograd-lint-dynamic\n")
    (project / "ops.py").write_text(
        "import torch\n\n\nclass Cube(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n"
        "        return x ** 3\n\n    @staticmethod\n    def backward(ctx, grad):\n"
        "        (x,) = ctx.saved_tensors\n        return grad * 2 * x\n")
    _commit_all(project)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    quiet = subprocess.run([PRE_COMMIT, "run", "--all-files", "--color", "never"],
                           cwd=project, capture_output=True, text=True, env=env, timeout=600)
    assert quiet.returncode == 0 and "AGD" not in quiet.stdout  # manual stage only
    proc = subprocess.run([PRE_COMMIT, "run", "--all-files", "--color", "never",
                           "--hook-stage", "manual", "autograd-lint-dynamic"],
                          cwd=project, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "AGD001 [gradcheck-failed] Cube" in proc.stdout
