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
from typing import TYPE_CHECKING

from .model import ModuleInfo

if TYPE_CHECKING:
    from .engine import SourceInput

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


def context_inputs(named: Sequence[SourceInput], excluded: Callable[[str, bool], bool],
                   seen: set[str]) -> list[SourceInput]:
    """For the command line: the other files of the named files' projects, as
    inputs with no rule enabled (read, never reported). Only the ones the
    byte prefilter finds relevant are parsed, so this costs a scan of the
    tree. `seen` holds the normalised paths already taken."""
    from .engine import SourceInput
    from .files import iter_python_files

    roots = {project_root(i.path) for i in named}
    context: list[SourceInput] = []
    for root in sorted(r for r in roots if r is not None):
        for found in iter_python_files(root, excluded):
            key = os.path.normpath(os.path.abspath(found))
            if key not in seen:
                seen.add(key)
                context.append(SourceInput(found, os.path.relpath(found), frozenset(),
                                           context=True))
    return context


class BufferContext:
    """For the language server: the other files of a buffer's project that
    can define Functions (their bytes spell `Function`), parsed whole and
    kept until the file changes on disk (its size or modification time).

    The project's folders are walked (and its files' stamps read) at most once
    every `refresh_seconds` per project, not on every keystroke's lint; a save
    in the editor (`forget`) makes the next lint walk again."""

    def __init__(self, refresh_seconds: float = 2.0,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self._parsed: dict[str, tuple[tuple[int, int], ModuleInfo | None]] = {}
        self._walked: dict[str, tuple[float, list[tuple[str, ModuleInfo]]]] = {}
        self._refresh = refresh_seconds
        self._clock = clock or time.monotonic

    def forget(self) -> None:
        """Files on disk may have changed (a save): walk again next time."""
        self._walked.clear()

    def modules_for(self, path: str) -> list[ModuleInfo]:
        root = project_root(path)
        if root is None:
            return []
        now = self._clock()
        walked = self._walked.get(root)
        if walked is None or now - walked[0] >= self._refresh:
            walked = (now, self._walk(root))
            self._walked[root] = walked
        here = os.path.normcase(os.path.abspath(path))
        # The buffer itself: its text is the editor's, not the disk's.
        return [module for file, module in walked[1]
                if os.path.normcase(os.path.abspath(file)) != here]

    def _walk(self, root: str) -> list[tuple[str, ModuleInfo]]:
        from .engine import FUNCTION_WORD, _module, parse_text
        from .files import iter_python_files

        found: list[tuple[str, ModuleInfo]] = []
        for file in iter_python_files(root, lambda p, is_dir: False):
            try:
                info = os.stat(file)
            except OSError:
                continue
            stamp = (info.st_mtime_ns, info.st_size)
            cached = self._parsed.get(file)
            if cached is None or cached[0] != stamp:
                module = None
                try:
                    with open(file, "rb") as handle:
                        data = handle.read()
                except OSError:
                    data = b""
                if FUNCTION_WORD.encode() in data:
                    text, tree, _ = parse_text(file, data)
                    if tree is not None and text is not None:
                        module = _module(file, file, tree, text)
                cached = (stamp, module)
                self._parsed[file] = cached
            if cached[1] is not None:
                found.append((file, cached[1]))
        return found
