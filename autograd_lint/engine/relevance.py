"""Which files of a run can matter, decided from their byte scans.

A file matters when it may define or register a custom operator (it
mentions torch.library's words: scan.mentions_ops), or a custom Function (a class whose base is
torch's Function, an alias of it, or a name already found to denote one: a
fixpoint over every class header of the tree and the aliases of those names),
may use one defined elsewhere (it imports such a name, or binds a module of
the project and names one as an attribute, `pkg.ops.MyFn`), or calls
gradcheck (for AGF301). The judgement over-approximates, by names only: the
engine decides on real syntax trees, so a file let through by mistake costs
time, never a wrong finding. It follows every way the engine itself resolves
a name (imports, re-exports, `Alias = ops.MyFn`, attribute paths), so the
findings never depend on it; a test compares runs with and without it.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..core.scan import (
    NAMES_SEARCHED_ONE_BY_ONE,
    REGISTRATION_WORDS,
    FileScan,
    checks_gradients,
    class_headers,
)

if TYPE_CHECKING:
    from ..core.model import ModuleNamer

def read_source(path: str, texts: Mapping[str, bytes] | None) -> bytes | None:
    """A file's bytes: an editor's text where `texts` holds one, else the
    disk's (None if it cannot be read; of a notebook, its code cells), its
    lines ending in "\\n" as the scan's do (the searches here read lines)."""
    from ..core.notebooks import scanned_source
    from ..core.scan import newlines_as_lf, read_file

    text = texts.get(path) if texts else None
    data = text if text is not None else read_file(path)
    return newlines_as_lf(scanned_source(path, data)) if data is not None else None


_FUNCTION_CLASSES = frozenset({"Function", "InplaceFunction"})
# First components of dotted bases that lead to torch's Function class.
_TORCH_PREFIXES = frozenset({"torch", "autograd", "function"})

_IMPORT = re.compile(r"^[ \t\f]*(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+\w)", re.M)
_ASSIGNMENT = re.compile(r"^\w+[ \t]*(?::[^=\n]+)?=[ \t]*[\w.]+[ \t]*$")
# A Function applied (`Fn.apply(...)`, `run = self.Fn.apply`): what its calls
# pass decides facts (analysis/apply_calls.py), read from the kept statements.
_APPLIED = re.compile(r"\.apply\b")
_REFERENCE = re.compile(
    r"(?<!\w)([A-Z_]\w*)\s*\(|([A-Za-z_]\w*)\.(?:apply|forward|backward|vjp|jvp)\b")
_FIRST_WORD = re.compile(r"\s*(\w+)")
_DEFINITION = re.compile(r"^[ \t\f]*(?:async[ \t]+)?(?:def|class)[ \t\f]", re.M)


def is_function_base(expression: str, aliases: frozenset[str], candidates: Iterable[str]) -> bool:
    """Whether a base expression may name a Function class."""
    head, _, last = expression.rpartition(".")
    if last in _FUNCTION_CLASSES:
        return not head or head.split(".", 1)[0] in _TORCH_PREFIXES | aliases
    return expression in aliases or last in candidates


@dataclass
class Relevance:
    candidates: frozenset[str]  # class names that may be Functions
    defining: frozenset[str]  # paths of files that may define one
    referencing: frozenset[str]  # paths of files that may refer to one
    gradchecking: frozenset[str]  # paths of files that call gradcheck
    references_wanted: bool
    gradcheck_wanted: bool
    reach: dict[str, frozenset[str]]  # per path: candidate names the file can use
    # What the content of each file (beyond its scan) added, so that a file
    # edited without changing its scan can be judged again on its own (see
    # `updated`): the names it reaches as attributes, the aliases it binds;
    # and the files searched for attributes, the module name parts.
    dotted: dict[str, frozenset[str]] = field(default_factory=dict)
    aliases: dict[str, frozenset[str]] = field(default_factory=dict)
    binding: frozenset[str] = frozenset()
    leaves: frozenset[str] = frozenset()

    def matters(self, path: str) -> bool:
        return path in self.defining or path in self.referencing or path in self.gradchecking

    def updated(self, scans: list[FileScan],
                texts: Mapping[str, bytes] | None = None) -> Relevance | None:
        """The relevance after these files changed while their scans stayed
        the same (the caller compares them): their attribute references are
        searched again; None when an alias they bind appeared or went, which
        may change which names are Functions (judge the tree again). `texts`:
        an editor's text of some files, read instead of the disk's."""
        reach = dict(self.reach)
        dotted = dict(self.dotted)
        for scan in scans:
            path = scan.path
            found = _dotted_chunk([path], self.candidates, self.leaves, texts).get(
                path, frozenset()) if path in self.binding else frozenset()
            kept = reach.get(path, frozenset()) - dotted.get(path, frozenset())
            # A name reached by import or header stays reached (the scan is the same).
            now = kept | found
            bound = frozenset(aliases_in({path: set(now)}, texts).get(path, ()))
            if bound != self.aliases.get(path, frozenset()):
                return None
            for table, value in ((reach, now), (dotted, found)):
                if value:
                    table[path] = value
                else:
                    table.pop(path, None)
        referencing = frozenset(p for p in reach if p not in self.defining) \
            if self.references_wanted else frozenset()
        return replace(self, referencing=referencing, reach=reach, dotted=dotted)

    def to_json(self) -> dict[str, object]:
        return {
            "candidates": sorted(self.candidates), "defining": sorted(self.defining),
            "referencing": sorted(self.referencing), "gradchecking": sorted(self.gradchecking),
            "references_wanted": self.references_wanted,
            "gradcheck_wanted": self.gradcheck_wanted,
            "reach": {path: sorted(names) for path, names in self.reach.items()},
            "dotted": {path: sorted(names) for path, names in self.dotted.items()},
            "aliases": {path: sorted(names) for path, names in self.aliases.items()},
            "binding": sorted(self.binding), "leaves": sorted(self.leaves),
        }

    @classmethod
    def from_json(cls, data: dict) -> Relevance:
        """The inverse of to_json; raises on anything malformed."""
        def strings(value: object) -> frozenset[str]:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("malformed relevance")
            return frozenset(value)

        def tables(value: object) -> dict[str, frozenset[str]]:
            if not isinstance(value, dict):
                raise ValueError("malformed relevance")
            return {str(path): strings(names) for path, names in value.items()}

        return cls(strings(data["candidates"]), strings(data["defining"]),
                   strings(data["referencing"]), strings(data["gradchecking"]),
                   bool(data["references_wanted"]), bool(data["gradcheck_wanted"]),
                   tables(data["reach"]), tables(data["dotted"]), tables(data["aliases"]),
                   strings(data["binding"]), strings(data["leaves"]))


# A file's words after a dot (`.Name`), None if it cannot be read: where one
# is given, files naming none of the wanted names are not read at all.
AttributeWords = Callable[[str], "frozenset[bytes] | None"]


def judge(scans: list[FileScan], *, references: bool, gradcheck: bool,
          module_names: ModuleNamer | None = None, jobs: int | None = None,
          texts: Mapping[str, bytes] | None = None,
          words: AttributeWords | None = None) -> Relevance:
    """Relevance of every scanned file (see the module docstring); `texts`:
    an editor's text of some files, read instead of the disk's; `words`:
    the words each file names after a dot, as a language server keeps them.

    Names that may denote a Function grow to a fixpoint: classes whose base is
    one, then aliases (`Legacy = ops.Scale`) found in the files that reach
    one, which may in turn be the base of further classes or be imported."""
    names: set[str] = set()  # classes that may be Functions, and aliases of them
    headers = _Headers(scans)
    new = headers.derived(headers.direct)
    reach: dict[str, set[str]] = {}
    dotted: dict[str, set[str]] = {}
    bound: dict[str, set[str]] = {}
    targets: _ImportTargets | None = None
    binding: list[str] = []  # files that bind a project module: `pkg.sub.ops.MyFn`
    while True:
        if not new:
            break
        names |= new
        if targets is None:
            targets = _ImportTargets(scans, module_names)
            # (Even without reference rules: an alias defined through an
            # attribute, `Base = pkg.ops.Scale`, may be the base of a class.)
            binding = [scan.path for scan in scans if targets.binds_module(scan)]
        gained: dict[str, set[str]] = {}
        for scan in scans:
            got = targets.imported(scan, new) | {n for n, _ in scan.headers if n in new}
            if got:
                gained[scan.path] = got
        for path, got in dotted_references(binding, frozenset(new), targets.leaves,
                                           jobs, texts, words).items():
            gained.setdefault(path, set()).update(got)
            dotted.setdefault(path, set()).update(got)
        for path, got in gained.items():
            reach.setdefault(path, set()).update(got)
        aliases: set[str] = set()
        for path, found in aliases_in(gained, texts).items():
            bound.setdefault(path, set()).update(found)
            aliases |= found
        aliases -= names
        new = headers.derived(aliases, names) | aliases
    frozen = frozenset(names)
    defining = frozenset(scan.path for scan in scans if scan.ops or any(
        name in frozen for name, _ in scan.headers))
    referencing = frozenset(p for p in reach if p not in defining) if references \
        else frozenset()
    gradchecking = frozenset(scan.path for scan in scans if gradcheck and scan.gradcheck)
    return Relevance(frozen, defining, referencing, gradchecking, references, gradcheck,
                     {path: frozenset(got) for path, got in reach.items()},
                     {path: frozenset(got) for path, got in dotted.items()},
                     {path: frozenset(got) for path, got in bound.items() if got},
                     frozenset(binding), targets.leaves if targets is not None else frozenset())


class _Headers:
    """Every class header of the tree, indexed by the last part of each base."""

    def __init__(self, scans: list[FileScan]) -> None:
        self.by_base: dict[str, list[str]] = {}  # last part of a base -> class names
        self.direct: set[str] = set()  # classes of torch's Function or a local alias of it
        for scan in scans:
            for name, bases in scan.headers:
                for base in bases:
                    if is_function_base(base, scan.aliases, ()):
                        self.direct.add(name)
                    self.by_base.setdefault(base.rpartition(".")[2], []).append(name)

    def derived(self, found: set[str], known: set[str] | frozenset[str] = frozenset()) -> set[str]:
        """`found` and every class deriving from one of them, transitively,
        leaving out what is already `known`."""
        result = set(found) - set(known)
        work = list(result)
        while work:
            for name in self.by_base.get(work.pop(), ()):
                if name not in result and name not in known:
                    result.add(name)
                    work.append(name)
        return result


class _ImportTargets:
    """Which names a file's imports can bring within reach.

    By name: `from M import Name` of a known name reaches it, whatever M in
    the tree (a re-export from any module counts), but not from a module the
    tree cannot hold (`from typing import Type` never reaches a Function of
    the tree named `Type`, as the engine would not resolve it there). By
    module: a file that binds a module of the project (`import pkg`, `from
    pkg import sub`) can reach any name through attributes (`pkg.sub.ops.MyFn`);
    those files are searched for `.Name` (see `dotted_references`)."""

    def __init__(self, scans: list[FileScan], module_names: ModuleNamer | None = None) -> None:
        import os

        from ..core.model import ModuleNamer

        self._module_name_for = module_names or ModuleNamer()
        self.modules: set[str] = set()  # every module and package of the tree
        leaves: set[str] = set()
        files_by_directory: dict[str, list[str]] = {}
        for scan in scans:
            directory, _, filename = scan.path.rpartition(os.sep)
            files_by_directory.setdefault(directory, []).append(filename)
        # Per directory, not per file: trees hold many files per package.
        # First parts of the absolute imports the engine may resolve into the
        # tree: its top modules, and every folder name (namespace packages:
        # `from src.ops import F` reaches `src/ops.py` without `__init__.py`).
        self._tops: set[str] = set()
        for directory, filenames in files_by_directory.items():
            self._tops.update(directory.split(os.sep))
            package = self._module_name_for.package_of_directory(directory)
            self.modules.update(".".join(package[:depth]) for depth in range(1, len(package) + 1))
            leaves.update(package)
            prefix = ".".join(package) + "." if package else ""
            stems = {name[:-3] if name.endswith(".py") else name.rsplit(".", 1)[0]
                     for name in filenames}
            stems.discard("__init__")
            self.modules.update(prefix + stem for stem in stems)
            leaves.update(stems)
        self.leaves = frozenset(leaves)
        self._tops.update(module.partition(".")[0] for module in self.modules)

    def imported(self, scan: FileScan, names: set[str]) -> set[str]:
        """The names imported by name (`from M import Name`) from modules
        the tree may hold."""
        return {name for module, name in scan.imports if name in names and (
            module.startswith(".") or module.partition(".")[0] in self._tops)}

    def binds_module(self, scan: FileScan) -> bool:
        """Whether the file binds a module of the project to a name."""
        package: str | None = None
        for module, name in scan.imports:
            if not name:
                if module.split(".", 1)[0] in self._tops:
                    return True
                continue
            if name not in self.leaves:
                continue  # `from M import name` binds no module of ours
            if module.startswith("."):
                if package is None:
                    package = self._package_of(scan.path)
                module = _absolute(module, package)
            parts = f"{module}.{name}".split(".")
            # Leading parts may be folders without `__init__.py` (namespace
            # packages): `megatron.core.ops` is the module `core.ops` there.
            if any(".".join(parts[first:]) in self.modules for first in range(len(parts) - 1)):
                return True
        return False

    def _package_of(self, path: str) -> str:
        name, is_package = self._module_name_for(path)
        return name if is_package else name.rpartition(".")[0]


def aliases_in(gained: dict[str, set[str]],
               texts: Mapping[str, bytes] | None = None) -> dict[str, set[str]]:
    """Per file, the names bound to one of the names it gained (`Legacy =
    ops.Scale`, `A = B = Scale`, annotated or not): they may denote a
    Function too."""
    by_path: dict[str, set[str]] = {}
    for path, names in gained.items():
        data = read_source(path, texts)
        if data is None:
            continue
        found = by_path.setdefault(path, set())
        words = {name.encode() for name in names}
        for match in _alias_lines(data, words):
            if match.group("value").rpartition(b".")[2] in words:
                found.update(t.decode("latin-1") for t in _TARGET.findall(match.group("targets")))
    return by_path


def _alias_lines(data: bytes, words: set[bytes]) -> Iterator[re.Match[bytes]]:
    """The lines of `data` that bind names to a dotted value (_ALIAS_LINE):
    around each occurrence of a few words, or all of them for many."""
    if len(words) > NAMES_SEARCHED_ONE_BY_ONE:
        yield from _ALIAS_LINES.finditer(data)
        return
    for word in words:
        start = data.find(word)
        while start >= 0:
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", start)
            match = _ALIAS_LINE.match(data[line_start: line_end if line_end >= 0 else len(data)])
            if match is not None:
                yield match
            start = data.find(word, start + len(word))


# `A = B: T = pkg.Name  # comment`: targets, then the value.
_ALIAS_LINE = re.compile(rb"[ \t]*(?P<targets>(?:[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=[ \t]*)+)"
                         rb"(?P<value>[A-Za-z_][\w.]*)[ \t]*(?:#.*)?\r?$")
_ALIAS_LINES = re.compile(rb"^" + _ALIAS_LINE.pattern, re.M)
_TARGET = re.compile(rb"([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=")


_DOTTED = re.compile(rb"\.[ \t]*([A-Za-z_]\w*)")
_AS_NAME = re.compile(rb"[ \t]as[ \t]+([A-Za-z_]\w*)")
_IDENTIFIER_END = re.compile(rb"[A-Za-z_0-9]")
# Below this many files a process pool costs more than it saves.
_PARALLEL_MIN_FILES = 400


def attribute_words(data: bytes) -> frozenset[bytes]:
    """The words a file names after a dot (`.Name`, `. Name`)."""
    return frozenset(_DOTTED.findall(data))


def dotted_references(paths: list[str], names: frozenset[str], leaves: frozenset[str],
                      jobs: int | None = None, texts: Mapping[str, bytes] | None = None,
                      words: AttributeWords | None = None) -> dict[str, frozenset[str]]:
    """For each file, the names it reaches as attributes of a module of the
    project: `ops.Name` where `ops` is a module's last part (`pkg.sub.ops`),
    a name bound with `as`, or a name assigned from a module (`m = pkg.ops`).
    (`sympy.Add` does not reach a Function named `Add`.)"""
    import os

    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if words is not None or jobs <= 1 or len(paths) < _PARALLEL_MIN_FILES:
        return _dotted_chunk(paths, names, leaves, texts, words)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    slices = [paths[i::jobs * 4] for i in range(jobs * 4)]
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    found: dict[str, frozenset[str]] = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        for part in pool.map(_dotted_chunk, slices, [names] * len(slices),
                             [leaves] * len(slices), [texts] * len(slices)):
            found.update(part)
    return found


def _dotted_chunk(paths: list[str], names: frozenset[str], leaves: frozenset[str],
                  texts: Mapping[str, bytes] | None = None,
                  words: AttributeWords | None = None) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    wanted = {name.encode() for name in names}
    module_parts = {leaf.encode("utf-8", "surrogateescape") for leaf in leaves}
    for path in paths:
        if words is not None and not wanted.intersection(words(path) or ()):
            continue
        data = read_source(path, texts)
        if data is None:
            continue
        hits = wanted.intersection(_DOTTED.findall(data))
        if not hits:
            continue
        owners = module_parts | set(_AS_NAME.findall(data))
        reached = {hit.decode() for hit in hits
                   if _owned_attribute(data, hit, owners, module_parts)}
        if reached:
            found[path] = frozenset(reached)
    return found


def _owned_attribute(data: bytes, name: bytes, owners: set[bytes],
                     module_parts: set[bytes]) -> bool:
    """Whether some `X.name` in the file has an X that may be a module of ours."""
    start = data.find(name)
    while start >= 0:
        owner = _owner_before(data, start)
        if owner is not None and (owner in owners or
                                  _assigned_a_module(data, owner, module_parts)):
            return True
        start = data.find(name, start + len(name))
    return False


def _owner_before(data: bytes, offset: int) -> bytes | None:
    """X in `X . name` ending just before offset, None if no attribute access."""
    index = offset - 1
    while index >= 0 and data[index] in b" \t":
        index -= 1
    if index < 0 or data[index] != 0x2E:  # "."
        return None
    index -= 1
    while index >= 0 and data[index] in b" \t":
        index -= 1
    end = index + 1
    while index >= 0 and _IDENTIFIER_END.match(data, index):
        index -= 1
    return data[index + 1: end] or None


def _assigned_a_module(data: bytes, owner: bytes, module_parts: set[bytes]) -> bool:
    """Whether the file binds owner to a dotted name ending in one of ours."""
    start = data.find(owner)
    while start >= 0:
        if start == 0 or not _IDENTIFIER_END.match(data, start - 1):
            match = _ASSIGNED.match(data, start + len(owner))
            if match is not None and match.group(1).rpartition(b".")[2] in module_parts:
                return True
        start = data.find(owner, start + len(owner))
    return False


_ASSIGNED = re.compile(rb"[ \t]*(?::[^=\n]*)?=[ \t]*([A-Za-z_][\w.]*)[ \t]*(?:#.*)?\r?$", re.M)


def _imports_only(chunk: str) -> bool:
    """An import statement, or a `try`/`if` block of imports (a fallback import,
    `if TYPE_CHECKING:`). Imports inside defs and classes belong to those."""
    match = _FIRST_WORD.match(chunk)
    first = match.group(1) if match is not None else ""
    if first in ("import", "from"):
        return True
    return first in ("try", "if", "with") and _IMPORT.search(chunk) is not None and \
        not _DEFINITION.search(chunk)


def _one_line(chunk: str) -> bool:
    newline = chunk.find("\n")
    return newline < 0 or not chunk[newline:].strip()


def _absolute(module: str, package: str) -> str:
    """`..ops` relative to package `a.b.c` is `a.b.ops`."""
    level = len(module) - len(module.lstrip("."))
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    rest = module[level:]
    return ".".join([*base, rest] if rest else base)


def statement_keeper(relevance: Relevance, path: str,
                     aliases: frozenset[str]) -> Callable[[str], bool]:
    """Which top-level statements of a large relevant file to parse."""
    candidates = relevance.candidates
    reachable = tuple(relevance.reach.get(path, ())) if relevance.references_wanted else ()
    # As a word: a reachable `Type` is not what `DataType` names.
    words = re.compile(r"\b(?:" + "|".join(map(re.escape, reachable)) + r")\b") \
        if reachable else None

    def keep(chunk: str) -> bool:
        if _imports_only(chunk):
            return True
        if _one_line(chunk) and _ASSIGNMENT.match(chunk.strip()):
            return True
        # Headers read as the scan reads them (which found the candidates).
        if "class" in chunk and any(
                is_function_base(base, aliases, candidates)
                for _, bases in class_headers(chunk.encode("utf-8", "surrogatepass"))
                for base in bases):
            return True
        if words is not None and any(name in chunk for name in reachable) and \
                words.search(chunk) is not None:
            return True
        if REGISTRATION_WORDS.search(chunk) is not None:
            return True  # a custom op's definition or registration (analysis/op_model.py)
        if "apply" in chunk and _APPLIED.search(chunk) is not None:
            return True
        return relevance.gradcheck_wanted and checks_gradients(chunk, path)

    return keep
