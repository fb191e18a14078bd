"""The on-disk cache of a project: `.autograd_lint_cache/` at its root (or
`--cache-dir`).

Three layers:

- byte scans of every file, reused while a file's size, mtime and inode are
  unchanged, and read only for files whose stat changed since the relevance
  was judged (a warm run with nothing changed reads none);
- the relevance of the tree's files, reused while no file's stat changed
  (and updated for the few that changed while their scans say the same);
- the findings of each file that matters, with the content hashes of the
  files its analysis read (its own, the modules it imports from, bases,
  helpers, the files that derive from its Functions or gradcheck them). A
  run re-analyses only the files whose own or read content changed. The run
  settings, the tree's file list, the names that may be Functions and the
  linter's own code key the whole layer (upgrading or editing the linter
  never serves stale results). Content hashes are kept with the file's stat
  and reused while it is unchanged, once the file is two seconds old (a
  rewrite within the clock's resolution can keep the stat).

The language server uses `EditorCache`: the stored scans, then its own
updates kept in memory (an unsaved buffer's text is not the file's).

Everything is JSON: a cache directory may come with a checkout, and loading
pickle from it could run code, which static mode never does. Any failure to
read or write the cache is ignored: the cache only ever saves time.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import __version__
from .files import write_atomically
from .findings import Finding, Fix
from .scan import FileScan

CACHE_DIR = ".autograd_lint_cache"
# A file's stat vouches for its content hash once it is this old (ns).
_SETTLED_NS = 2_000_000_000
_FORMAT = 1


def _stat_key(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def _code_fingerprint() -> str:
    """The linter's own code: its version and the mtimes of its modules."""
    package = Path(__file__).resolve().parent
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    for directory in (package, package / "analysis", package / "checkers"):
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                digest.update(f"{entry.path}:{entry.stat().st_mtime_ns}".encode())
    return digest.hexdigest()


def cache_directory(root: Path, given: str | None = None) -> Path:
    """Where a project's cache lives: `given` (--cache-dir), else
    AUTOGRAD_LINT_CACHE_DIR, else in the project's root."""
    return Path(given or os.environ.get("AUTOGRAD_LINT_CACHE_DIR") or root / CACHE_DIR)


def make_cache_directory(directory: Path) -> None:
    """Create a cache directory that git ignores (raises OSError)."""
    directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by autograd-lint\n*\n", encoding="utf-8")


def _content_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.blake2b(handle.read()).hexdigest()
    except OSError:
        return None


_REQUIRED = {"path": str, "line": int, "column": int, "code": str, "name": str,
             "severity": str, "message": str}


def _finding(item: Any) -> Finding:
    """A finding read back from JSON, refusing anything malformed."""
    if not isinstance(item, dict) or any(not isinstance(item.get(key), kind)
                                         for key, kind in _REQUIRED.items()):
        raise ValueError("malformed cached finding")
    fix = item.pop("fix", None)
    return Finding(**item, fix=None if fix is None else Fix.from_json(fix))


class Cache:
    """Reads and writes one project's cache directory."""

    # Whether runs keep and reuse the per-file findings (the third layer).
    keeps_results = True

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._code = _code_fingerprint()
        self._texts: Mapping[str, bytes] = {}  # an editor's text of some files
        self._stored_scans: dict[str, Any] | None = None  # read on first use
        self._scans_changed = False
        self._previous: dict[str, Any] = {}  # entries replaced in this run
        self._stats: dict[str, list[Any] | None] = {}  # stat keys taken in this run
        self._digests: dict[str, str | None] = {}  # content hashes known in this run
        # Content hashes stored by an earlier run, with the stat of the file
        # then, and those to store: a file whose stat is unchanged is not read.
        self._stored_digests: dict[str, Any] = {}
        self._digests_to_store: dict[str, list[Any]] = {}
        self.digests_changed = False
        # Whether a file parses whole, by path, with the stat it had then
        # (kept for the life of this object: one run, or a language server's).
        self._parses: dict[str, tuple[list[Any] | None, bool]] = {}

    def begin_run(self, texts: Mapping[str, bytes]) -> None:
        """A run starts: files may have changed since the last one, and
        `texts` stand for some files (an editor's buffers): their stat is
        their text's hash, never a stat of the file on disk."""
        self._texts = texts
        self._stats.clear()
        self._digests.clear()
        self._previous.clear()

    def stat(self, path: str) -> list[Any] | None:
        """The file's (size, mtime, inode), taken once per run."""
        if path not in self._stats:
            text = self._texts.get(path)
            self._stats[path] = _stat_key(path) if text is None else \
                ["text", hashlib.blake2b(text).hexdigest()]
        return self._stats[path]

    def parses(self, path: str) -> bool | None:
        """Whether the file, as it is now, parses whole (None: not known)."""
        known = self._parses.get(path)
        return known[1] if known is not None and known[0] == self.stat(path) else None

    def store_parses(self, path: str, parses: bool) -> None:
        self._parses[path] = (self.stat(path), parses)

    # -- scans -----------------------------------------------------------------

    @property
    def _scans(self) -> dict[str, Any]:
        """The stored scans by path (a warm run with nothing changed never
        reads them)."""
        if self._stored_scans is None:
            files = self._load("scans.json").get("files", {})
            self._stored_scans = files if isinstance(files, dict) else {}
        return self._stored_scans

    def scan(self, path: str) -> FileScan | None:
        entry = self._scans.get(path)
        if not isinstance(entry, dict) or entry.get("stat") != self.stat(path):
            return None
        return self._scan_of(path, entry)

    def previous_scan(self, path: str, stat: object) -> FileScan | None:
        """The scan stored before this run rescanned the file, if it was
        taken of the file with that stat."""
        entry = self._previous.get(path)
        if not isinstance(entry, dict) or entry.get("stat") != stat:
            return None
        return self._scan_of(path, entry)

    @staticmethod
    def _scan_of(path: str, entry: dict[str, Any]) -> FileScan | None:
        try:
            data = entry["scan"]
            return FileScan(
                path=path,
                headers=tuple((str(name), tuple(map(str, bases)))
                              for name, bases in data["headers"]),
                aliases=frozenset(map(str, data["aliases"])),
                imports=tuple((str(module), str(name)) for module, name in data["imports"]),
                gradcheck=bool(data["gradcheck"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # a damaged entry: scan the file again

    def store_scan(self, scan: FileScan) -> None:
        if scan.error is not None:
            return
        # The stat taken before the file was read: a change made meanwhile
        # shows as a different stat next time.
        if scan.path in self._scans:
            self._previous[scan.path] = self._scans[scan.path]
        self._scans[scan.path] = {"stat": self.stat(scan.path), "scan": {
            "headers": [[name, list(bases)] for name, bases in scan.headers],
            "aliases": sorted(scan.aliases),
            "imports": sorted([module, name] for module, name in scan.imports),
            "gradcheck": scan.gradcheck,
        }}
        self._scans_changed = True

    # -- relevance -----------------------------------------------------------------
    def relevance_key(self, paths: list[str], settings: object) -> str:
        """A key for the relevance of a file set: the file list, the settings
        and the linter (the files' stats are stored beside it)."""
        digest = hashlib.blake2b(f"{_FORMAT}:{self._code}".encode(), digest_size=20)
        digest.update(json.dumps(settings, sort_keys=True).encode())
        digest.update("\0".join(sorted(paths)).encode())  # the set: any order
        return digest.hexdigest()

    def relevance(self, key: str) -> tuple[dict[str, Any] | None, dict[str, Any], list[str]]:
        """The stored relevance under `key`, the stat of each file when it
        was judged, and the files that could not be read then."""
        data = self._load("relevance.json")
        unread = data.get("unreadable")
        if data.get("key") != key or not isinstance(data.get("stats"), dict) or \
                not isinstance(unread, list) or not all(isinstance(p, str) for p in unread):
            return None, {}, []
        return data.get("relevance"), data["stats"], unread

    def store_relevance(self, key: str, relevance: dict[str, Any], paths: list[str],
                        unreadable: list[str]) -> None:
        stats = {path: self.stat(path) for path in paths}
        self._write("relevance.json", {"key": key, "relevance": relevance, "stats": stats,
                                       "unreadable": unreadable})

    # -- per-file results --------------------------------------------------------
    def digest(self, path: str) -> str | None:
        """The content hash of a file (once per run), None if unreadable;
        taken from an earlier run while the file's stat is unchanged."""
        if path in self._digests:
            return self._digests[path]
        stat = self.stat(path)
        if path in self._texts:  # an editor's text: its hash is its stat
            self._digests[path] = stat[1]  # type: ignore[index]
            return stat[1]  # type: ignore[index]
        stored = self._stored_digests.get(path)
        value: str | None = None  # no stat: no file to read (or a name such as GRADCHECK_READS)
        if stat is not None and isinstance(stored, list) and len(stored) == 2 and \
                stored[0] == stat and isinstance(stored[1], str):
            value = stored[1]
        elif stat is not None:
            value = _content_digest(path)
        self._digests[path] = value
        # A file changed within the last seconds may change again within the
        # clock's resolution, keeping its stat: its hash is not kept.
        if stat is not None and value is not None and \
                time.time_ns() - stat[1] > _SETTLED_NS:
            self._digests_to_store[path] = [stat, value]
            self.digests_changed |= stored != [stat, value]
        return value

    def run_key(self, settings: object) -> str:
        """A key for the per-file results: the settings and the linter."""
        digest = hashlib.blake2b(f"{_FORMAT}:{self._code}".encode(), digest_size=20)
        digest.update(json.dumps(settings, sort_keys=True, default=sorted).encode())
        return digest.hexdigest()

    def file_results(self, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Per path: {"digest", "settings", "reads": {path: digest}, "findings"}
        as stored under `key`, and the project-wide facts stored with them
        (both empty when the key differs)."""
        data = self._load("files.json")
        digests = data.get("digests")
        self._stored_digests = digests if isinstance(digests, dict) else {}
        if data.get("key") != key:
            return {}, {}
        files, facts = data.get("files"), data.get("facts")
        return (files if isinstance(files, dict) else {}, facts if isinstance(facts, dict) else {})

    def store_file_results(self, key: str, files: dict[str, Any],
                           facts: dict[str, Any] | None = None) -> None:
        self._write("files.json", {"key": key, "files": files, "facts": facts or {},
                                   "digests": self._digests_to_store})

    @staticmethod
    def findings(items: Any) -> list[Finding] | None:
        """Findings read back from a record, None if it is damaged."""
        try:
            return [_finding(dict(item)) for item in items]
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def flush(self) -> None:
        if self._scans_changed:
            self._write("scans.json", {"code": self._code, "files": self._scans})
            self._scans_changed = False

    # -- files -----------------------------------------------------------------------
    def _load(self, name: str) -> dict[str, Any]:
        try:
            with open(self.directory / name, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or (name == "scans.json" and data.get("code") != self._code):
            return {}
        return data

    def _write(self, name: str, data: dict[str, Any]) -> None:
        try:
            make_cache_directory(self.directory)
            write_atomically(self.directory / name,
                             json.dumps(data, separators=(",", ":")).encode("utf-8"))
        except OSError:
            pass  # a read-only checkout: run without the cache


class EditorCache(Cache):
    """The language server's cache of one project: the byte scans that runs
    of the command line stored (read once, where the files are unchanged),
    then scans and relevance kept up to date in memory across lints, never
    written back (they may describe an editor's unsaved text). The per-file
    findings are not kept: the server analyses only the buffer, which is
    what changes between its lints."""

    keeps_results = False

    def __init__(self, directory: Path, root: Path) -> None:
        super().__init__(directory)
        self._root = root  # where runs of the command line start
        self._memory: dict[str, dict[str, Any]] = {}
        self._words: dict[str, tuple[list[Any] | None, frozenset[bytes]]] = {}
        self._scan_objects: dict[str, tuple[list[Any] | None, FileScan]] = {}

    def scan(self, path: str) -> FileScan | None:
        # Kept as objects: a judgement again takes every file's scan.
        stat = self.stat(path)
        known = self._scan_objects.get(path)
        if known is not None and known[0] == stat:
            return known[1]
        scan = super().scan(path)
        if scan is not None:
            self._scan_objects[path] = (stat, scan)
        return scan

    def store_scan(self, scan: FileScan) -> None:
        super().store_scan(scan)
        if scan.error is None:
            self._scan_objects[scan.path] = (self.stat(scan.path), scan)

    def attribute_words(self, path: str) -> frozenset[bytes] | None:
        """The words the file names after a dot, kept while its stat is
        unchanged (judging the relevance again then reads only the files
        naming a wanted word); None if it cannot be read."""
        from .relevance import attribute_words, read_source

        stat = self.stat(path)
        known = self._words.get(path)
        if known is not None and known[0] == stat:
            return known[1]
        data = read_source(path, self._texts)
        if data is None:
            return None
        self._words[path] = (stat, attribute_words(data))
        return self._words[path][1]

    def _load(self, name: str) -> dict[str, Any]:
        if name not in self._memory:
            self._memory[name] = self._stored_scans_by_path() if name == "scans.json" else {}
        return self._memory[name]

    def _write(self, name: str, data: dict[str, Any]) -> None:
        self._memory[name] = data

    def _stored_scans_by_path(self) -> dict[str, Any]:
        """scans.json with its paths absolute: a run from the project's root
        stored them relative to it. (A path resolved wrongly finds another
        file, or none, whose stat differs: its scan is never used.)"""
        data = super()._load("scans.json")
        files = data.get("files")
        if not isinstance(files, dict):
            return {}
        data["files"] = {os.path.join(self._root, path): entry for path, entry in files.items()
                         if isinstance(path, str)}
        return data
