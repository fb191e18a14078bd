"""Which lines of a module the checks ran: a static finding a probe would
confirm is confirmed false only when the probe ran *and* the checked inputs
reached the finding's line (a branch the inputs never take says nothing).

Only the lines asked about are recorded, only in the checked module's file,
and only while a Function with such findings is checked: a trace function
costs every Python call made meanwhile (an interpreted kernel makes many).
A line counts as reached when it ran, or when it is in the header (the
decorators and `def` line) of a function that was called.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any


@contextmanager
def lines_reached(path: str, lines: set[int]) -> Iterator[set[int]]:
    """Within it, the set it yields gains each of `lines` of the file at
    `path` that runs (on this thread)."""
    reached: set[int] = set()
    if not lines:
        yield reached
        return
    wanted = os.path.realpath(path)
    files: dict[str, bool] = {}  # co_filename -> is the file
    headers: dict[CodeType, range] = {}

    def in_file(code: CodeType) -> bool:
        name = code.co_filename
        if name not in files:
            files[name] = os.path.realpath(name) == wanted
        return files[name]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno in lines:
            reached.add(frame.f_lineno)
        return local

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        if event != "call" or not in_file(code):
            return None
        if code not in headers:
            headers[code] = _header(code)
        reached.update(lines.intersection(headers[code]))
        return local

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield reached
    finally:
        sys.settrace(previous)


def _header(code: CodeType) -> range:
    """The lines from a function's first decorator to the line before its
    body's first statement."""
    body = [line for _, _, line in code.co_lines() if line is not None and
            line > code.co_firstlineno]
    return range(code.co_firstlineno, min(body) if body else code.co_firstlineno + 1)
