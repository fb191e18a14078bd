"""The prefilter (byte scan, relevance, sparse parsing) never changes findings.

A run with the prefilter must report exactly what a run that parses every file
whole reports: on a synthetic project built to stress the prefilter's guesses,
and on the installed torch package's source tree (about 2,300 files).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograd_lint.findings import Finding

from .helpers import ALL_CODES, finding_rows, lint_tree, torch_source_tree, write_tricky_project


def run(root: Path, prefilter: bool, jobs: int = 1) -> list[Finding]:
    return lint_tree(root, ALL_CODES, prefilter=prefilter, jobs=jobs)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tricky_project(tmp_path)


@pytest.mark.parametrize("jobs", [1, 2])  # syntax checks in-process, or in a worker
def test_prefilter_keeps_every_finding_of_a_tricky_project(project: Path, jobs: int) -> None:
    filtered, whole = run(project, prefilter=True, jobs=jobs), run(project, prefilter=False)
    assert finding_rows(filtered) == finding_rows(whole)
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


@pytest.mark.skipif(torch_source_tree() is None, reason="torch is not installed")
def test_prefilter_keeps_every_finding_on_the_torch_tree() -> None:
    tree = torch_source_tree()
    assert tree is not None
    filtered = run(tree, prefilter=True)
    whole = run(tree, prefilter=False)
    assert finding_rows(filtered) == finding_rows(whole)
    assert len(filtered) > 50  # the tree has real findings, so the comparison means something
