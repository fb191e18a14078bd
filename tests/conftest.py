"""Fixtures several test modules share (a module's own fixture of the same
name takes precedence there)."""
from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import PEDANTIC_AGF001, leaky_function


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small configured project, the working directory: a leaky Function
    (AGF001 at ops.py:7) and a plain helper module. The project turns AGF001
    (pedantic, off by default) on, as a project that wants it does."""
    (tmp_path / "pyproject.toml").write_text(PEDANTIC_AGF001)
    (tmp_path / "ops.py").write_text("import torch\n\n\n" + leaky_function())
    (tmp_path / "helpers.py").write_text("def add(a, b):\n    return a + b\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path
