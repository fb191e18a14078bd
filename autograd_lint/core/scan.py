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

from .files import is_notebook, is_test_path, read_regular_file

# A class header up to its bases, `class Name(` or `class Name[T](` (type
# parameters, Python 3.12+), with whitespace between the words as the parser
# reads it: spaces, tabs, form feeds, backslash continuations (and vertical
# tabs: a syntax error, but the file of a Function must be found to say so).
_SPACE = rb"(?:[ \t\f\v]|\\(?:\r\n?|\n))"
_HEADER = re.compile(rb"class" + _SPACE + rb"+(\w+)" + _SPACE + rb"*([\[(])")
_SPACES = re.compile(_SPACE + rb"*")
# What may come before `class` (a line's start, after its indentation).
_BEFORE_CLASS = frozenset(b" \t\n\f\v;")
# Bases end at ")" (or at ":" in a header broken by a missing ")": the file
# still matters, to report that it does not parse). Most hold no bracket and
# no comment; the others are read token by token (see _bracketed).
_PLAIN_BASES = re.compile(rb"([^()\[\]{}:#]*)[):]")
_BRACKET_TOKEN = re.compile(rb"[^()\[\]{}:#]+|#[^\n]*|[\s\S]")
_BRACKET_DEPTH = {ord("("): 1, ord("["): 1, ord("{"): 1, ord(")"): -1, ord("]"): -1,
                  ord("}"): -1}
# Headers longer than this are read no further (a bracket never closed).
_MAX_HEADER_BYTES = 10_000
_BASE = re.compile(rb"[A-Za-z_][\w.]*")
# On a line mentioning Function/autograd: names bound to torch's Function
# classes or modules (`import ... Function as F`, `F = torch.autograd.Function`,
# `import torch.autograd as ag`).
# (Form feeds are whitespace to the parser, as spaces and tabs are.)
_ALIAS = re.compile(rb"\b(?:Function|InplaceFunction|autograd|function)\s+as\s+(\w+)"
                    rb"|^[ \t\f]*(\w+)\s*=\s*[\w.]*\b(?:Function|autograd)\b\s*$")
# Names bound to torch itself (`import torch as th`, `th = torch`): a base
# `th.autograd.Function` reaches torch's Function through them (RULES.md).
_TORCH_ALIAS = re.compile(rb"\btorch\s+as\s+(\w+)|^[ \t\f]*(\w+)\s*=\s*torch\s*$")
_FROM_IMPORT = re.compile(
    rb"[ \t\f]*from[ \t\f]+([\w.]+)[ \t\f]+(import)[ \t\f]+(\([^)]*\)|[^\n#;]*)")
_IMPORT = re.compile(rb"[ \t\f]*import[ \t\f]+([^\n#;]*)")
_NAME = re.compile(rb"[A-Za-z_][\w.]*")
_GRADCHECK_CALL = re.compile(rb"\b(?:gradcheck|gradgradcheck|opcheck)[ \t]*\(")
# A reference test (AGF301) differentiates (`.backward(`, `autograd.grad(`)
# and compares values. In a test file the comparison may be a plain `assert`
# or a helper of the project under any name, so differentiating is enough to
# look; so is handing `Fn.apply` on (to a helper that gradchecks it). In a
# library module only its `test*` defs and `__main__` block hold checks: it
# must name one, and a comparison. Words found with `in` (a hot path: every
# file), over-approximate: the syntax tree decides.
DIFFERENTIATE_WORDS = (".backward", "grad(")
HANDED_WORDS = (".apply",)
COMPARE_WORDS = ("close", "qual", "similar", "less", "Less", "greater", "Greater", "snr",
                 "_error(", "assert")
IN_MODULE_WORDS = ("__main__", "def test", "def _test")
_GRADCHECK_TEXT = re.compile(_GRADCHECK_CALL.pattern.decode())
_WORDS = {
    bytes: tuple(tuple(w.encode() for w in words)
                 for words in (DIFFERENTIATE_WORDS, HANDED_WORDS, COMPARE_WORDS, IN_MODULE_WORDS)),
    str: (DIFFERENTIATE_WORDS, HANDED_WORDS, COMPARE_WORDS, IN_MODULE_WORDS),
}


# Past this many names, one pass over a file's lines beats a search per name
# (a file defining thousands of Functions gains thousands of names): the
# engine's relevance and the rules' call sites search names this way.
NAMES_SEARCHED_ONE_BY_ONE = 8


def checks_gradients(text: str | bytes, path: str) -> bool:
    """Whether source text of the file at `path` (its bytes, or a chunk of
    its text) may check gradients: call gradcheck/gradgradcheck/opcheck, or
    differentiate and compare as a reference test does (in a test file, or
    in a library module's `test*` def or `__main__` block)."""
    if _calls_gradcheck(text):
        return True
    differentiates, handed, compares, in_module = _WORDS[type(text)]
    differentiating = any(word in text for word in differentiates)
    if not differentiating and not any(word in text for word in handed):
        return False
    if is_test_path(path):
        return True
    return differentiating and any(word in text for word in compares) and \
        any(word in text for word in in_module)


def _calls_gradcheck(text: str | bytes) -> bool:
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
    ops: bool = False  # may define or register custom operators (torch.library)


def _occurrences(data: bytes, word: bytes):
    start = data.find(word)
    while start >= 0:
        yield start
        start = data.find(word, start + len(word))


def _line_around(data: bytes, offset: int) -> bytes:
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    return data[start: end if end >= 0 else len(data)]


def class_headers(data: bytes) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(class name, base expressions) of each class header in source bytes
    whose lines end in "\\n" (see newlines_as_lf)."""
    found = []
    for start in _occurrences(data, b"class"):
        if start == 0 or data[start - 1] in _BEFORE_CLASS:
            match = _HEADER.match(data, start)
            bases = _bases(data, match) if match is not None else None
            if bases is not None:
                words = tuple(w.decode("latin-1") for w in _BASE.findall(bases))
                found.append((match.group(1).decode("latin-1"), words))  # type: ignore[union-attr]
    return tuple(found)


def _bases(data: bytes, header: re.Match[bytes]) -> bytes | None:
    """The text of a header's bases, comments left out; None if none follow."""
    position = header.end()
    if header.group(2) == b"[":  # type parameters: `[T: (int, str)]`
        end = _bracketed(data, position, stop_at_colon=False)[0]
        if end is None:
            return None
        position = _SPACES.match(data, end).end()  # type: ignore[union-attr]
        if data[position:position + 1] != b"(":
            return None
        position += 1
    plain = _PLAIN_BASES.match(data, position)
    if plain is not None:
        return plain.group(1)
    return _bracketed(data, position, stop_at_colon=True)[1]


def _bracketed(data: bytes, position: int, *, stop_at_colon: bool) -> tuple[int | None, bytes]:
    """From inside an open bracket at `position`: the offset after the
    bracket closing it (None if none does before the header's length runs
    out), and the text before it without comments. With `stop_at_colon`, a
    colon outside nested brackets ends it too (a missing ")")."""
    depth = 0
    parts = []
    limit = min(len(data), position + _MAX_HEADER_BYTES)
    for token in _BRACKET_TOKEN.finditer(data, position, limit):
        first = data[token.start()]
        depth += _BRACKET_DEPTH.get(first, 0)
        if depth < 0 or (first == ord(":") and depth == 0 and stop_at_colon):
            return token.end(), b"".join(parts)
        if first != ord("#"):
            parts.append(token.group())
    return None, b"".join(parts)


def _aliases(data: bytes) -> frozenset[str]:
    found: set[str] = set()
    for word, pattern in ((b"Function", _ALIAS), (b"autograd", _ALIAS),
                          (b"torch", _TORCH_ALIAS)):
        for offset in _occurrences(data, word):
            if word == b"torch" and data[offset + 5: offset + 6] not in _SPACE_OR_END:
                continue  # `torch.`, `torch_`: every `_TORCH_ALIAS` match has space or an end there
            for match in pattern.finditer(_line_around(data, offset)):
                found.add((match.group(1) or match.group(2)).decode("latin-1"))
    return frozenset(found)


# What may follow `torch` where `_TORCH_ALIAS` matches (b"": the end of the file).
_SPACE_OR_END = frozenset({b" ", b"\t", b"\r", b"\f", b"\v", b"\n", b""})


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


def newlines_as_lf(data: bytes) -> bytes:
    """The bytes with every line ending "\\n": the parser ends lines at
    "\\r\\n" and at a lone "\\r" (old Mac files) too, the scan only at "\\n"."""
    if b"\r" not in data:
        return data
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def scan_bytes(path: str, data: bytes) -> FileScan:
    if is_notebook(path):
        from .notebooks import scanned_source

        data = scanned_source(path, data)  # its code cells
    encoding = wide_encoding(data)
    if encoding is not None:  # scan its text, so that such a file is not skipped
        try:
            data = data.decode(encoding).encode("utf-8")
        except UnicodeError:
            pass
    data = newlines_as_lf(data)
    mentions = b"Function" in data or b"autograd" in data
    return FileScan(
        path=path,
        headers=class_headers(data),
        aliases=_aliases(data) if mentions else frozenset(),
        imports=_imports(data),
        gradcheck=checks_gradients(data, path),
        ops=mentions_ops(data),
    )


# A line that defines, registers or aliases a custom op names one of these
# (a registration helper too: `direct_register_custom_op(..., fake_impl=...)`);
# a file that names one, and torch, may define or register ops.
_REGISTRATION_LITERALS = ("custom_op", "triton_op", "register_fake", "register_autograd",
                          "impl_abstract", ".define(", "Library(", ".impl(", "library.impl",
                          "mutates_args", "fake_impl")
REGISTRATION_WORDS = re.compile("|".join(re.escape(word) for word in _REGISTRATION_LITERALS))
# Substring tests, one per word: faster over a file's bytes than the
# alternation (which the regular-expression engine tries at every offset).
_REGISTRATION_BYTES = tuple(word.encode() for word in _REGISTRATION_LITERALS)


def mentions_ops(data: bytes) -> bool:
    return b"torch" in data and any(word in data for word in _REGISTRATION_BYTES)


def text_mentions_ops(text: str) -> bool:
    """`mentions_ops` of a decoded text (no encoding on the way)."""
    return "torch" in text and REGISTRATION_WORDS.search(text) is not None


def read_file(path: str) -> bytes | None:
    """The bytes of a file, None if it cannot be read. (os.read: the io
    stack's buffered file objects cost more than the read itself for the
    small files that make up most trees.)"""
    try:
        return _read(path)
    except OSError:
        return None


def _read(path: str) -> bytes:
    return read_regular_file(path)


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
