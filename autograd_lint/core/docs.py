"""Rule documentation pages (`autograd-lint rule CODE`)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry links rules to these pages: only its type here
    from .registry import Rule

_PACKAGE = Path(__file__).resolve().parent.parent  # autograd_lint/


def _page_locations(code: str) -> list[Path]:
    return [
        _PACKAGE / "rule_docs" / f"{code}.md",  # an installed wheel
        _PACKAGE.parent / "docs" / "rules" / f"{code}.md",  # a source checkout
    ]


def read_page(code: str) -> str | None:
    """The Markdown page docs/rules/CODE.md, wherever this install keeps it."""
    for location in _page_locations(code):
        try:
            return location.read_text(encoding="utf-8")
        except OSError:
            continue
    return None


def page_uri(code: str) -> str:
    """`file:` URI of the page docs/rules/CODE.md of this install."""
    locations = _page_locations(code)
    found = next((location for location in locations if location.is_file()), locations[0])
    return found.as_uri()


def rule_page(rule: Rule) -> str:
    page = read_page(rule.code)
    if page is not None:
        return page if page.endswith("\n") else page + "\n"
    default = "on" if rule.default else f"off (enable with --extend-select {rule.code})"
    return (f"# {rule.code} {rule.name}\n\nSeverity: {rule.severity}; tier: {rule.tier}; "
            f"default: {default}.\n\n"
            f"{rule.summary}\n")
