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

Fixes are applied to the cells' own text and spliced back into the file's
JSON text (`Notebook.with_edits`): only the `source` values of the cells
changed are written, in the file's own layout; every other byte (outputs,
metadata, number spellings, escapes, duplicate keys) stays as it was.

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
from json.decoder import scanstring
from typing import TYPE_CHECKING, Any

# (What a notebook's path is, and the error of one that is not, live in
# files.py: a run asks them of every file without loading this module.)
from .files import NotebookError, is_notebook

if TYPE_CHECKING:
    from .findings import Finding

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
# JSON's whitespace, between tokens.
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
# A \u escape of a non-ASCII character (not after an escaped backslash).
_ESCAPED_NON_ASCII = re.compile(r"(?<!\\)(?:\\\\)*\\u(?!00[0-7])[0-9a-fA-F]{4}")
# A lone surrogate: JSON may escape one (`"\ud800"`), no UTF-8 file can hold it.
_SURROGATE = re.compile("[\ud800-\udfff]")
_DECODER = json.JSONDecoder()
# One character of a JSON string as spelt: an escaped surrogate pair, an
# escape, or a character as it is.
_STRING_UNIT = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                          r"|\\u[0-9a-fA-F]{4}|\\.|[^\\]", re.DOTALL)


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
        for index, edits in sorted(by_cell.items()):
            before = sources[index]
            after = before
            for start, end, text in sorted(edits, reverse=True):
                after = after[:start] + text + after[end:]
            changes.append(CellChange(index + 1, before, after))
        return _spliced(self.raw, {c.number - 1: c.after for c in changes}), changes


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


# ---------------------------------------------------------------------------
# Writing back: the new sources spliced into the file's own text
# ---------------------------------------------------------------------------
_Span = tuple[int, int]


def _spliced(raw: str, sources: dict[int, str]) -> str:
    """The notebook's text `raw` with the `source` of each cell in `sources`
    (by index among all cells) replaced; every other byte as it was (a
    re-serialised document would respell numbers, escapes and drop
    duplicate keys: the README promises outputs and metadata untouched)."""
    top = _members(raw, _skip(raw, 0))
    cells = _elements(raw, top["cells"][0])
    for index in sorted(sources, reverse=True):  # from the end: earlier spans stay valid
        start, end = _members(raw, cells[index][0])["source"]
        raw = raw[:start] + _encoded_source(raw, (start, end), sources[index]) + raw[end:]
    return raw


def _skip(raw: str, at: int) -> int:
    match = _JSON_SPACE.match(raw, at)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _members(raw: str, at: int) -> dict[str, _Span]:
    """The span of each member's value of the JSON object at `at`; of a key
    given twice, the last (the one `json.loads` keeps). The text was read by
    `json.loads` already: it is valid JSON."""
    spans: dict[str, _Span] = {}
    i = _skip(raw, at + 1)
    while raw[i] != "}":
        key, i = scanstring(raw, i + 1)
        i = _skip(raw, _skip(raw, i) + 1)  # past the colon
        _, end = _DECODER.raw_decode(raw, i)
        spans[key] = (i, end)
        i = _skip(raw, end)
        i = _skip(raw, i + 1) if raw[i] == "," else i
    return spans


def _elements(raw: str, at: int) -> list[_Span]:
    """The span of each element of the JSON array at `at`."""
    spans: list[_Span] = []
    i = _skip(raw, at + 1)
    while raw[i] != "]":
        _, end = _DECODER.raw_decode(raw, i)
        spans.append((i, end))
        i = _skip(raw, end)
        i = _skip(raw, i + 1) if raw[i] == "," else i
    return spans


def _encoded_source(raw: str, span: _Span, text: str) -> str:
    """A cell's new source as JSON, in the form and layout of its old value
    at `span`: one string, or a list of lines (nbformat's) laid out as the
    old list, its unchanged lines in their old spelling."""
    start, end = span
    old = raw[start:end]
    ascii_only = _ascii_style(old, raw)
    if old.startswith('"'):
        return _respelt(old, text, ascii_only)
    elements = _elements(raw, start)
    spelt = {json.loads(raw[s:e]): raw[s:e] for s, e in reversed(elements)}
    lines = [spelt.get(line) or _json_string(line, ascii_only) for line in split_lines(text)]
    if not lines:
        return "[]"
    lead, separator, trail = _list_layout(raw, start, end, elements)
    return "[" + lead + separator.join(lines) + trail + "]"


def _list_layout(raw: str, start: int, end: int, elements: list[_Span]) -> tuple[str, str, str]:
    """The whitespace after `[`, between elements (with the comma) and
    before `]` of the list at `start`, or of one laid out as the file's
    others when it was empty."""
    if elements:
        lead, trail = raw[start + 1:elements[0][0]], raw[elements[-1][1]:end - 1]
        if len(elements) > 1:
            return lead, raw[elements[0][1]:elements[1][0]], trail
        compact = "\n" not in lead and re.search(r"\",[ \t]", raw) is None
        return lead, "," + (lead or ("" if compact else " ")), trail
    indented = re.match(r"\{\r?\n([ \t]+)\"", raw)
    if indented is None:  # a file on one line
        return "", ", " if re.search(r"\":\s", raw) else ",", ""
    newline = "\r\n" if "\r\n" in raw else "\n"
    line = raw[raw.rfind("\n", 0, start) + 1:start]
    indentation = line[:len(line) - len(line.lstrip(" \t"))]
    lead = newline + indentation + indented.group(1)
    return lead, "," + lead, newline + indentation


def _ascii_style(old: str, raw: str) -> bool:
    """Whether a cell's source is written with non-ASCII escaped (`\\u00e9`):
    as its old value was, or, if that says nothing, as the file is."""
    if not old.isascii():
        return False
    return bool(_ESCAPED_NON_ASCII.search(old)) or raw.isascii()


def _respelt(token: str, text: str, ascii_only: bool) -> str:
    """`text` as a JSON string that keeps the old `token`'s spelling (its
    escapes) of the unchanged text before and after the edit."""
    units = [(unit, json.loads(f'"{unit}"')) for unit in _STRING_UNIT.findall(token[1:-1])]
    head, start = 0, 0
    while head < len(units) and text.startswith(units[head][1], start):
        start += len(units[head][1])
        head += 1
    tail, end = len(units), len(text)
    while tail > head and end - len(units[tail - 1][1]) >= start and \
            text.endswith(units[tail - 1][1], start, end):
        end -= len(units[tail - 1][1])
        tail -= 1
    kept = "".join(unit for unit, _ in units[:head])
    middle = _json_string(text[start:end], ascii_only)[1:-1]
    return '"' + kept + middle + "".join(unit for unit, _ in units[tail:]) + '"'


def _json_string(text: str, ascii_only: bool) -> str:
    """`text` as a JSON string; a lone surrogate escaped (UTF-8 cannot hold one)."""
    encoded = json.dumps(text, ensure_ascii=ascii_only)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", encoded)


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
    for cell in code:
        if _SURROGATE.search(cell.source):
            raise NotebookError(f"cell {cell.number}: its source holds a lone surrogate "
                                "(an escape such as \\ud800), which no Python file can hold")
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
