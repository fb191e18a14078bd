"""Every fixture file is linted; findings must equal its `# expect:` comments.

A fixture holds the flagged forms of a rule *and* the forms that must stay
silent, so a regression in either direction fails here, with the line.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import DEFAULT_CODES, FIXTURES, expectations, found, lint, lint_tree

SINGLE_FILES = sorted((FIXTURES / "rules").glob("*.py")) + \
    sorted((FIXTURES / "discovery").glob("*.py"))


def _diff(expected, actual) -> str:
    missing = sorted((expected - actual).elements())
    extra = sorted((actual - expected).elements())
    return f"missing (line, code): {missing}; unexpected: {extra}"


@pytest.mark.parametrize("path", SINGLE_FILES, ids=lambda p: p.stem)
def test_fixture_file(path: Path) -> None:
    expected = expectations(path)
    actual = found(lint(path.read_text(encoding="utf-8"), path=str(path)))
    assert actual == expected, _diff(expected, actual)


def test_fixture_files_expect_something() -> None:
    # Guard against a fixture whose markers silently stopped matching.
    for path in SINGLE_FILES:
        if path.name != "lookalike.py":
            assert expectations(path), f"{path.name} expects no finding"


def test_project_fixture_resolves_functions_across_files() -> None:
    root = FIXTURES / "discovery" / "proj"
    expected_codes = {code for path in root.rglob("*.py") for _, code in expectations(path)}
    findings = lint_tree(root, DEFAULT_CODES | expected_codes)
    by_file: dict[str, object] = {}
    for path in root.rglob("*.py"):
        expected = expectations(path)
        actual = found(f for f in findings if Path(f.path) == path)
        assert actual == expected, f"{path.relative_to(root)}: {_diff(expected, actual)}"
        by_file[path.name] = actual
    # The subclass two modules away from torch was recognised and checked.
    assert by_file["concrete.py"]
