"""Rule pages: one per rule, ruff's layout, and examples executed through the linter."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.registry import RULES, TREE_ONLY_CODES

from .helpers import DEFAULT_CODES, lint, lint_tree

PROJECT_RULES = set(TREE_ONLY_CODES)  # reported in tree scans only

DOCS = Path(__file__).resolve().parent.parent / "docs"
SECTIONS = ["## What it does", "## Why is this bad", "## Example", "## Use instead",
            "## Fix safety", "## Notes", "## References"]


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
def test_fix_safety_section_matches_the_registry(code: str) -> None:
    section = page(code).split("## Fix safety\n", 1)[1].split("\n## ", 1)[0].strip()
    fix = RULES[code].fix
    if fix is None:
        assert section.startswith("This rule has no automatic fix")
    else:
        flag = "--fix" if fix == "safe" else "--unsafe-fixes"
        assert section.startswith(f"{fix.capitalize()} (`{flag}`)")


def run_example(code: str, section: str, tmp_path: Path) -> list:
    """Lint a page's code block; project-level rules see it as a one-file tree
    (a test file: AGF301 asks what a project's tests check)."""
    source = code_block(page(code), section)
    codes = DEFAULT_CODES | {code}
    if code in PROJECT_RULES:
        (tmp_path / "test_example.py").write_text(source)
        return lint_tree(tmp_path, codes)
    return lint(source, codes=codes)


STATIC = sorted(code for code, rule in RULES.items() if rule.family != "dynamic")
DYNAMIC = sorted(code for code, rule in RULES.items() if rule.family == "dynamic")


@pytest.mark.parametrize("code", STATIC)
def test_example_triggers_exactly_its_rule(code: str, tmp_path: Path) -> None:
    findings = run_example(code, "## Example", tmp_path)
    assert findings and {f.code for f in findings} == {code}, \
        [(f.line, f.code, f.message) for f in findings]


@pytest.mark.parametrize("code", STATIC)
def test_fix_is_clean(code: str, tmp_path: Path) -> None:
    findings = run_example(code, "## Use instead", tmp_path)
    assert findings == [], [(f.line, f.code, f.message) for f in findings]


@pytest.fixture(scope="module")
def dynamic_examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Every dynamic page's two code blocks, checked in one `--dynamic` run:
    {file stem: the AGD codes reported in it}."""
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("dynamic_pages")
    for code in DYNAMIC:
        (folder / f"example_{code}.py").write_text(code_block(page(code), "## Example"))
        (folder / f"fixed_{code}.py").write_text(code_block(page(code), "## Use instead"))
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", str(folder),
                           "--isolated", "--no-cache", "--dynamic", "--select", "AGD,AGD015",
                           "--format", "json", "--jobs", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    reported: dict[str, set[str]] = {path.stem: set() for path in folder.glob("*.py")}
    for finding in json.loads(proc.stdout):
        reported[Path(finding["path"]).stem].add(finding["code"])
    return reported


@pytest.mark.parametrize("code", DYNAMIC)
def test_dynamic_example_triggers_exactly_its_rule(code: str, dynamic_examples) -> None:
    assert dynamic_examples[f"example_{code}"] == {code}


@pytest.mark.parametrize("code", DYNAMIC)
def test_dynamic_fix_is_clean(code: str, dynamic_examples) -> None:
    assert dynamic_examples[f"fixed_{code}"] == set()


def test_index_lists_every_rule() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\[(AG[FD]\d{3})\]\(rules/\1\.md\)", index))
    assert listed == set(RULES)


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_command_prints_the_page(capsys, code: str) -> None:
    assert main(["rule", code]) == 0
    assert capsys.readouterr().out == page(code)
