"""The finding model shared by every output and integration."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, order=False)
class Finding:
    """One reported problem.

    ``line`` is 1-based and ``column`` 0-based (the ``ast`` convention, like
    flake8 and ruff internally); ``end_line``/``end_column`` follow the same
    convention and may be ``None`` when unknown.
    """

    path: str
    line: int
    column: int
    code: str
    name: str
    severity: str
    message: str
    function: str | None = None
    end_line: int | None = None
    end_column: int | None = None
    confirmed: bool | None = None
    # Extra facts for fixes and adapters; not part of the JSON contract.
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)

    def to_json(self, *, dynamic: bool = False) -> dict[str, Any]:
        data = asdict(self)
        data.pop("extra")
        if not dynamic:
            data.pop("confirmed")
        # Stable key order: the documented keys first.
        order = ["path", "line", "column", "end_line", "end_column", "code", "name",
                 "severity", "message", "function", "confirmed"]
        return {key: data[key] for key in order if key in data}


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Sort by path, line, column, code, and drop exact duplicates."""
    seen: set[tuple[str, int, int, str, str]] = set()
    unique: list[Finding] = []
    for finding in sorted(findings, key=lambda f: f.sort_key):
        key = (finding.path, finding.line, finding.column, finding.code, finding.message)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique
