"""`check --watch`: lint again whenever a file under the named paths
changes (ruff's `--watch`). Changes are seen by polling the files' sizes and
modification times (no dependency, every platform), a burst of saves is
waited out before the next run, and a terminal is cleared before each run.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TextIO

# What a change to can change the findings: sources, notebooks, configuration.
_WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb", ".toml", ".cfg", ".gitignore")
_CLEAR = "\x1b[2J\x1b[H"

Snapshot = dict[str, tuple[int, int]]


def watch(run: Callable[[], int], paths: Iterable[str], out: TextIO, *,
          interval: float = 0.5, settle: float = 0.3) -> int:
    """Run, then run again after each change, until interrupted (exit 0)."""
    from .files import DEFAULT_EXCLUDES

    roots = list(paths)
    clear = out.isatty()
    try:
        out.write(f"{_stamp()} Starting the linter in watch mode...\n\n")
        run()
        out.flush()
        seen = _snapshot(roots, DEFAULT_EXCLUDES)
        while True:
            time.sleep(interval)
            now = _snapshot(roots, DEFAULT_EXCLUDES)
            if now == seen:
                continue
            while True:  # a burst of saves: wait until the files hold still
                time.sleep(settle)
                later = _snapshot(roots, DEFAULT_EXCLUDES)
                if later == now:
                    break
                now = later
            seen = now
            out.write(_CLEAR if clear else "\n")
            out.write(f"{_stamp()} File change detected...\n\n")
            run()
            out.flush()
    except KeyboardInterrupt:
        return 0


def _stamp() -> str:
    return f"[{datetime.now():%H:%M:%S}]"


def _snapshot(roots: list[str], skipped: frozenset[str]) -> Snapshot:
    """(size, mtime) of every watched file under the roots."""
    found: Snapshot = {}
    for root in roots:
        if os.path.isfile(root):
            _note(root, found)
            continue
        for folder, folders, files in os.walk(root):
            folders[:] = [d for d in folders if d not in skipped and not d.endswith(".egg-info")]
            for name in files:
                if name.endswith(_WATCHED_SUFFIXES):
                    _note(os.path.join(folder, name), found)
    return found


def _note(path: str, found: Snapshot) -> None:
    try:
        stat = os.stat(path)
    except OSError:
        return  # removed meanwhile: the next snapshot says so
    found[path] = (stat.st_size, stat.st_mtime_ns)
