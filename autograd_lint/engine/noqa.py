"""`# noqa` suppressions, ruff-style.

`# noqa` on the reported line silences every finding there; `# noqa: AGF001,
AGF006` only those codes. A comment `# autograd-lint: noqa` on a line of its own
silences the whole file (`# autograd-lint: noqa: AGF008` only that code).
AGF901 (opt-in) reports the codes of such comments that silence nothing; the
comments `--add-noqa` writes are noqa_writer's.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from ..core.findings import Finding
from ..core.lines import LINE_BREAK

_LINE = re.compile(r"#\s*noqa(?![\w-])(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?",
                   re.IGNORECASE)
_FILE = re.compile(r"#\s*autograd-lint\s*:\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+"
                   r"(?:[\s,]+[A-Za-z]+\d+)*))?", re.IGNORECASE)
_SPLIT = re.compile(r"[\s,]+")
_CODE = re.compile(r"[A-Za-z]+\d+")
# Cheap over-approximation of a file-level directive, to skip tokenizing.
_FILE_HINT = re.compile(r"autograd-lint\s*:\s*noqa", re.IGNORECASE)

ALL = None  # a suppression without codes


@dataclass(frozen=True)
class NoqaComment:
    """A `# noqa: CODES` comment (or a file-level one) naming codes: where
    its directive is (the `ast` convention: 0-based UTF-8 byte columns) and
    its codes as written."""

    line: int
    column: int
    end_column: int
    codes: tuple[str, ...]
    file_level: bool


@dataclass
class Suppressions:
    lines: dict[int, frozenset[str] | None] = field(default_factory=dict)
    file_codes: frozenset[str] | None = frozenset()  # None: the whole file
    comments: list[NoqaComment] = field(default_factory=list)

    def suppressed(self, finding: Finding) -> bool:
        if self.file_codes is None or _names(self.file_codes, finding.code):
            return True
        if finding.line not in self.lines:
            return False
        codes = self.lines[finding.line]
        return codes is None or _names(codes, finding.code)


def _names(codes: frozenset[str], code: str) -> bool:
    """Whether a directive's codes name this code, or the code it split off
    from (ruff's redirects: `# noqa: AGF001` still silences AGF009)."""
    from ..core.registry import split_parents

    return code in codes or not codes.isdisjoint(split_parents(code))


def _with_parents(codes: set[str]) -> set[str]:
    """Codes reported, and the codes they split off from."""
    from ..core.registry import split_parents

    return codes.union(*(split_parents(code) for code in codes))


def _written(text: str | None) -> tuple[str, ...]:
    """The codes a directive names, in the order written (none: all codes)."""
    return tuple(c.upper() for c in _SPLIT.split(text.strip()) if c) if text else ()


def _comments(source: str) -> list[tuple[int, str, bool, int]]:
    """(line, comment text, comment is alone on its line, UTF-8 byte column
    where it starts) for every comment."""
    found: list[tuple[int, str, bool, int]] = []
    try:
        # Universal newlines: a lone "\r" ends a line for the parser, so it must
        # here too, or every comment after one is read on the wrong line.
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            if token.type == tokenize.COMMENT:
                before = token.line[: token.start[1]]
                found.append((token.start[0], token.string, not before.strip(),
                              len(before.encode())))
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        # Unterminated constructs: fall back to a plain scan of the lines.
        for number, line in enumerate(LINE_BREAK.split(source), 1):  # as the parser counts
            index = line.find("#")
            if index >= 0:
                found.append((number, line[index:], not line[:index].strip(),
                              len(line[:index].encode())))
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
    for line, comment, alone, column in _comments(source):
        file_level = alone and (match := _FILE.search(comment)) is not None
        if not file_level and (match := _LINE.search(comment)) is None:
            continue
        assert match is not None
        written = _written(match.group("codes"))
        codes = frozenset(written) if written else ALL
        if written:
            result.comments.append(NoqaComment(
                line, column + len(comment[:match.start()].encode()),
                column + len(comment[:match.end()].encode()), written, file_level))
        if not file_level:
            result.lines[line] = codes
        elif codes is None:
            result.file_codes = None
            return result
        else:
            file_codes.update(codes)
    result.file_codes = frozenset(file_codes)
    return result


def filter_findings(findings: list[Finding], source: str | None) -> list[Finding]:
    if not findings or source is None or not _may_suppress(findings, source):
        return findings
    suppressions = parse_suppressions(source)
    return [f for f in findings if not suppressions.suppressed(f)]


def apply_noqa(findings: list[Finding], source: str | None, path: str,
               codes: frozenset[str]) -> list[Finding]:
    """The findings no `# noqa` silences, and with AGF901 among `codes` (the
    file's selection) the unused codes of its noqa comments."""
    if UNUSED_NOQA not in codes or source is None or "noqa" not in source.lower():
        return filter_findings(findings, source)
    suppressions = parse_suppressions(source)
    kept = [f for f in findings if not suppressions.suppressed(f)]
    unused = unused_noqa(findings, suppressions, source, path, codes)
    return kept + [f for f in unused if not suppressions.suppressed(f)]


UNUSED_NOQA = "AGF901"


def unused_noqa(findings: list[Finding], suppressions: Suppressions, source: str,
                path: str, codes: frozenset[str]) -> list[Finding]:
    """AGF901 for each noqa comment naming codes that silence no finding:
    only selected static rules' codes are judged (not other tools' codes,
    not AGD codes, whose checks a run may not reach, not the tree-level
    rules', whose findings depend on what else the run scans, not AGF901)."""
    from ..core.registry import RULES, TREE_ONLY_CODES

    reported: dict[int, set[str]] = {}
    for finding in findings:
        reported.setdefault(finding.line, set()).add(finding.code)
    in_file = {f.code for f in findings}
    unused_found = []
    for comment in suppressions.comments:
        used = _with_parents(in_file if comment.file_level else reported.get(comment.line, set()))
        unused = [c for c in comment.codes if c in RULES and c in codes and c.startswith("AGF")
                  and c not in used and c != UNUSED_NOQA and c not in TREE_ONLY_CODES]
        if unused:
            unused_found.append(_unused_finding(comment, unused, source, path))
    return unused_found


def _unused_finding(comment: NoqaComment, unused: list[str], source: str,
                    path: str) -> Finding:
    from ..core.findings import SAFE, Edit, Fix
    from ..core.registry import RULES

    rule = RULES[UNUSED_NOQA]
    line_text = LINE_BREAK.split(source)[comment.line - 1].encode()
    kept = [c for c in comment.codes if c not in unused]
    if kept:  # the other codes stay: `noqa: E501, AGF001` becomes `noqa: E501`
        directive = line_text[comment.column:comment.end_column].decode()
        head = directive[:directive.index(":", directive.lower().index("noqa")) + 1]
        edit = Edit(comment.line, comment.column, comment.line, comment.end_column,
                    f"{head} {', '.join(kept)}")
    else:  # the directive goes, and the blanks before it
        start = len(line_text[:comment.column].rstrip())
        edit = Edit(comment.line, start, comment.line, comment.end_column, "")
    return Finding(
        path=path, line=comment.line, column=comment.column, end_line=comment.line,
        end_column=comment.end_column, code=UNUSED_NOQA, name=rule.name,
        severity=rule.severity, message=rule.format(
            codes=", ".join(unused), s="s" if len(unused) > 1 else "",
            it="them" if len(unused) > 1 else "it",
            where="in this file" if comment.file_level else "on this line"),
        fix=Fix(f"Remove the unused code{'s' if len(unused) > 1 else ''}", SAFE, (edit,)))


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
