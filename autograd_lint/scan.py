"""Byte-level scan of every file: what it could contain, without parsing it.

Parsing is the expensive step of a run, and in a large tree few files can
matter: those that define a Function subclass, call gradcheck, or import a
Function to use it. The scan finds them from the raw bytes with `bytes.find`
(a hundred times faster than a regular expression over the whole file) and a
few small expressions applied only around what it found. It runs in worker
processes for large trees. It only rules files *out* when they cannot matter;
the engine decides everything else on real syntax trees.
"""
from __future__ import annotations

import os
import re
from typing import NamedTuple

from .files import is_test_path

# Bases end at ")" (or at ":" in a header broken by a missing ")": the file
# still matters, to report that it does not parse).
_HEADER = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^):]*)[):]")
_BASE = re.compile(rb"[A-Za-z_][\w.]*")
# On a line mentioning Function/autograd: names bound to torch's Function
# classes or modules (`import ... Function as F`, `F = torch.autograd.Function`,
# `import torch.autograd as ag`).
_ALIAS = re.compile(rb"\b(?:Function|InplaceFunction|autograd|function)\s+as\s+(\w+)"
                    rb"|^[ \t]*(\w+)\s*=\s*[\w.]*\b(?:Function|autograd)\b\s*$")
_FROM_IMPORT = re.compile(rb"[ \t]*from[ \t]+([\w.]+)[ \t]+(import)[ \t]+(\([^)]*\)|[^\n#;]*)")
_IMPORT = re.compile(rb"[ \t]*import[ \t]+([^\n#;]*)")
_NAME = re.compile(rb"[A-Za-z_][\w.]*")
_GRADCHECK_CALL = re.compile(rb"\b(?:gradcheck|gradgradcheck|opcheck)[ \t]*\(")
# A reference test (AGF301) differentiates (`.backward(`, `autograd.grad(`)
# and compares (`allclose`, `assert_close`, `assertEqual`, project helpers
# named like them). Words found with `in` (a hot path: every file), over-
# approximate: the syntax tree decides.
DIFFERENTIATE_WORDS = (".backward", "grad(")
COMPARE_WORDS = ("close", "qual", "similar", "less", "Less", "greater", "Greater", "snr",
                 "_error(")
_GRADCHECK_TEXT = re.compile(_GRADCHECK_CALL.pattern.decode())
_WORDS = {
    bytes: tuple(tuple(w.encode() for w in words)
                 for words in (DIFFERENTIATE_WORDS, COMPARE_WORDS)),
    str: (DIFFERENTIATE_WORDS, COMPARE_WORDS),
}


def checks_gradients(text: str | bytes, path: str) -> bool:
    """Whether source text of the file at `path` (its bytes, or a chunk of
    its text) may check gradients: call gradcheck/gradgradcheck/opcheck, or,
    in a test file, differentiate and compare as a reference test does."""
    differentiates, compares = _WORDS[type(text)]
    if any(word in text for word in differentiates) and \
            any(word in text for word in compares) and is_test_path(path):
        return True
    if isinstance(text, bytes):
        return (b"gradcheck" in text or b"opcheck" in text) and \
            _GRADCHECK_CALL.search(text) is not None
    return ("gradcheck" in text or "opcheck" in text) and \
        _GRADCHECK_TEXT.search(text) is not None


class FileScan(NamedTuple):
    """What the bytes of one file say it may contain. (A named tuple: tens of
    thousands of these cross from worker processes, and tuples pickle fast.)"""

    path: str
    headers: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (class name, base expressions)
    aliases: frozenset[str] = frozenset()  # local names for torch's Function class/modules
    # (module, name) for `from module import name`, (module, "") for `import module`;
    # modules as written (relative ones keep their dots).
    imports: tuple[tuple[str, str], ...] = ()
    gradcheck: bool = False  # may check gradients (see checks_gradients)
    error: str | None = None  # the file could not be read


def _occurrences(data: bytes, word: bytes):
    start = data.find(word)
    while start >= 0:
        yield start
        start = data.find(word, start + len(word))


def _line_around(data: bytes, offset: int) -> bytes:
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    return data[start: end if end >= 0 else len(data)]


def _headers(data: bytes) -> tuple[tuple[str, tuple[str, ...]], ...]:
    found = []
    for start in _occurrences(data, b"class"):
        if start == 0 or data[start - 1] in b" \t\n;":
            match = _HEADER.match(data, start)
            if match is not None:
                bases = tuple(w.decode("latin-1") for w in _BASE.findall(match.group(2)))
                found.append((match.group(1).decode("latin-1"), bases))
    return tuple(found)


def _aliases(data: bytes) -> frozenset[str]:
    found: set[str] = set()
    for word in (b"Function", b"autograd"):
        for offset in _occurrences(data, word):
            for match in _ALIAS.finditer(_line_around(data, offset)):
                found.add((match.group(1) or match.group(2)).decode("latin-1"))
    return frozenset(found)


def _imports(data: bytes) -> tuple[tuple[str, str], ...]:
    found: set[tuple[str, str]] = set()
    for offset in _occurrences(data, b"import"):
        line_start = data.rfind(b"\n", 0, offset) + 1
        match = _FROM_IMPORT.match(data, line_start)
        if match is not None and match.start(2) == offset:
            module = match.group(1).decode("latin-1")
            names = _NAME.findall(match.group(3))
            for index, name in enumerate(names):
                if name != b"as" and (index == 0 or names[index - 1] != b"as"):
                    found.add((module, name.decode("latin-1")))
            continue
        match = _IMPORT.match(data, line_start)
        if match is not None:
            names = _NAME.findall(match.group(1))
            for index, name in enumerate(names):
                if name != b"as" and (index == 0 or names[index - 1] != b"as"):
                    found.add((name.decode("latin-1"), ""))
    return tuple(sorted(found))


def wide_encoding(data: bytes) -> str | None:
    """"utf-16" or "utf-32" when the bytes start with such a byte order mark:
    Python cannot read the file, and if it holds a Function that is AGF000."""
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return "utf-32"
    return "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else None


def scan_bytes(path: str, data: bytes) -> FileScan:
    encoding = wide_encoding(data)
    if encoding is not None:  # scan its text, so that such a file is not skipped
        try:
            data = data.decode(encoding).encode("utf-8")
        except UnicodeError:
            pass
    mentions = b"Function" in data or b"autograd" in data
    return FileScan(
        path=path,
        headers=_headers(data),
        aliases=_aliases(data) if mentions else frozenset(),
        imports=_imports(data),
        gradcheck=checks_gradients(data, path),
    )


def read_file(path: str) -> bytes | None:
    """The bytes of a file, None if it cannot be read. (os.read: the io
    stack's buffered file objects cost more than the read itself for the
    small files that make up most trees.)"""
    try:
        return _read(path)
    except OSError:
        return None


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, _FIRST_READ)
        if len(data) < _FIRST_READ:
            return data
        parts = [data]
        while chunk := os.read(fd, 1 << 22):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


_FIRST_READ = 1 << 18


def scan_file(path: str) -> FileScan:
    try:
        data = _read(path)
    except OSError as exc:
        return FileScan(path=path, error=f"cannot read file: {exc.strerror or exc}")
    return scan_bytes(path, data)


def _scan_chunk(paths: list[str]) -> list[FileScan]:
    return [scan_file(p) for p in paths]


# Below this many files a process pool costs more than it saves.
_PARALLEL_MIN_FILES = 400


def scan_all(paths: list[str], jobs: int | None = None) -> list[FileScan]:
    """Scan files, in worker processes when the tree is large."""
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(paths) < _PARALLEL_MIN_FILES:
        return _scan_chunk(paths)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # Interleaved slices balance big and small files across workers.
    slices = [paths[i::jobs * 4] for i in range(jobs * 4)]
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        results = list(pool.map(_scan_chunk, slices))
    by_path = {scan.path: scan for chunk in results for scan in chunk}
    return [by_path[p] for p in paths]
