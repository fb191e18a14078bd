"""What a run analyses: the byte scans of its files (`ScanTable`), the
relevance judgement made from them (or kept by the cache, or updated for the
files that changed), and which of the files that matter to parse up front
beside those analysed; any other is parsed when a name leads there.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily at run time
    from ..core.model import ModuleNamer
    from ..core.scan import FileScan
    from .cache import Cache
    from .relevance import Relevance
    from .run_io import SourceInput


# More changed files than this: judge the whole tree again rather than update.
_UPDATE_MAX_FILES = 50


def _kept_words(cache: Cache) -> Callable[[str], frozenset[bytes] | None] | None:
    """A language server's memory of the words each file names after a dot
    (a judgement again reads only the files that name a wanted one)."""
    from .cache import EditorCache

    return cache.attribute_words if isinstance(cache, EditorCache) else None


def _same_scan(before: FileScan | None, after: FileScan) -> bool:
    """Whether a changed file's scan says what it said before (then only the
    parts of its relevance that depend on its text can have changed)."""
    return before is not None and after.error is None and \
        (before.headers, before.aliases, before.imports, before.gradcheck) == \
        (after.headers, after.aliases, after.imports, after.gradcheck)


class ScanTable(Mapping[str, "FileScan"]):
    """The byte scans of a run's files by path. Those `take`n are scanned
    then (in worker processes when there are many), or read from the cache
    where the file is unchanged; any other is read from the cache when first
    asked for. A warm run with nothing changed asks for none."""

    def __init__(self, paths: list[str], cache: Cache | None, jobs: int | None,
                 texts: Mapping[str, bytes]) -> None:
        self._paths = paths
        self._cache = cache
        self._jobs = jobs
        self._texts = texts  # an editor's text of some files
        self._taken: dict[str, FileScan] = {}

    def take(self, paths: Iterable[str]) -> None:
        from ..core.scan import scan_all, scan_bytes

        missing = []
        for path in paths:
            if path in self._taken:
                continue
            cached = self._cache.scan(path) if self._cache is not None else None
            if cached is not None:
                self._taken[path] = cached
            else:
                missing.append(path)
        on_disk = [path for path in missing if path not in self._texts]
        scans = [scan_bytes(path, self._texts[path]) for path in missing
                 if path in self._texts] + scan_all(on_disk, self._jobs)
        for scan in scans:
            self._taken[scan.path] = scan
            if self._cache is not None:
                self._cache.store_scan(scan)

    def class_names(self, paths: Iterable[str]) -> set[str]:
        """The names of the classes these files define."""
        return {name for path in paths for name, _ in self[path].headers}

    def base_names(self, paths: Iterable[str]) -> set[str]:
        """The last parts of the bases of these files' classes (`ops.Scale`:
        `Scale`)."""
        return {base.rpartition(".")[2] for path in paths
                for _, bases in self[path].headers for base in bases}

    def unreadable(self) -> set[str]:
        """The files taken that could not be read (those not taken were
        read when they last changed)."""
        return {path for path, scan in self._taken.items() if scan.error is not None}

    def __getitem__(self, path: str) -> FileScan:
        if path not in self._taken:
            self.take([path])
        return self._taken[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


class _Scope:
    """The run's choice of files (a mixin of engine._Run): `_judge` which
    files matter, `_context` which of them to parse up front."""

    # The run's, read here.
    scan_tree: bool
    jobs: int | None
    cache: Cache | None
    texts: dict[str, bytes]
    module_names: ModuleNamer
    relevance: Relevance
    _by_path: dict[str, SourceInput]
    _gradchecked_seed: dict[str, Any] | None
    _gradcheck_role: str  # engine_parts': who computes the gradcheck answer

    def _init_scope(self) -> None:
        # An incremental run's (and a worker's): the files that matter but
        # were not parsed up front, and those among them known not to parse.
        self._context_paths: set[str] = set()
        self._broken_context: set[str] = set()

    def _judge(self, scans: ScanTable, references: bool,
               gradcheck: bool) -> Relevance:
        """The relevance of every file: from the cache while no file changed,
        updated for the changed files while their scans are the same, else
        judged again."""
        from .relevance import Relevance, judge

        paths = list(self._by_path)
        if self.cache is None:
            scans.take(paths)
            return judge(list(scans.values()), references=references, gradcheck=gradcheck,
                         module_names=self.module_names, jobs=self.jobs, texts=self.texts)
        cache = self.cache
        key = cache.relevance_key(paths, [references, gradcheck])
        stored, stats, unread = cache.relevance(key)
        relevance = None
        try:
            relevance = Relevance.from_json(stored) if stored is not None else None
        except (KeyError, TypeError, ValueError):
            pass  # damaged: judge again
        if relevance is not None:
            changed = [p for p in paths if cache.stat(p) != stats.get(p)]
            # Files that could not be read are read again (to say so again).
            scans.take(changed + [p for p in unread if p in self._by_path])
            if not changed:
                return relevance
            same = len(changed) <= _UPDATE_MAX_FILES and all(
                _same_scan(cache.previous_scan(p, stats.get(p)), scans[p]) for p in changed)
            relevance = relevance.updated([scans[p] for p in changed], self.texts) \
                if same else None
        if relevance is None:
            scans.take(paths)
            relevance = judge(list(scans.values()), references=references, gradcheck=gradcheck,
                              module_names=self.module_names, jobs=self.jobs, texts=self.texts,
                              words=_kept_words(cache))
        cache.store_relevance(key, relevance.to_json(), paths, sorted(scans.unreadable()))
        return relevance

    def _context(self, analysed: set[str], relevant: list[str], scans: ScanTable,
                 broken: frozenset[str] | set[str]) -> set[str]:
        """The files to parse up front beside those `analysed`: those deriving
        from their classes and, when an analysed file may define a Function
        and no stored answer holds, those calling gradcheck. Any other file
        that matters is parsed when a name leads to it."""
        self._broken_context = set(broken) - analysed
        self._context_paths = set(relevant) - analysed
        defined = scans.class_names(analysed) & self.relevance.candidates
        context = {path for path in self._context_paths if scans.base_names([path]) & defined}
        if self.scan_tree and self._gradchecked_seed is None and (
                self._gradcheck_role == "answer" or self._gradcheck_role == "own" and any(
                    p in self.relevance.defining and "AGF301" in self._by_path[p].codes
                    for p in analysed)):
            context |= self.relevance.gradchecking & self._context_paths
        return context - self._broken_context
