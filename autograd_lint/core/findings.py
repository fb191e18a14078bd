"""The finding model shared by every output and integration."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
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


# ---------------------------------------------------------------------------
# Text from the linted code, as every output shows it
# ---------------------------------------------------------------------------
# What must not reach a terminal, a CI log or a report raw: control
# characters (a newline forges a line, which in a GitHub job is a workflow
# command; ESC, OSC and BEL drive the terminal; XML forbids most of them),
# the invisible characters that reorder a line (Trojan Source), and the
# bytes of a file name that are not UTF-8 (os's surrogate escapes, which no
# stream can encode).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                     "\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    point = ord(char)
    if 0xDC80 <= point <= 0xDCFF:  # a byte of a name that is not UTF-8
        return f"\\x{point - 0xDC00:02x}"
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def shown_text(text: str) -> str:
    """A text from the linted code (a file name, an op's name, a message
    quoting either) as outputs show it: what is unsafe to print written as
    a Python escape (`\\n`, `\\x1b`, `\\xff` for a byte that is not UTF-8)."""
    if text.isprintable():  # almost always: nothing to do
        return text
    return _UNSAFE.sub(_escaped, text)


def _picture(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point < 0x20:
        return chr(0x2400 + point)  # Unicode's control pictures: one column each
    return "\u2421" if point == 0x7F else "\ufffd"


def shown_source_line(text: str) -> str:
    """A source line as the full output quotes it: each unsafe character
    one visible symbol wide (as ruff shows them), so carets stay aligned."""
    return text if text.isprintable() else _UNSAFE.sub(_picture, text)


def shown_finding(finding: Finding) -> Finding:
    """A finding with every text from the linted code as shown_text writes it."""
    texts = (finding.path, finding.message, finding.function or "",
             finding.fix.title if finding.fix is not None else "")
    if all(text.isprintable() for text in texts):
        return finding
    fix = finding.fix
    if fix is not None:
        fix = replace(fix, title=shown_text(fix.title))
    return replace(finding, path=shown_text(finding.path), message=shown_text(finding.message),
                   function=shown_text(finding.function) if finding.function else
                   finding.function, fix=fix)
