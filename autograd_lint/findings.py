"""The finding model shared by every output and integration."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, column) to (end_line, end_column) with `text`.

    Positions use the ``ast`` convention of findings (1-based lines, 0-based
    UTF-8 byte columns). `text` is literal: the rules' reporter gives every
    line an edit adds the indentation of the line the edit starts on (and the
    file's newline), so an inserted statement lines up with the code around it.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    text: str

    @classmethod
    def insert(cls, line: int, column: int, text: str) -> Edit:
        return cls(line, column, line, column, text)

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "text": self.text}


@dataclass(frozen=True)
class Fix:
    """A rule's automatic fix for one finding: `safe` fixes keep behaviour and
    run with `--fix`; `unsafe` ones may change it and need `--unsafe-fixes`."""

    title: str
    applicability: str  # SAFE or UNSAFE
    edits: tuple[Edit, ...]

    @property
    def safe(self) -> bool:
        return self.applicability == SAFE

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "applicability": self.applicability,
                "edits": [edit.to_json() for edit in self.edits]}

    @classmethod
    def from_json(cls, data: Any) -> Fix:
        try:
            if data["applicability"] not in (SAFE, UNSAFE):
                raise ValueError
            edits = tuple(Edit(int(e["line"]), int(e["column"]), int(e["end_line"]),
                               int(e["end_column"]), str(e["text"])) for e in data["edits"])
            return cls(str(data["title"]), data["applicability"], edits)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError("malformed fix") from exc


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
    fix: Fix | None = field(default=None, compare=False, hash=False)

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)

    def to_json(self, *, dynamic: bool = False) -> dict[str, Any]:
        data = {key: getattr(self, key) for key in _JSON_KEYS}
        if dynamic:
            data["confirmed"] = self.confirmed
        data["fix"] = self.fix.to_json() if self.fix is not None else None
        return data


# Stable key order: the documented keys first.
_JSON_KEYS = ("path", "line", "column", "end_line", "end_column", "code", "name",
              "severity", "message", "function")


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
