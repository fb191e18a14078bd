"""Jupyter notebooks: their code cells as one Python module, and back.

A notebook (`.ipynb`: nbformat 4, JSON) is checked as ruff checks one: its
code cells, in order, joined into one module, the notebook's *Python view*
(`Notebook.python`); a finding there is shown at its cell and at the line
within that cell (`CellMap`). IPython's own syntax is not Python: line
magics (`%matplotlib inline`), shell escapes (`!pip install x`, `files =
!ls`), help (`obj?`, `??obj`) and the other escapes become blank lines
(`pass` where they are indented, so that a block keeps its body), and a cell
under a cell magic whose body is not Python (`%%bash`) is blank throughout.
Each line of the view is therefore the same line of its cell. A notebook
whose kernel is not Python has an empty view.

Fixes are applied to the cells' own text and written back into the same
JSON document (`Notebook.with_edits`), in the file's own layout.

Only the standard library reads notebooks (no nbformat, no Jupyter), and
nothing here imports the rest of the package: the outputs, the scan and the
engine all ask it.
"""
from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .findings import Finding

NOTEBOOK_SUFFIX = ".ipynb"

# Cell magics whose body is Python (ruff's list): only the `%%` line is blank.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3",
                                "time", "timeit"})

# A line as `ast` counts lines, with its line break.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# IPython escapes where a statement starts: `%magic`, `!shell`, `?help`, and
# the autocall forms `/f x`, `,f a b`, `;f a b`; never valid Python there.
_ESCAPE = re.compile(r"[ \t\f]*[%!?/,;]")
# `obj?`, `obj??`, `np.*load*?` (help and wildcard search).
_HELP = re.compile(r"[ \t\f]*[\w.*]+\?\??[ \t\f]*(?:\r\n|\r|\n)?\Z")
# `files = !ls`, `t = %timeit -o f()`: the value of an escape, assigned.
_ASSIGNED = re.compile(r"[ \t\f]*[A-Za-z_][\w.]*(?:[ \t\f]*,[ \t\f]*[A-Za-z_][\w.]*)*"
                       r"[ \t\f]*=[ \t\f]*[!%]")
# A rule's message naming another line of the file: `(line 9)`.
_LINE_REFERENCE = re.compile(r"\(line (\d+)\)")
# A coding declaration on the view's first two lines would make the parser
# decode the (UTF-8) view in another encoding.
_CODING = re.compile(r"[ \t\f]*#.*?coding[:=]")


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


class NotebookError(ValueError):
    """The file is not a notebook this linter reads (not JSON, not nbformat 4)."""


# ---------------------------------------------------------------------------
# A cell's Python
# ---------------------------------------------------------------------------
def split_lines(text: str) -> list[str]:
    """The lines of `text` with their line breaks, as the parser counts them."""
    return _LINE.findall(text)


@dataclass
class _Continuation:
    """Whether the next line continues a statement (open brackets, an open
    triple-quoted string, a backslash): an escape counts only where a
    statement starts, as in IPython (`(a\\n%b)` is Python's modulo)."""

    depth: int = 0
    string: str | None = None  # the open triple quote
    backslash: bool = False

    @property
    def inside(self) -> bool:
        return self.depth > 0 or self.string is not None or self.backslash

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        i, comment = 0, False
        while i < len(text):
            if self.string is not None:
                i = _string_end(text, i, self.string)
                if i < 0:
                    break
                self.string = None
                continue
            char = text[i]
            if char == "#":
                comment = True
                break
            if char in "\"'":
                quote = text[i:i + 3] if text[i:i + 3] == char * 3 else char
                end = _string_end(text, i + len(quote), quote)
                if end < 0:
                    if len(quote) == 3:
                        self.string = quote
                    break  # an unclosed one-line string ends with its line
                i = end
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            i += 1
        self.backslash = not comment and self.string is None and text.endswith("\\")


def _string_end(text: str, start: int, quote: str) -> int:
    """The index after the quote closing a string from `start`; -1 if not on this line."""
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text.startswith(quote, i):
            return i + len(quote)
        else:
            i += 1
    return -1


def _is_escape(line: str) -> bool:
    return bool(_ESCAPE.match(line) or _HELP.match(line) or _ASSIGNED.match(line))


def _blank(line: str) -> str:
    """An escape's line in the view: empty, or `pass` at its indentation."""
    body = line.rstrip("\r\n")
    indentation = body[:len(body) - len(body.lstrip(" \t\f"))]
    return (indentation + "pass" if indentation else "") + line[len(body):]


def _empty(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def cell_python(source: str) -> list[str]:
    """A code cell's lines as Python: IPython's escapes blank (see the module
    docstring), every other line as it is."""
    lines = split_lines(source)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return lines
    python = list(lines)
    if lines[first].lstrip().startswith("%%"):
        words = lines[first].lstrip()[2:].split()
        if not words or words[0] not in PYTHON_CELL_MAGICS:
            return [_empty(line) for line in lines]  # %%bash, %%html, %%writefile...
        python[first] = _empty(lines[first])
        first += 1
    state = _Continuation()
    escaped = False  # the line before was an escape continued by a backslash
    for i in range(first, len(lines)):
        line = lines[i]
        if escaped or (not state.inside and _is_escape(line)):
            python[i] = _empty(line) if escaped else _blank(line)
            escaped = line.rstrip("\r\n").endswith("\\")
            continue
        state.feed(line)
    return python


# ---------------------------------------------------------------------------
# The notebook
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CodeCell:
    """A code cell: where it is among all the cells, its text and its Python."""

    index: int  # among all cells, from 0 (shown from 1, as ruff and editors number them)
    source: str
    python: tuple[str, ...]  # its lines, escapes blank

    @property
    def number(self) -> int:
        return self.index + 1


@dataclass(frozen=True)
class CellMap:
    """Where each line of a Python view lies: its cell (numbered from 1 among
    all cells) and its line in that cell."""

    first_lines: tuple[int, ...] = ()  # per code cell with lines: its first line in the view
    numbers: tuple[int, ...] = ()  # the cell's number

    def position(self, line: int) -> tuple[int, int] | None:
        """(cell, line in the cell) of a line of the view; a line past the
        end is counted from the last cell; None for a view without lines."""
        if not self.first_lines:
            return None
        k = max(bisect.bisect_right(self.first_lines, line) - 1, 0)
        return self.numbers[k], max(line - self.first_lines[k] + 1, 1)


@dataclass(frozen=True)
class Notebook:
    """A notebook read from its bytes: the JSON document and its code cells
    (none when its kernel's language is not Python)."""

    document: dict[str, Any]
    cells: tuple[CodeCell, ...]
    raw: str = field(repr=False)  # the file's text, for its layout when written back

    @property
    def python(self) -> str:
        """The code cells as one module; each cell ends with a line break."""
        return "".join(_view_lines(self.cells))

    @property
    def cell_map(self) -> CellMap:
        first_lines, numbers = [], []
        line = 1
        for cell in self.cells:
            if cell.python:
                first_lines.append(line)
                numbers.append(cell.number)
                line += len(cell.python)
        return CellMap(tuple(first_lines), tuple(numbers))

    def with_edits(self, spans: list[tuple[int, int, str]]) -> tuple[str, list[CellChange]] | None:
        """The notebook's text with edits made to its Python view (`spans`:
        start and end offsets in `python`, and the new text) applied to the
        cells' own text, and the cells changed; None when an edit reaches
        across cells or into a line the view blanked."""
        sources = {cell.index: cell.source for cell in self.cells}
        by_cell: dict[int, list[tuple[int, int, str]]] = {}
        located = _Locator(self.cells)
        for start, end, text in spans:
            first, last = located.at(start), located.at(end)
            if first is None or last is None or first[0] != last[0]:
                return None
            by_cell.setdefault(first[0], []).append((first[1], last[1], text))
        changes = []
        cells = list(self.document["cells"])  # a copy: the document stays as read
        for index, edits in sorted(by_cell.items()):
            before = sources[index]
            after = before
            for start, end, text in sorted(edits, reverse=True):
                after = after[:start] + text + after[end:]
            changes.append(CellChange(index + 1, before, after))
            source = split_lines(after) if isinstance(cells[index]["source"], list) else after
            cells[index] = {**cells[index], "source": source}
        return _dumps({**self.document, "cells": cells}, self.raw), changes


@dataclass(frozen=True)
class CellChange:
    number: int
    before: str
    after: str


def _view_lines(cells: tuple[CodeCell, ...]) -> list[str]:
    lines: list[str] = []
    for cell in cells:
        lines.extend(cell.python)
        if lines and cell.python and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += "\n"
    for i, line in enumerate(lines[:2]):
        if _CODING.match(line):
            lines[i] = _empty(line)
    return lines


class _Locator:
    """Offsets in a Python view to (cell index, offset in the cell's own text)."""

    def __init__(self, cells: tuple[CodeCell, ...]) -> None:
        self._rows: list[tuple[int, str, int, str]] = []  # (cell index, view line, offset, line)
        self._starts: list[int] = []
        offset = 0
        for cell, view in zip(cells, _view_cells(cells), strict=True):
            in_cell = 0
            for view_line, line in zip(view, split_lines(cell.source), strict=True):
                self._starts.append(offset)
                self._rows.append((cell.index, view_line, in_cell, line))
                offset += len(view_line)
                in_cell += len(line)
        self._end = offset

    def at(self, offset: int) -> tuple[int, int] | None:
        if not self._rows or not 0 <= offset <= self._end:
            return None
        row = bisect.bisect_right(self._starts, offset) - 1
        index, view_line, in_cell, line = self._rows[row]
        column = offset - self._starts[row]
        body = line.rstrip("\r\n")
        if view_line.rstrip("\r\n") != body and column > 0:
            return None  # inside a line the view blanked
        return index, in_cell + min(column, len(line))


def _view_cells(cells: tuple[CodeCell, ...]) -> list[list[str]]:
    """Each cell's lines as they stand in the view (a line break added to
    its last line, a coding declaration blank)."""
    view = _view_lines(cells)
    result, start = [], 0
    for cell in cells:
        result.append(view[start:start + len(cell.python)])
        start += len(cell.python)
    return result


def _dumps(document: dict[str, Any], raw: str) -> str:
    """The document as JSON in the layout of the file it came from:
    nbformat's (one-space indentation, non-ASCII as it is, a final line
    break) or another indentation, a compact file, escaped non-ASCII, CRLF."""
    indentation = re.match(r"\{\r?\n([ \t]+)\"", raw)
    ensure_ascii = raw.isascii() and "\\u" in raw
    if indentation:
        text = json.dumps(document, indent=indentation.group(1), ensure_ascii=ensure_ascii)
    else:
        separators = (", ", ": ") if re.search(r"\":\s", raw) else (",", ":")
        text = json.dumps(document, separators=separators, ensure_ascii=ensure_ascii)
    if raw.endswith("\n"):
        text += "\n"
    return text.replace("\n", "\r\n") if "\r\n" in raw else text


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------
def read_notebook(data: bytes | str) -> Notebook:
    """A notebook from its file's bytes; NotebookError if it is not one."""
    try:
        raw = data.decode("utf-8-sig") if isinstance(data, bytes) else data
        document = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise NotebookError(f"a notebook is JSON, and this file is not ({exc})") from None
    if not isinstance(document, dict) or "nbformat" not in document:
        raise NotebookError("no `nbformat` version: not a Jupyter notebook")
    if document["nbformat"] != 4:
        raise NotebookError(f"a notebook of nbformat {document['nbformat']!r}: "
                            "only nbformat 4 is read")
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise NotebookError("`cells` is not a list: not a Jupyter notebook")
    code = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {index + 1} is not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"cell {index + 1}: `source` is not text")
        code.append(CodeCell(index, source, tuple(cell_python(source))))
    if not _is_python(document.get("metadata")):
        code = []
    return Notebook(document, tuple(code), raw)


def _is_python(metadata: object) -> bool:
    """Whether the notebook's kernel runs Python (a notebook that does not
    say is taken to)."""
    if not isinstance(metadata, dict):
        return True
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(name), str):
            return table[name].lower() == "python"
    return True


def python_source(path: str, data: bytes) -> bytes:
    """What the checks read of a file: a notebook's Python view (UTF-8),
    any other file's bytes as they are. Raises NotebookError."""
    if not is_notebook(path):
        return data
    return read_notebook(data).python.encode("utf-8")


def scanned_source(path: str, data: bytes) -> bytes:
    """What the byte scans read of a file: as python_source, and nothing of
    a file that is not a notebook (every notebook is parsed, and that
    reports it: engine.lint)."""
    try:
        return python_source(path, data)
    except NotebookError:
        return b""


def cell_lines_in_messages(findings: list[Finding], read: Callable[[], bytes]) -> list[Finding]:
    """A notebook's findings with the lines their messages name (`(line 9)`
    of the Python view) named as the notebook shows them: `(cell 2, line 4)`.
    `read` gives the notebook's bytes (read only when a message names a line)."""
    if not any(_LINE_REFERENCE.search(f.message) for f in findings):
        return findings
    try:
        cells = read_notebook(read()).cell_map
    except (OSError, NotebookError):
        return findings

    def in_cell(match: re.Match[str]) -> str:
        position = cells.position(int(match.group(1)))
        return match.group() if position is None else f"(cell {position[0]}, line {position[1]})"

    return [replace(f, message=_LINE_REFERENCE.sub(in_cell, f.message)) for f in findings]
