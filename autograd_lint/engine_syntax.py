"""Whether a file's text parses: decoding as the interpreter does, the parse
itself, the AGF000 finding of a file that does not parse, and `SyntaxCheck`,
the whole-file parses (in the background) of the files the run parses only
in part, so that a syntax error is reported as a whole parse would report it.
"""
from __future__ import annotations

import ast
import io
import os
import sys
import tokenize
import warnings
from typing import TYPE_CHECKING

from .files import read_regular_file
from .findings import Finding
from .registry import RULES

if TYPE_CHECKING:  # imported lazily at run time
    from .cache import Cache
    from .engine_io import SourceInput


_PYTHON = "{}.{}".format(*sys.version_info[:2])


def decode_source(data: bytes) -> str:
    """Decode like the interpreter does: BOM, then a coding cookie, then UTF-8."""
    from .scan import wide_encoding

    if wide_encoding(data) is not None:
        raise UnicodeError("it is UTF-16 or UTF-32 encoded (a byte order mark says so); "
                           "Python source must be UTF-8 or declare its encoding")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def syntax_finding(path: str, exc: BaseException) -> Finding:
    rule = RULES["AGF000"]
    line, column, end_line, end_column = 1, 0, None, None
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 1
        column = max((exc.offset or 1) - 1, 0)
        end_line = getattr(exc, "end_lineno", None)
        end_offset = getattr(exc, "end_offset", None)
        end_column = end_offset - 1 if end_offset and end_offset > 0 else None
        detail = f"{exc.msg or 'invalid syntax'} (parsed as Python {_PYTHON})"
    elif isinstance(exc, (UnicodeError, LookupError)):
        detail = f"cannot decode the file ({exc})"
    elif isinstance(exc, RecursionError):
        detail = "the code is nested too deeply for the parser"
    elif isinstance(exc, MemoryError):
        detail = "the file is too large to parse"
    else:
        detail = str(exc) or type(exc).__name__
    return Finding(path=path, line=line, column=column, end_line=end_line,
                   end_column=end_column, code="AGF000", name=rule.name,
                   severity=rule.severity, message=rule.format(detail=detail))


def parse_text(display: str, data: bytes | str) -> tuple[str | None, ast.Module | None,
                                                            Finding | None]:
    """(text, tree, None) or (text-or-None, None, AGF000 finding)."""
    text: str | None = None
    try:
        text = data if isinstance(data, str) else decode_source(data)
        with warnings.catch_warnings():  # e.g. invalid escapes: not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=display)
    except (SyntaxError, ValueError, LookupError, RecursionError,  # ValueError: bad bytes too
            MemoryError) as exc:
        return text, None, syntax_finding(display, exc)
    return text, tree, None


class SyntaxCheck:
    """Whole-file parses of the files that will be parsed sparsely, only to
    learn which of them do not parse. They run in a worker process beside the
    analysis when there is a spare core, else when asked for. Answers the
    cache knows for a file's current stat are taken from it (a language
    server checks its project's files once, not on every lint)."""

    def __init__(self, sources: list[SourceInput], jobs: int | None,
                 cache: Cache | None = None) -> None:
        self.sources = sources
        self._cache = cache
        self._known: list[SourceInput] = []  # known not to parse
        if cache is not None:
            known = {s.path: cache.parses(s.path) for s in sources}
            self._known = [s for s in sources if known[s.path] is False]
            sources = [s for s in sources if known[s.path] is None]
        # A file Python itself compiled, unchanged since, parses: skip it.
        sources = [s for s in sources if not _compiled_by_this_python(s.path)]
        self._sources = sources
        self._futures: list = []
        self._pool = None
        cores = jobs if jobs is not None else (os.cpu_count() or 1)
        if cores > 1 and len(sources) >= _BACKGROUND_MIN_FILES:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
            # One worker per core: they share a core with the analysis at
            # first, and have them all once it is done.
            paths = [s.path for s in sources]
            try:
                self._pool = ProcessPoolExecutor(max_workers=cores, mp_context=context)
                self._futures = [self._pool.submit(_broken_files, paths[i::cores])
                                 for i in range(cores)]
            except OSError:  # no processes to be had: check in this one
                self._pool, self._futures = None, []

    def broken(self) -> list[SourceInput]:
        """The sources whose whole text does not parse."""
        if not self._sources:
            return self._known
        if self._futures:
            try:
                paths = set().union(*(future.result() for future in self._futures))
            finally:
                self._pool.shutdown()  # type: ignore[union-attr]
        else:
            paths = _broken_files([s.path for s in self._sources])
        if self._cache is not None:
            for source in self._sources:
                self._cache.store_parses(source.path, source.path not in paths)
        return self._known + [s for s in self._sources if s.path in paths]


# Fewer files than this are checked in-process: a worker costs more to start.
_BACKGROUND_MIN_FILES = 4


def _compiled_by_this_python(path: str) -> bool:
    """Whether the bytecode cache holds a compilation of this exact file by
    this Python version (the check the import system makes before it trusts
    a .pyc); only the 16-byte header is read, nothing is loaded."""
    import importlib.util

    try:
        with open(importlib.util.cache_from_source(path), "rb") as handle:
            header = handle.read(16)
        info = os.stat(path)
    except (OSError, ValueError, NotImplementedError):
        return False
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & 1:  # hash-based: the header holds a hash of the source
        try:
            return header[8:16] == importlib.util.source_hash(read_regular_file(path))
        except OSError:
            return False
    return (flags == 0 and int.from_bytes(header[8:12], "little") == int(info.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == info.st_size & 0xFFFFFFFF)


def _broken_files(paths: list[str]) -> set[str]:
    import symtable  # in the background worker, not at start-up

    broken = set()
    for path in paths:
        try:
            data = read_regular_file(path)
        except OSError:
            continue  # reported when the file is read for analysis
        try:
            # The symbol table is built from the parser's tree without making
            # Python objects of it or generating bytecode: a third cheaper than
            # either. What it accepts parses; what it refuses (a symbol-table
            # error, such as `nonlocal` at module level) is decided by the
            # parse below.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                symtable.symtable(decode_source(data), path, "exec")
            continue
        except Exception:
            pass
        _, tree, _ = parse_text(path, data)
        if tree is None:
            broken.add(path)
    return broken
