"""Rule pages: one per rule, ruff's layout, and examples executed through the linter."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograd_lint.cli import main
from autograd_lint.registry import RULES

from .helpers import ALL_CODES, lint

DOCS = Path(__file__).resolve().parent.parent / "docs"
SECTIONS = ["## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Notes", "## References"]


def page(code: str) -> str:
    return (DOCS / "rules" / f"{code}.md").read_text(encoding="utf-8")


def code_block(text: str, section: str) -> str:
    body = text.split(section + "\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", body, re.S)
    assert match, f"no python block under {section}"
    return match.group(1)


@pytest.mark.parametrize("code", sorted(RULES))
def test_page_layout(code: str) -> None:
    text = page(code)
    assert text.startswith(f"# {code} {RULES[code].name}\n")
    positions = [text.find(s + "\n") for s in SECTIONS]
    assert all(p > 0 for p in positions), f"{code}: missing a section"
    assert positions == sorted(positions), f"{code}: sections out of order"


@pytest.mark.parametrize("code", sorted(RULES))
def test_example_triggers_exactly_its_rule(code: str) -> None:
    findings = lint(code_block(page(code), "## Example"), codes=ALL_CODES)
    assert findings and {f.code for f in findings} == {code}, \
        [(f.line, f.code, f.message) for f in findings]


@pytest.mark.parametrize("code", sorted(RULES))
def test_fix_is_clean(code: str) -> None:
    findings = lint(code_block(page(code), "## Use instead"), codes=ALL_CODES)
    assert findings == [], [(f.line, f.code, f.message) for f in findings]


def test_index_lists_every_rule() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\[(AG[FD]\d{3})\]\(rules/\1\.md\)", index))
    assert listed == set(RULES)


def test_rule_command_prints_the_page(capsys) -> None:
    assert main(["rule", "AGF006"]) == 0
    assert capsys.readouterr().out == page("AGF006")
