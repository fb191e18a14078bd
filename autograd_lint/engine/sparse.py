"""Parse only the top-level statements of a file that can matter.

A big module may hold one small Function class among thousands of lines.
`parse_sparse` keeps the top-level statements a predicate selects (imports,
the Function classes, statements naming a Function) and blanks every other
line, so the result parses to an AST with the original line and column
numbers. Statement boundaries come from a cheap scan: a top-level statement
starts on a line whose first character is code (not blank, a comment, a
closing bracket or a lone backslash), that is not inside a multi-line
string, and that does not continue the line before (an open bracket, a
trailing comma or operator, a leading operator or `and`/`or`/comprehension
clause). Every doubt joins statements, which costs only time. A wrong split
leaves a piece with an unmatched bracket or a dangling operator, so the
sparse text fails to parse and the caller parses the whole file.

A large kept class that is not kept for its own header (a test class with a
Function defined in one of its methods, a code generator that names a
Function once) is split the same way one level down: its header and the
members the predicate selects are kept, the other members blanked. A class
header always opens a body the same indentation deep, so a member starts on
a line at exactly that indentation, with the same rules as above.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from itertools import accumulate

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
# A statement starts with code: not a blank line, a comment, a closing
# bracket, nor a lone backslash (it joins the next line, indentation and
# all: after `\` at column 0, an indented `def` goes on the class above).
_STATEMENT_START = r"[^\s#)\]}\\]"
# A form feed sets the parser's column back to 0: only what follows the
# last one on a line is indentation.
_FORM_FEED_INDENT = r"(?:[ \t\f]*\f)?"
_COLUMN_ZERO = re.compile("^" + _FORM_FEED_INDENT + _STATEMENT_START, re.M)
_INDENT = re.compile(r"[ \t]*")
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


def top_level_chunks(text: str, indent: str = "") -> list[Chunk]:
    """Line ranges of the top-level statements of a module, or with `indent`,
    of the statements that start exactly that deep (a class body's members;
    what comes before the first of them is not a chunk)."""
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
    starts_at = _COLUMN_ZERO if not indent else \
        re.compile("^" + _FORM_FEED_INDENT + re.escape(indent) + _STATEMENT_START, re.M)
    for match in starts_at.finditer(text):
        line_start = match.start()
        offset = match.end() - 1  # the statement's first character
        index = bisect.bisect_right(span_starts, offset) - 1
        if index >= 0 and spans[index][0] < offset < spans[index][1]:
            continue  # inside a multi-line string
        if line_start >= 2 and text[line_start - 2] == "\\":
            continue  # the previous line ends with a backslash continuation
        if _continues_expression(text, line_start, offset):
            continue  # inside brackets or an expression: not a statement of its own
        line += text.count("\n", counted_to, line_start)
        counted_to = line_start
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


def _continues_expression(text: str, line_start: int, offset: int) -> bool:
    """Whether the line whose code starts at `offset` continues an expression
    begun before it (a bracket left open, a trailing operator, a comprehension)."""
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
    return _open_at_end_of_previous_line(text, line_start)


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

    lines = _lines(text)
    text = "\n".join(lines)
    kept = [c for c in top_level_chunks(text) if keep(_text(lines, c))]
    split = [piece for chunk in kept for piece in _kept_members(lines, chunk, keep)]
    limit = max_fraction * max(len(lines), 1)
    # Split classes first; if a member boundary was wrong, whole classes.
    for attempt in (split, kept) if split != kept else (kept,):
        if sum(end - start for start, end in attempt) > limit:
            continue
        out = [""] * len(lines)
        for start, end in attempt:
            out[start:end] = lines[start:end]
        try:
            return ast.parse("\n".join(out), filename=filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    if not piecewise:
        return None
    body = []
    for start, end in kept:
        try:
            piece = ast.parse(_text(lines, (start, end)), filename=filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        ast.increment_lineno(piece, start)
        body.extend(piece.body)
    return ast.Module(body=body, type_ignores=[])


def _lines(text: str) -> list[str]:
    """The lines of a text as the parser ends them: at "\\n", "\\r\\n" and
    "\\r" (str.splitlines would also break at form feeds and other
    separators the parser treats as spaces)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _text(lines: list[str], chunk: Chunk) -> str:
    return "\n".join(lines[chunk[0]:chunk[1]])


# Pieces of about this many characters are parsed at a time (a statement
# longer than that is one piece): a parse takes some 200 bytes of memory
# per character of source.
_CHECK_PIECE_CHARS = 1 << 18
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def syntax_error(text: str, filename: str) -> Exception | None:
    """The error a whole parse of `text` raises (None if it parses), found
    piece by piece, pieces of top-level statements: a file too large to
    parse whole costs the memory its largest piece takes.

    The pieces before a piece parse, so it starts a statement. If it does
    not parse though its tokens end within it (no bracket, string or
    backslash continuation left open), the file does not parse: the text
    from there is parsed once more, to the error (a parse that fails builds
    no tree), for the error a whole parse gives (the parser then reads on
    for an error of the tokenizer, which it reports instead). If its tokens
    run on, a split was wrong: the piece is joined with the next ones."""
    lines = _lines(text)
    bounds = [0, *(start for start, _ in top_level_chunks("\n".join(lines))[1:]), len(lines)]
    offsets = list(accumulate((len(line) + 1 for line in lines), initial=0))
    bound_offsets = [offsets[b] for b in bounds]
    first = 0
    while first < len(bounds) - 1:
        budget, last = _CHECK_PIECE_CHARS, first
        while True:
            reach = bisect.bisect_right(bound_offsets, bound_offsets[first] + budget) - 1
            last = min(max(reach, last + 1), len(bounds) - 1)
            start, end = bounds[first], bounds[last]
            if _parses("\n".join(lines[start:end]), filename):
                break
            if end == len(lines) or not _runs_on("\n".join(lines[start:end])):
                return _parse_error("\n" * start + "\n".join(lines[start:]), filename)
            budget *= 2
        first = last
    return None


def _parses(piece: str, filename: str) -> bool:
    import warnings

    with warnings.catch_warnings():  # invalid escapes and the like: not ours to print
        warnings.simplefilter("ignore")
        try:
            # Bytecode: faster than a tree of Python objects. The compiler
            # rejects more than the parser does (`return` outside a def).
            compile(piece, filename, "exec", dont_inherit=True)
            return True
        except _PARSE_ERRORS:
            pass
    return _parse_error(piece, filename) is None


def _parse_error(text: str, filename: str) -> Exception | None:
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text, filename=filename)
        except _PARSE_ERRORS as exc:
            return exc
    return None


def _runs_on(piece: str) -> bool:
    """Whether the tokens of a piece run on past its end: a bracket, a
    string or a backslash continuation left open."""
    import io
    import tokenize

    try:
        for _ in tokenize.generate_tokens(io.StringIO(piece).readline):
            pass
    except tokenize.TokenError:  # EOF in a multi-line statement or string
        return True
    except SyntaxError:  # an indentation error: the piece's own
        return False
    return False


# Classes shorter than this are kept whole: splitting them saves little.
SPLIT_CLASS_LINES = 60
_CLASS = re.compile(r"[ \t]*class[ \t]")
_DECORATOR_OR_CLASS = re.compile(r"[ \t]*(?:@|class[ \t])")


def _kept_members(lines: list[str], chunk: Chunk, keep: Callable[[str], bool]) -> list[Chunk]:
    """The parts of a kept chunk to parse: all of it, or, for a long class
    not kept for its own header, the header and the members `keep` selects
    (themselves split when they are long classes)."""
    start, end = chunk
    if end - start < SPLIT_CLASS_LINES or not _DECORATOR_OR_CLASS.match(lines[start]):
        return [chunk]
    indent = _INDENT.match(lines[start]).group()  # type: ignore[union-attr]
    class_line = next((i for i in range(start, end) if _CLASS.match(lines[i]) and
                       _INDENT.match(lines[i]).group() == indent), None)  # type: ignore[union-attr]
    body_start = _header_end(lines, class_line, end) if class_line is not None else None
    if body_start is None or keep(_text(lines, (start, body_start))):
        return [chunk]
    first_code = next((i for i in range(body_start, end)
                       if lines[i].strip() and not lines[i].lstrip().startswith("#")), None)
    if first_code is None:
        return [chunk]
    body_indent = _INDENT.match(lines[first_code]).group()  # type: ignore[union-attr]
    if len(body_indent) <= len(indent) or not body_indent.startswith(indent):
        return [chunk]
    members = top_level_chunks(_text(lines, (body_start, end)), body_indent)
    if not members or members[0][0] + body_start != first_code:
        return [chunk]  # the body does not start with a member: do not guess
    kept = [piece for first, last in members
            if keep(_text(lines, (first + body_start, last + body_start)))
            for piece in _kept_members(lines, (first + body_start, last + body_start), keep)]
    return [(start, body_start), *kept] if kept else [chunk]


def _header_end(lines: list[str], class_line: int, end: int) -> int | None:
    """The line after a class header (`class A(\n    B,\n):` spans three),
    None for a one-line class or a header this cannot read."""
    depth = 0
    for index in range(class_line, min(end, class_line + 50)):
        code = lines[index].split("#", 1)[0].rstrip()
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if depth == 0:
            return index + 1 if code.endswith(":") else None
    return None
