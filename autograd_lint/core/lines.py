"""Positions in source text: one index per text, one cache per run.

Findings carry `ast` positions (1-based lines, UTF-8 byte columns). Fixes need
text offsets, SARIF and editors count UTF-16 units, GitHub annotations count
characters, and baselines fingerprint a finding by the text of its line; all
of them go through `LineIndex`. `SourceLines` reads the reported files again
(only those with findings) for the outputs.
"""
from __future__ import annotations

import re
from functools import cached_property
from itertools import accumulate
from typing import TYPE_CHECKING

from .files import NotebookError, is_notebook, read_regular_file

if TYPE_CHECKING:
    from .notebooks import CellMap

LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what `ast` counts as a new line


class LineIndex:
    """Maps `ast` positions in one text to offsets, characters and UTF-16 units."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newline = m.group() if (m := LINE_BREAK.search(text)) else "\n"

    @cached_property
    def lines(self) -> list[str]:
        """The lines without their line breaks (all a column needs: most
        outputs never need offsets, which cost a pass over the text)."""
        return LINE_BREAK.split(self.text) if "\r" in self.text else self.text.split("\n")

    @cached_property
    def starts(self) -> list[int]:
        """The offset where each line starts."""
        if "\r" in self.text:
            return [0] + [m.end() for m in LINE_BREAK.finditer(self.text)]
        # The common case, without a regular expression per line.
        return [0, *accumulate(len(line) + 1 for line in self.lines[:-1])]

    def line_text(self, line: int) -> str:
        """The line with its line break."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end]

    def line(self, line: int) -> str:
        """The line without its line break; "" past either end."""
        if not 1 <= line <= len(self.lines):
            return ""
        return self.lines[line - 1]

    def _prefix(self, line: int, byte_column: int) -> str:
        text = self.line(line)
        if text.isascii():
            return text[:byte_column]
        return text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore")

    def characters(self, line: int, byte_column: int) -> int:
        """A byte column as a count of characters."""
        return len(self._prefix(line, byte_column))

    def utf16(self, line: int, byte_column: int) -> int:
        """A byte column in UTF-16 code units (LSP's and SARIF's default)."""
        prefix = self._prefix(line, byte_column)
        return len(prefix) if prefix.isascii() else len(prefix.encode("utf-16-le")) // 2

    def offset(self, line: int, column: int) -> int:
        """The text offset of a position; IndexError when it is not in the text."""
        if line < 1 or line > len(self.starts):
            raise IndexError(line)
        content = self.line_text(line).encode("utf-8")
        if column > len(content):
            raise IndexError(column)
        return self.starts[line - 1] + len(content[:column].decode("utf-8", errors="ignore"))

    def indent(self, text: str, line: int) -> str:
        """New lines in `text` take the text's newline and `line`'s indentation."""
        if "\n" not in text:
            return text
        current = self.line_text(line)
        indentation = current[: len(current) - len(current.lstrip(" \t"))]
        return text.replace("\n", self.newline + indentation)


class SourceLines:
    """The `LineIndex` of each reported file, read on first use; of a
    notebook, the index of its Python view and where each line lies in its
    cells (notebooks.py)."""

    def __init__(self, paths: dict[str, str] | None = None) -> None:
        self._paths = paths or {}  # shown path -> file system path, where they differ
        self._files: dict[str, LineIndex] = {}
        self._cells: dict[str, CellMap] = {}  # notebooks' (shown path)

    def alias(self, shown: str, path: str) -> None:
        """Find the file shown as `path` under the name `shown` as well."""
        self._paths[shown] = self._paths.get(path, path)

    def index(self, path: str) -> LineIndex:
        if path not in self._files:
            where = self._paths.get(path, path)
            try:
                data = read_regular_file(where)
            except OSError:
                data = b""
            text = self._notebook(path, data) if is_notebook(where) else \
                data.decode("utf-8", errors="replace")
            self._files[path] = LineIndex(text.removeprefix("\ufeff"))
        return self._files[path]

    def _notebook(self, path: str, data: bytes) -> str:
        """A notebook's Python view (nothing of a file that is not one), its cells kept."""
        from .notebooks import read_notebook

        try:
            notebook = read_notebook(data)
        except NotebookError:
            return ""
        self._cells[path] = notebook.cell_map
        return notebook.python

    def cell_of(self, path: str, line: int) -> tuple[int, int] | None:
        """Of a line of a notebook's Python view: its cell (numbered from 1
        among all cells, as ruff and editors show them) and its line there;
        None for any other file (its lines are shown as they are)."""
        self.index(path)
        cells = self._cells.get(path)
        return cells.position(line) if cells is not None else None

    def line(self, path: str, line: int) -> str:
        return self.index(path).line(line)

    def character_column(self, path: str, line: int, byte_column: int) -> int:
        return self.index(path).characters(line, byte_column)

    def utf16_column(self, path: str, line: int, byte_column: int) -> int:
        return self.index(path).utf16(line, byte_column)
