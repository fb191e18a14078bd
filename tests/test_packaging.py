"""The built wheel has the user's layout: rules under autograd_lint.checkers,
rule pages as package data, no top-level `checkers` package, and it works
when installed on its own."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

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
    assert check.returncode == 1 and "AGF101" in check.stdout, check.stderr


TRITON_ON_CPU = r'''
import importlib.abc
import json
import sys
from importlib.metadata import packages_distributions

# Only what the allowed distributions (and the standard library) provide can
# be imported: a fresh environment with just the extra installed.
allowed = set(json.loads(sys.argv[1]))
owners = packages_distributions()


class Uninstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        dists = {d.lower().replace("_", "-") for d in owners.get(name.partition(".")[0], [])}
        if dists and not dists & allowed:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Uninstalled())

from autograd_lint.dynamic import triton_cpu
triton_cpu.install()
import torch
import triton
import triton.language as tl


@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


x = torch.arange(8, dtype=torch.float32)
out = torch.empty_like(x)
double[(1,)](x, out, 8, BLOCK=8)
assert out.tolist() == (x * 2).tolist()
'''


def _requirement_closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, with their own
    requirements (environment markers evaluated; no extras of dependencies)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    found: set[str] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in found or (requirement.marker is not None
                             and not requirement.marker.evaluate({"extra": ""})):
            continue
        found.add(name)
        try:
            pending.extend(Requirement(text) for text in requires(name) or [])
        except PackageNotFoundError:
            pass
    return found


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_the_dynamic_extra_installs_what_a_triton_kernel_on_cpu_imports() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["dynamic"]
    runtime = pyproject["project"].get("dependencies", [])
    allowed = _requirement_closure([*runtime, *extra]) | {"autograd-lint"}
    run = subprocess.run([sys.executable, "-c", TRITON_ON_CPU, json.dumps(sorted(allowed))],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
