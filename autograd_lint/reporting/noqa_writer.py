"""`--add-noqa`: a `# noqa: CODE` comment on the line of each finding, so a
codebase can adopt the linter and fix its findings one by one (ruff's
`--add-noqa`). Codes join a noqa comment the line already has; a bare
`# noqa` already silences everything; a second run adds nothing.
"""
from __future__ import annotations

import io
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field

from ..core.findings import Finding
from ..engine.noqa import UNUSED_NOQA, parse_suppressions


@dataclass
class NoqaEdits:
    """What `--add-noqa` did to one file's text."""

    text: str
    added: int = 0  # findings given a code on their line
    skipped: list[Finding] = field(default_factory=list)  # lines no comment can end


def add_noqa_codes(text: str, findings: list[Finding]) -> NoqaEdits:
    """`text` with the findings' codes in a noqa comment on their lines. A
    line that ends inside a string, or continues with a backslash, cannot
    take a comment: its findings are skipped (AGF000 too: a file that does
    not parse is not silenced line by line)."""
    result = NoqaEdits(text)
    wanted: dict[int, list[Finding]] = defaultdict(list)
    commentable = _commentable_lines(text)
    for finding in findings:
        if finding.code == UNUSED_NOQA:
            continue  # its fix removes the code; a noqa for it would keep the stale one
        if finding.code == "AGF000" or finding.line not in commentable:
            result.skipped.append(finding)
        else:
            wanted[finding.line].append(finding)
    if not wanted:
        return result
    suppressions = parse_suppressions(text)
    coded = {c.line: c for c in suppressions.comments if not c.file_level}
    lines = io.StringIO(text, newline="").readlines()  # as the tokenizer counts lines
    for number, found in wanted.items():
        codes = {f.code for f in found}
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if number in suppressions.lines and suppressions.lines[number] is None:
            continue  # a bare noqa comment silences the line already
        comment = coded.get(number)
        if comment is not None:
            new = sorted(codes - set(comment.codes))
            raw = body.encode()
            body = (raw[:comment.end_column] + "".join(f", {c}" for c in new).encode() +
                    raw[comment.end_column:]).decode()
        else:
            new = sorted(codes)
            body = f"{body}  # noqa: {', '.join(new)}"
        lines[number - 1] = body + ending
        result.added += sum(f.code in new for f in found)
    result.text = "".join(lines)
    return result


def _commentable_lines(text: str) -> set[int]:
    """The lines a comment can end: those the tokenizer ends with a newline
    or a comment (not a line inside a string, or one continued by `\\`)."""
    found: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                found.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass  # the lines before the error stand
    return found
