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


# Polling costs a walk of the tree; between two walks the watcher sleeps at
# least this many times as long as the last one took, so that it never takes
# more than a tenth of a core, however large the tree (a 50,000-file tree
# walked every half second took 29%).
_IDLE_FACTOR = 10
# A burst of saves is waited out, but no longer than this many settle
# periods: a file rewritten every fraction of a second (a log, a generator)
# must not hold the next run back forever.
_MAX_SETTLES = 6


def watch(run: Callable[[], int], paths: Iterable[str], out: TextIO, *,
          interval: float = 0.5, settle: float = 0.3,
          sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> int:
    """Run, then run again after each change, until interrupted (exit 0)."""
    from ..core.files import DEFAULT_EXCLUDES

    roots = list(paths)
    clear = out.isatty()

    def snapshot() -> tuple[Snapshot, float]:
        start = clock()
        taken = _snapshot(roots, DEFAULT_EXCLUDES)
        return taken, clock() - start

    try:
        out.write(f"{_stamp()} Starting the linter in watch mode...\n\n")
        run()
        out.flush()
        seen, cost = snapshot()
        while True:
            sleep(max(interval, _IDLE_FACTOR * cost))
            now, cost = snapshot()
            if now == seen:
                continue
            for _ in range(_MAX_SETTLES):  # a burst of saves: wait until files hold still
                sleep(max(settle, _IDLE_FACTOR * cost))
                later, cost = snapshot()
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
