"""What a run remembers: with a cache that keeps results, which files must
be analysed again (changed, or reading a changed file, or touched by what
no stored read can show) and which stored findings stand, the gradcheck
answer while the files it was computed from are unchanged, and what is
stored for the next run. The store itself (keys, digests, files) is
cache.py's.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ..core.findings import Finding, sort_findings

if TYPE_CHECKING:
    from ..core.project import Project
    from .cache import Cache
    from .relevance import Relevance
    from .run_io import LintResult, SourceInput
    from .scope import ScanTable


class _Incremental:
    """The run's memory (a mixin of engine._Run): `_analyse_incrementally`
    has the run's `_analyse_files` analyse only the stale files."""

    # The run's, read here.
    scan_tree: bool
    prefilter: bool
    cache: Cache | None
    relevance: Relevance
    result: LintResult
    project: Project | None
    _by_path: dict[str, SourceInput]
    _file_findings: dict[str, list[Finding]]
    _reads: dict[str, set[str]]
    _gradchecked: tuple[set[tuple[str, str]], frozenset[str]] | None

    def _init_incremental(self) -> None:
        # Which Functions gradcheck exercises as an earlier run found it
        # (while none of the files it was computed from changed).
        self._gradchecked_seed: dict[str, Any] | None = None

    def _analyse_incrementally(self, scans: ScanTable, relevant: list[str],
                               reported: set[str], everything: set[str] | None) -> None:
        """Analyse the files whose stored results do not stand (all of them
        when one has no sound stored result), take the stored findings of
        the others, and store what the next run may take."""
        assert self.cache is not None
        key = self.cache.run_key(self._run_settings())
        records, facts = self.cache.file_results(key)
        stale = self._stale(relevant, records, scans)
        if stale is None:
            self._analyse_files(scans, relevant, everything)
        elif stale & reported:
            self._analyse_stale(scans, relevant, stale & reported, records, facts)
        # A context file's record holds its digest (its changes make the
        # files deriving from its classes stale), never findings or reads.
        self._file_findings.update((p, []) for p in relevant if p not in reported)
        self.result.findings = sort_findings(
            [finding for path in relevant for finding in self._file_findings.get(path, ())])
        self._store(key, relevant, records, stale, facts)
        self.cache.flush()

    def _analyse_stale(self, scans: ScanTable, relevant: list[str], stale: set[str],
                       records: dict[str, Any], facts: dict[str, Any]) -> None:
        """An incremental run: the stale files, with what the stored results
        of the others say (the gradcheck answer while it holds, the files
        that do not parse)."""
        seed = facts.get("gradchecked")
        if self.scan_tree and not any(scans[p].gradcheck for p in stale) and \
                self._still_holds(seed):
            self._gradchecked_seed = seed
        broken = {p for p in relevant if p not in stale and p in records and any(
            item.get("code") == "AGF000" for item in records[p]["findings"])}
        self._analyse_files(scans, relevant, stale, broken)

    def _still_holds(self, seed: object) -> bool:
        """Whether a stored gradcheck answer is sound and none of the files
        it was computed from changed."""
        assert self.cache is not None
        return isinstance(seed, dict) and isinstance(seed.get("reads"), dict) and \
            isinstance(seed.get("keys"), list) and \
            all(isinstance(k, list) and len(k) == 2 for k in seed["keys"]) and \
            all(self.cache.digest(path) == value for path, value in seed["reads"].items())

    def _run_settings(self) -> dict[str, object]:
        """What every file's findings depend on besides the files read: the
        settings, the tree's file list (a new file may take a module name an
        import resolved to before) and the names that may be Functions."""
        names = "\0".join(self._by_path).encode("utf-8", "surrogateescape")  # any file name
        tree = hashlib.blake2b(names, digest_size=16).hexdigest()
        return {"scan_tree": self.scan_tree, "prefilter": self.prefilter, "tree": tree,
                "candidates": sorted(self.relevance.candidates)}

    def _file_settings(self, path: str) -> list[object]:
        source = self._by_path[path]
        return [source.display, sorted(source.codes), source.explicit, source.target_torch]

    def _stale(self, relevant: list[str], records: dict[str, Any],
               scans: ScanTable) -> set[str] | None:
        """The files to analyse again: changed, or reading a changed file;
        None when every file must be (one has no sound stored result). The
        stored findings of the others are taken."""
        assert self.cache is not None
        digest = self.cache.digest
        stale: set[str] = set()
        changed: set[str] = set()
        for path in relevant:
            record = records.get(path)
            findings = self.cache.findings(record.get("findings")) \
                if isinstance(record, dict) and isinstance(record.get("reads"), dict) else None
            if findings is None:
                return None
            if record.get("settings") != self._file_settings(path) or \
                    record.get("digest") != digest(path):
                changed.add(path)
            elif any(digest(read) != value for read, value in record["reads"].items()):
                stale.add(path)
            else:
                self._file_findings[path] = findings
        if not changed:
            return stale
        from ..core.project import GRADCHECK_READS

        # What no stored read can show: a changed file that now derives from
        # a class of another file (which may now have subclasses), or that
        # now calls gradcheck (which may now exercise any Function).
        # (Only custom Functions have subclasses that matter: by name, candidates.)
        bases = scans.base_names(changed) & self.relevance.candidates
        gradchecks = any(scans[path].gradcheck for path in changed)
        for path in relevant:
            if scans.class_names([path]) & bases or \
                    (gradchecks and GRADCHECK_READS in records[path]["reads"]):
                stale.add(path)
        return stale | changed

    def _store(self, key: str, relevant: list[str], records: dict[str, Any],
               stale: set[str] | None, facts: dict[str, Any]) -> None:
        """Keep each analysed file's findings and reads (not after an internal
        error in it: that file is analysed again next time)."""
        assert self.cache is not None
        if stale is not None and not stale and records.keys() == set(relevant) and \
                not self.cache.digests_changed:
            return  # nothing analysed, nothing dropped: what is stored stands
        failed = {display for display, _ in self.result.errors}
        stored: dict[str, object] = {}
        for path in relevant:
            if stale is not None and path not in stale:
                stored[path] = records[path]
                continue
            if self._by_path[path].display in failed or path not in self._file_findings:
                continue
            reads = {read: self.cache.digest(read) for read in sorted(self._reads.get(path, ()))}
            stored[path] = {
                "digest": self.cache.digest(path), "settings": self._file_settings(path),
                "reads": reads,
                "findings": [f.to_json(dynamic=True) for f in self._file_findings[path]],
            }
        computed = self._gradchecked if self.project is None else \
            self.project.cache.get("gradchecked")
        if computed is not None and self._gradchecked_seed is None:
            keys, reads = computed
            facts = {**facts, "gradchecked": {
                "keys": sorted(map(list, keys)),
                "reads": {read: self.cache.digest(read) for read in sorted(reads)}}}
        self.cache.store_file_results(key, stored, facts)
