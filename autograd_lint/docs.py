"""Rule documentation pages (`autograd-lint rule CODE`)."""
from __future__ import annotations

from .registry import Rule


def read_page(code: str) -> str | None:
    """The Markdown page docs/rules/CODE.md as installed with the package."""
    from importlib import resources

    try:
        page = resources.files("autograd_lint.rule_docs").joinpath(f"{code}.md")
        return page.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, OSError):
        return None


def rule_page(rule: Rule) -> str:
    page = read_page(rule.code)
    if page is not None:
        return page if page.endswith("\n") else page + "\n"
    default = "on" if rule.default else "off (enable with --extend-select)"
    return (f"# {rule.code} {rule.name}\n\nSeverity: {rule.severity}; default: {default}.\n\n"
            f"{rule.summary}\n")
