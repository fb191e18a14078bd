"""`# noqa` suppressions, ruff-style.

`# noqa` on the reported line silences every finding there; `# noqa: AGF001,
AGF006` only those codes. A comment `# autograd-lint: noqa` on a line of its own
silences the whole file (`# autograd-lint: noqa: AGF008` only that code).
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from .findings import Finding
from .lines import LINE_BREAK

_LINE = re.compile(r"#\s*noqa(?![\w-])(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?",
                   re.IGNORECASE)
_FILE = re.compile(r"#\s*autograd-lint\s*:\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+"
                   r"(?:[\s,]+[A-Za-z]+\d+)*))?", re.IGNORECASE)
_SPLIT = re.compile(r"[\s,]+")
_CODE = re.compile(r"[A-Za-z]+\d+")
# Cheap over-approximation of a file-level directive, to skip tokenizing.
_FILE_HINT = re.compile(r"autograd-lint\s*:\s*noqa", re.IGNORECASE)

ALL = None  # a suppression without codes


@dataclass
class Suppressions:
    lines: dict[int, frozenset[str] | None] = field(default_factory=dict)
    file_codes: frozenset[str] | None = frozenset()  # None: the whole file

    def suppressed(self, finding: Finding) -> bool:
        if self.file_codes is None or finding.code in self.file_codes:
            return True
        if finding.line not in self.lines:
            return False
        codes = self.lines[finding.line]
        return codes is None or finding.code in codes


def _codes(text: str | None) -> frozenset[str] | None:
    if not text:
        return None
    return frozenset(c.upper() for c in _SPLIT.split(text.strip()) if c)


def _comments(source: str) -> list[tuple[int, str, bool]]:
    """(line, comment text, comment is alone on its line) for every comment."""
    found: list[tuple[int, str, bool]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                alone = not token.line[: token.start[1]].strip()
                found.append((token.start[0], token.string, alone))
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        # Unterminated constructs: fall back to a plain scan of the lines.
        for number, line in enumerate(LINE_BREAK.split(source), 1):  # as the parser counts
            index = line.find("#")
            if index >= 0:
                found.append((number, line[index:], not line[:index].strip()))
    return found


def named_codes(line: str) -> list[tuple[int, int, str]]:
    """The codes a `# noqa: ...` or `# autograd-lint: noqa: ...` comment on
    this line names: (start, end, CODE), the columns counting characters."""
    named = []
    for pattern in (_FILE, _LINE):
        for match in pattern.finditer(line):
            if match.group("codes"):
                start = match.start("codes")
                named += [(start + code.start(), start + code.end(), code.group().upper())
                          for code in _CODE.finditer(match.group("codes"))]
    return named


def parse_suppressions(source: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in source and "NOQA" not in source.upper():
        return result
    file_codes: set[str] = set()
    for line, comment, alone in _comments(source):
        if alone and (match := _FILE.search(comment)):
            codes = _codes(match.group("codes"))
            if codes is None:
                result.file_codes = None
                return result
            file_codes.update(codes)
            continue
        if match := _LINE.search(comment):
            result.lines[line] = _codes(match.group("codes"))
    result.file_codes = frozenset(file_codes)
    return result


def filter_findings(findings: list[Finding], source: str | None) -> list[Finding]:
    if not findings or source is None or not _may_suppress(findings, source):
        return findings
    suppressions = parse_suppressions(source)
    return [f for f in findings if not suppressions.suppressed(f)]


def _may_suppress(findings: list[Finding], source: str) -> bool:
    """Whether a suppression could apply, without tokenizing the file: a
    finding's line mentions noqa, or the file may hold a file-level directive.
    (Lines split on "\\n" only: with other line ends the numbers do not
    match, and the answer is yes.)"""
    if "noqa" not in source and "NOQA" not in source.upper():
        return False
    if _FILE_HINT.search(source):
        return True
    lines = source.split("\n")
    return any(not 0 < f.line <= len(lines) or "noqa" in lines[f.line - 1].lower()
               or "\r" in lines[f.line - 1].rstrip("\r") for f in findings)
