"""Source lines of reported files, read only when an output needs them.

Findings carry `ast` positions (UTF-8 byte columns); SARIF, GitHub annotations
and editors count characters, and baselines fingerprint a finding by the text
of its line. Reading a file again costs little next to checking it, and only
files with findings are read.
"""
from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceLines:
    def __init__(self, paths: dict[str, str] | None = None) -> None:
        self._paths = paths or {}  # shown path -> file system path, where they differ
        self._files: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._files:
            try:
                with open(self._paths.get(path, path), "rb") as handle:
                    text = handle.read().decode("utf-8", errors="replace")
            except OSError:
                text = ""
            self._files[path] = _LINE_BREAK.split(text.removeprefix("\ufeff"))
        return self._files[path]

    def line(self, path: str, line: int) -> str:
        lines = self.lines(path)
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def character_column(self, path: str, line: int, byte_column: int) -> int:
        """A 0-based UTF-8 byte column as a 0-based count of characters."""
        text = self.line(path, line)
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))

    def utf16_column(self, path: str, line: int, byte_column: int) -> int:
        """The same position in UTF-16 code units (LSP's and SARIF's default)."""
        text = self.line(path, line)
        if text.isascii():
            return byte_column
        prefix = text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore")
        return len(prefix.encode("utf-16-le")) // 2
