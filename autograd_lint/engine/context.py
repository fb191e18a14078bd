"""The project around named files or an editor buffer.

pre-commit passes only the changed files and an editor lints one buffer, yet
the Functions and bases those import live in other files. The project is the
nearest folder above the file holding a marker (`pyproject.toml`, `setup.py`,
`setup.cfg`, `.git`); its other files are read for what they define and are
never reported.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cache import EditorCache
    from .lint import LintResult, SourceInput

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root(path: str) -> str | None:
    """The nearest folder above `path` that marks a project (None: no project,
    then nothing beside the file itself is read)."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def project_files(root: str, excluded: Callable[[str, bool], bool]) -> list[str]:
    """The `.py` files of a project, as the command line walks them."""
    from ..core.files import iter_python_files

    return list(iter_python_files(root, excluded))


def context_inputs(named: Sequence[SourceInput], excluded: Callable[[str, bool], bool],
                   seen: set[str]) -> list[SourceInput]:
    """For the command line: the other files of the named files' projects, as
    inputs with no rule enabled (read, never reported). Only the ones the
    byte prefilter finds relevant are parsed, so this costs a scan of the
    tree. `seen` holds the normalised paths already taken."""
    roots = {project_root(i.path) for i in named}
    context: list[SourceInput] = []
    for root in sorted(r for r in roots if r is not None):
        for found in project_files(root, excluded):
            key = os.path.normpath(os.path.abspath(found))
            if key not in seen:
                seen.add(key)
                context.append(_context_input(found))
    return context


def _context_input(path: str) -> SourceInput:
    from .lint import SourceInput

    return SourceInput(path, os.path.relpath(path), frozenset(), context=True)


class BufferLinter:
    """For the language server: lints an editor's buffer exactly as the
    command line lints a named file (`autograd-lint check FILE`), with the
    rest of its project as context, and keeps per project what the next
    lint reuses: the list of its files, and an `EditorCache` (the byte scans
    of its files, seeded from the command line's cache, and the relevance
    judgement, updated for what changed; nothing of it is written to disk).

    The project's folders are walked (and its files' stamps read) at most once
    every `refresh_seconds` per project, not on every keystroke's lint; a save
    in the editor (`forget`) makes the next lint walk again."""

    def __init__(self, refresh_seconds: float = 2.0,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self._walked: dict[str, tuple[float, list[tuple[str, SourceInput]]]] = {}
        self._caches: dict[str, EditorCache] = {}
        self._refresh = refresh_seconds
        self._clock = clock or time.monotonic

    def forget(self) -> None:
        """Files on disk may have changed (a save): walk again next time."""
        self._walked.clear()

    def lint(self, path: str, text: bytes, codes: frozenset[str],
             excluded: Callable[[str, bool], bool], config_root: Path) -> LintResult:
        """The buffer's findings (and the run's errors). `path` is where the
        buffer lives on disk (no context is read unless it is a `.py` file);
        `excluded` and `config_root` come from its configuration."""
        from .cache import EditorCache, cache_directory
        from .lint import SourceInput, lint_inputs

        buffer = SourceInput(path, path, codes, explicit=True, text=text)
        root = project_root(path) if path.endswith(".py") else None
        if root is None:  # nothing beside the buffer is read
            return lint_inputs([buffer], jobs=1)
        here = os.path.normcase(os.path.abspath(path))
        inputs = [buffer] + [source for key, source in self._context(root, excluded)
                             if key != here]
        directory = cache_directory(config_root)
        cache = self._caches.get(root)
        if cache is None or cache.directory != directory:
            cache = self._caches[root] = EditorCache(directory, config_root)
        # One process: a server forks nothing per keystroke (and only the
        # first lint of a project scans its whole tree).
        return lint_inputs(inputs, jobs=1, cache=cache)

    def _context(self, root: str, excluded: Callable[[str, bool], bool]
                 ) -> list[tuple[str, SourceInput]]:
        """The project's files as context inputs, each with its normalised
        path (made once per walk: a lint per keystroke must not redo it)."""
        now = self._clock()
        walked = self._walked.get(root)
        if walked is None or now - walked[0] >= self._refresh:
            walked = self._walked[root] = (now, [
                (os.path.normcase(os.path.abspath(found)), _context_input(found))
                for found in project_files(root, excluded)])
        return walked[1]
