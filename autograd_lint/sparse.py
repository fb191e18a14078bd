"""Parse only the top-level statements of a file that can matter.

A big module may hold one small Function class among thousands of lines.
`parse_sparse` keeps the top-level statements a predicate selects (imports,
the Function classes, statements naming a Function) and blanks every other
line, so the result parses to an AST with the original line and column
numbers. Statement boundaries come from a cheap scan: a top-level statement
starts on a line whose first character is code (not blank, a comment or a
closing bracket), that is not inside a multi-line string, and that does not
continue the line before (an open bracket, a trailing comma or operator, a
leading operator or `and`/`or`/comprehension clause). Every doubt joins
statements, which costs only time. A wrong split leaves a piece with an
unmatched bracket or a dangling operator, so the sparse text fails to parse
and the caller parses the whole file.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Callable

# Skip code, comments and one-line strings up to the next triple-quoted string
# (all inside the regex engine), then take that string. Every alternative can
# always advance, so a stray quote in broken code cannot make it backtrack;
# possessive repeats (*+) keep no backtracking state, which would otherwise
# grow with every token skipped (gigabytes on a 50 MB file).
_SKIP_TO_TRIPLE = re.compile(
    r"(?:[^\"'#\\]++|\\.?|#[^\n]*+"
    r"|\"(?!\"\")(?:[^\"\\\n]++|\\.)*+\"?"
    r"|'(?!'')(?:[^'\\\n]++|\\.)*+'?)*+"
    r"(?P<triple>\"\"\"(?:[^\"\\]++|\\.?|\"(?!\"\"))*+(?:\"\"\"|\Z)"
    r"|'''(?:[^'\\]++|\\.?|'(?!''))*+(?:'''|\Z)|\Z)",
    re.S)
_COLUMN_ZERO = re.compile(r"^[^\s#)\]}]", re.M)
_WORD = re.compile(r"\w+")
_CONTINUATIONS = ("else", "elif", "except", "finally", "case")
# A statement never ends with these: the next line continues it.
_OPEN_ENDINGS = frozenset("([{,\\+-*/%&|^=<>@:.~")
# A line starting with these continues an expression (or is an odd `-x` /
# `*a, b = c` statement that may stay joined to the one before).
_OPERATOR_STARTS = frozenset(",.+-*/%&|^=<>!:")
# Words that continue an expression; `if`/`for` only when no block follows.
_EXPRESSION_WORDS = frozenset({"and", "or", "in", "is", "not", "if", "for"})

Chunk = tuple[int, int]  # [first line, last line + 1), 0-based


def top_level_chunks(text: str) -> list[Chunk]:
    """Line ranges of the top-level statements of a module."""
    spans = []
    position = 0
    while position < len(text):
        match = _SKIP_TO_TRIPLE.match(text, position)
        if match is None or match.end() == position:
            break
        start, end = match.span("triple")
        if text.find("\n", start, end) >= 0:
            spans.append((start, end))
        position = match.end()
    span_starts = [start for start, _ in spans]
    # (line number, offset) of each statement start, counting newlines as we go.
    starts: list[tuple[int, int]] = []
    line, counted_to = 0, 0
    for match in _COLUMN_ZERO.finditer(text):
        offset = match.start()
        index = bisect.bisect_right(span_starts, offset) - 1
        if index >= 0 and spans[index][0] < offset < spans[index][1]:
            continue  # inside a multi-line string
        if offset >= 2 and text[offset - 2] == "\\":
            continue  # the previous line ends with a backslash continuation
        if _continues_expression(text, offset):
            continue  # inside brackets or an expression: not a statement of its own
        line += text.count("\n", counted_to, offset)
        counted_to = offset
        starts.append((line, offset))
    total_lines = line + text.count("\n", counted_to) + 1
    chunks: list[Chunk] = []
    decorating = False  # the last chunk holds only decorators so far
    for index, (start, offset) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else total_lines
        head = text[offset: offset + 16]
        word = _WORD.match(head)
        continues = word is not None and word.group() in _CONTINUATIONS
        if chunks and (decorating or continues):
            chunks[-1] = (chunks[-1][0], end)  # the decorated def, or else/except/finally
        else:
            chunks.append((start, end))
        decorating = head.startswith("@") and (decorating or not continues)
    return chunks


def _continues_expression(text: str, offset: int) -> bool:
    """Whether the column-0 line at `offset` continues an expression begun
    before it (a bracket left open, a trailing operator, a comprehension)."""
    if text[offset] in _OPERATOR_STARTS:
        return True
    word = _WORD.match(text, offset)
    if word is not None and word.group() in _EXPRESSION_WORDS:
        if word.group() not in ("if", "for"):
            return True
        # A comprehension's `if`/`for` clause, unless the line opens a block.
        end = text.find("\n", offset)
        line = text[offset: end if end >= 0 else len(text)]
        return not line.split("#", 1)[0].rstrip().endswith(":") and \
            not line.rstrip().endswith(":")
    return _open_at_end_of_previous_line(text, offset)


def _open_at_end_of_previous_line(text: str, offset: int) -> bool:
    """Whether the last code line before `offset` ends with an opening bracket,
    a comma or an operator, so that the line at `offset` continues it. When a
    `#` may start a comment, the line counts as open if it is open with or
    without that tail: joining two statements by mistake costs only time,
    splitting one could drop code."""
    end = offset - 1  # the newline ending the previous line
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].rstrip()
        hash_at = line.find("#")
        before_hash = line[:hash_at].rstrip() if hash_at >= 0 else line
        if before_hash:
            return before_hash[-1] in _OPEN_ENDINGS or line[-1] in _OPEN_ENDINGS
        end = start - 1  # a blank or comment-only line: look further back
    return False


def parse_sparse(text: str, keep: Callable[[str], bool], filename: str, *,
                 max_fraction: float = 0.5, piecewise: bool = False):
    """An AST of the kept statements (original line numbers), or None.

    None when the kept part is most of the file, or when the sparse text does
    not parse (a boundary was wrong) and `piecewise` is off. With `piecewise`
    (files too big to parse whole), each kept statement is parsed on its own
    and the ones that do not parse are left out."""
    import ast

    if "\r" in text:  # the parser ends lines at "\r" too
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Lines end at "\n" only, as for the parser (str.splitlines would also
    # break at form feeds and other separators the parser treats as spaces).
    lines = text.split("\n")
    chunks = top_level_chunks(text)
    kept = [c for c in chunks if keep("\n".join(lines[c[0]:c[1]]))]
    if sum(end - start for start, end in kept) > max_fraction * max(len(lines), 1):
        return None
    out = [""] * len(lines)
    for start, end in kept:
        out[start:end] = lines[start:end]
    try:
        return ast.parse("\n".join(out), filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        if not piecewise:
            return None
    body = []
    for start, end in kept:
        try:
            piece = ast.parse("\n".join(lines[start:end]), filename=filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        ast.increment_lineno(piece, start)
        body.extend(piece.body)
    return ast.Module(body=body, type_ignores=[])
