"""The on-disk cache of a project: `.autograd_lint_cache/` at its root (or
`--cache-dir`).

Three layers:

- byte scans of every file, reused while a file's size, mtime, inode and
  ctime are unchanged, and read only for files whose stat changed since the
  relevance was judged (a warm run with nothing changed reads none);
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
pickle from it could run code, which static mode never does. For the same
reason nothing in it is trusted: files are read only when regular and of a
sane size, never through a symlink; content that is not what a run writes is
dropped; a cache directory that is a symlink is not used, and no file is
written through one. Any failure to read or write the cache is ignored: the
cache only ever saves time.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any, BinaryIO

from .. import __version__
from ..core.files import write_atomically
from ..core.findings import Finding, Fix
from ..core.registry import RULES, SEVERITIES
from ..core.scan import FileScan

CACHE_DIR = ".autograd_lint_cache"
# A file's stat vouches for its content hash once it is this old (ns).
_SETTLED_NS = 2_000_000_000
_FORMAT = 2  # 2: stats hold the ctime
# A cache file larger than this is no run's (files.json holds every file's
# reads: about 550 MB for a 15,000-file tree of torch code): refused unread.
_MAX_BYTES = 2 << 30
# What files.write_atomically names its temporary files.
_TEMPORARY = re.compile(r"\.autograd-lint-.*\.tmp")
# A temporary file this old is no live run's: a write takes seconds at most
# (and touches the file's mtime as it goes), so only a killed, or stopped,
# run leaves one this old. Removing a stopped run's file only makes its
# rename fail, which a cache write ignores: the cache is then not written,
# never written wrong. (No lock is needed: concurrent runs may sweep alike.)
_STALE_TEMPORARY_NS = 10 * 60 * 1_000_000_000
_DIGEST = re.compile(r"[0-9a-f]{128}")  # _content_digest's: blake2b, 64 bytes
# Where there is no O_NOFOLLOW (Windows), links are looked for first.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: opening a FIFO does not wait for a writer (files ignore it).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _stat_key(path: str) -> list[int] | None:
    """What tells a file's content changed without reading it. The ctime
    too: an in-place edit that restores the mtime (a tool keeping times,
    `touch -r`) keeps size, mtime and inode, never (on POSIX) the ctime."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]


def _is_stat_key(value: object) -> bool:
    """Whether `value` is what _stat_key gives (an older cache's stats,
    without the ctime, are not: their entries are stale)."""
    return isinstance(value, list) and len(value) == 4 and all(type(v) is int for v in value)


def _is_text_stat(value: object) -> bool:
    """Whether `value` is the stat of an editor's text (`Cache.stat`: its
    hash), which an in-memory scan of a buffer is stored with."""
    return isinstance(value, list) and len(value) == 2 and value[0] == "text" and \
        isinstance(value[1], str)


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def _code_fingerprint() -> str:
    """The linter's own code: its version and the mtimes of its modules."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    # the layers a file's findings come from (the engine, the model, the
    # analysis and the rules)
    for directory in (package, package / "core", package / "engine", package / "analysis",
                      package / "checkers"):
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                digest.update(f"{entry.path}:{entry.stat().st_mtime_ns}".encode(
                    "utf-8", "surrogateescape"))
    return digest.hexdigest()


def cache_directory(root: Path, given: str | None = None) -> Path:
    """Where a project's cache lives: `given` (--cache-dir), else
    AUTOGRAD_LINT_CACHE_DIR, else in the project's root."""
    return Path(given or os.environ.get("AUTOGRAD_LINT_CACHE_DIR") or root / CACHE_DIR)


def make_cache_directory(directory: Path) -> None:
    """Create a cache directory that git ignores (raises OSError, also when
    it is a symlink: a cloned repository can carry one, leading anywhere)."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.path.islink(directory):
        raise OSError(errno.ELOOP, "the cache directory is a symbolic link", str(directory))
    ignore = directory / ".gitignore"
    unlink_symlink(ignore)
    if not ignore.exists():
        write_atomically(ignore, b"# Created by autograd-lint\n*\n")


def unlink_symlink(path: Path) -> None:
    """Remove `path` if it is a symlink (the link, never what it leads to):
    a file written there then is a regular file in its directory, and takes
    nothing (not even the permissions) from where the link led."""
    if os.path.islink(path):
        os.unlink(path)


def _open_regular(path: str | Path, *, follow: bool) -> BinaryIO:
    """A regular file opened for reading; OSError for anything else (a FIFO
    is not waited on, a device not read) and, unless `follow`, a symlink."""
    if not follow and not _NOFOLLOW and os.path.islink(path):
        raise OSError(errno.ELOOP, "a symbolic link", str(path))
    handle = open(os.open(path, _READ_FLAGS | (0 if follow else _NOFOLLOW)), "rb")
    if not S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return handle


def _read_regular(path: Path) -> bytes:
    """The bytes of a cache file: a regular file of at most _MAX_BYTES, never
    read through a symlink (raises OSError otherwise): a link in a
    checked-out cache may lead to /dev/zero, a FIFO or another user's file."""
    with _open_regular(path, follow=False) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > _MAX_BYTES:
            raise OSError(errno.EFBIG, "too large for a cache file", str(path))
        data = handle.read(size + 1)
    if len(data) > size:  # growing: no run writes a cache file in place
        raise OSError(errno.EAGAIN, "a cache file being written", str(path))
    return data


def _content_digest(path: str) -> str | None:
    """The hash of a regular file's content (None for anything else: the
    paths a stored record names are hashed, and a damaged one may name a
    device or a FIFO), read in pieces (it may name a huge file)."""
    digest = hashlib.blake2b()
    try:
        with _open_regular(path, follow=True) as handle:
            # No further than its size: a kernel file stating size 0 reads on
            # (/proc/self/pagemap), as the run's reads (files.read_regular_file).
            remaining = os.fstat(handle.fileno()).st_size
            while remaining > 0 and (chunk := handle.read(min(remaining, 1 << 20))):
                digest.update(chunk)
                remaining -= len(chunk)
    except OSError:
        return None
    return digest.hexdigest()


# The keys of Finding.to_json(dynamic=True), which runs store.
_FINDING_KEYS = frozenset(field.name for field in dataclasses.fields(Finding))
_FIX_KEYS = frozenset({"title", "applicability", "edits"})
_EDIT_KEYS = frozenset({"line", "column", "end_line", "end_column", "text"})


def _count(value: object, least: int) -> bool:
    """An integer (never a bool) of at least `least`."""
    return type(value) is int and value >= least


def _optional(value: object, kind: type) -> bool:
    return value is None or isinstance(value, kind)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _pair(value: object) -> bool:
    """A two-item list that starts with a string."""
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)


def _sound_finding(item: Any) -> bool:
    """Whether `item` is a finding as a run stores it: its keys, its types,
    a known rule with that rule's name, a known severity, a real position."""
    if not isinstance(item, dict) or item.keys() != _FINDING_KEYS:
        return False
    rule = RULES.get(item["code"]) if isinstance(item["code"], str) else None
    return rule is not None and item["name"] == rule.name and \
        item["severity"] in SEVERITIES and \
        isinstance(item["path"], str) and isinstance(item["message"], str) and \
        _count(item["line"], 1) and _count(item["column"], 0) and \
        (item["end_line"] is None or _count(item["end_line"], 1)) and \
        (item["end_column"] is None or _count(item["end_column"], 0)) and \
        _optional(item["function"], str) and _optional(item["confirmed"], bool) and \
        (item["fix"] is None or _sound_fix(item["fix"]))


def _sound_fix(data: Any) -> bool:
    """Whether `data` is a fix as Fix.to_json writes it (Fix.from_json would
    take numbers written as text)."""
    return isinstance(data, dict) and data.keys() == _FIX_KEYS and \
        isinstance(data["title"], str) and isinstance(data["edits"], list) and \
        all(isinstance(edit, dict) and edit.keys() == _EDIT_KEYS and
            isinstance(edit["text"], str) and _count(edit["line"], 1) and
            _count(edit["end_line"], 1) and _count(edit["column"], 0) and
            _count(edit["end_column"], 0) for edit in data["edits"])


def _finding(item: Any) -> Finding:
    """A finding read back from JSON, refusing anything a run does not write."""
    if not _sound_finding(item):
        raise ValueError("malformed cached finding")
    fix = item.pop("fix")
    return Finding(**item, fix=None if fix is None else Fix.from_json(fix))


_RECORD_KEYS = frozenset({"digest", "settings", "reads", "findings"})


def _sound_record(record: Any) -> bool:
    """Whether `record` is a file's results as a run stores them (see
    Cache.file_results): its findings are sound and of the file the
    settings name first (its display path)."""
    if not isinstance(record, dict) or record.keys() != _RECORD_KEYS:
        return False
    # The rest (its digest, settings and the digests of its reads) is only
    # compared with what this run computes: a wrong value there makes the
    # file stale, never a wrong answer, and a record is written back only
    # while equal to those (no need to look at each read).
    settings, findings = record["settings"], record["findings"]
    return isinstance(settings, list) and bool(settings) and isinstance(settings[0], str) \
        and isinstance(record["reads"], dict) and isinstance(findings, list) and \
        all(_sound_finding(f) and f["path"] == settings[0] for f in findings)


def _sound_gradchecked(value: Any) -> bool:
    """Whether `value` is the stored gradcheck answer as a run writes it (the
    digests of its reads are compared, as a record's are)."""
    return isinstance(value, dict) and value.keys() == {"keys", "reads"} and \
        isinstance(value["keys"], list) and isinstance(value["reads"], dict) and \
        all(_pair(key) and isinstance(key[1], str) for key in value["keys"])


def _sound_scan(entry: Any) -> bool:
    """Whether `entry` is a file's scan as store_scan writes it."""
    data = entry.get("scan") if isinstance(entry, dict) else None
    stat = entry.get("stat") if isinstance(entry, dict) else None
    if not isinstance(data, dict) or not (_is_stat_key(stat) or _is_text_stat(stat)) or \
            not _strings(data.get("aliases")) or not isinstance(data.get("gradcheck"), bool):
        return False
    headers, imports = data.get("headers"), data.get("imports")
    return isinstance(headers, list) and \
        all(_pair(header) and _strings(header[1]) for header in headers) and \
        isinstance(imports, list) and all(_pair(item) and isinstance(item[1], str)
                                          for item in imports)


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
        self._swept = False  # whether killed runs' temporary files were looked for

    def begin_run(self, texts: Mapping[str, bytes]) -> None:
        """A run starts: files may have changed since the last one, and
        `texts` stand for some files (an editor's buffers): their stat is
        their text's hash, never a stat of the file on disk."""
        self._texts = texts
        self._stats.clear()
        self._digests.clear()
        self._previous.clear()

    def stat(self, path: str) -> list[Any] | None:
        """The file's (size, mtime, inode, ctime), taken once per run."""
        if path not in self._stats:
            text = self._texts.get(path)
            self._stats[path] = _stat_key(path) if text is None else \
                ["text", hashlib.blake2b(text).hexdigest()]
        return self._stats[path]

    # -- scans -----------------------------------------------------------------

    @property
    def _scans(self) -> dict[str, Any]:
        """The stored scans by path (a warm run with nothing changed never
        reads them)."""
        if self._stored_scans is None:
            files = self._load("scans.json").get("files", {})
            # Only sound entries: the others would be written back as they are.
            self._stored_scans = {path: entry for path, entry in files.items()
                                  if _sound_scan(entry)} if isinstance(files, dict) else {}
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
    def _scan_of(path: str, entry: Any) -> FileScan | None:
        """The scan an entry holds, None unless it is as store_scan writes it
        (a damaged entry: the file is scanned again)."""
        if not _sound_scan(entry):
            return None
        data = entry["scan"]
        return FileScan(path=path,
                        headers=tuple((name, tuple(bases)) for name, bases in data["headers"]),
                        aliases=frozenset(data["aliases"]),
                        imports=tuple((module, name) for module, name in data["imports"]),
                        gradcheck=data["gradcheck"], ops=bool(data.get("ops", False)))

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
            "ops": scan.ops,
        }}
        self._scans_changed = True

    # -- relevance -----------------------------------------------------------------
    def relevance_key(self, paths: list[str], settings: object) -> str:
        """A key for the relevance of a file set: the file list, the settings
        and the linter (the files' stats are stored beside it)."""
        digest = hashlib.blake2b(f"{_FORMAT}:{self._code}".encode(), digest_size=20)
        digest.update(json.dumps(settings, sort_keys=True).encode())
        # The set, in any order; file names as the system gives them (any bytes).
        digest.update("\0".join(sorted(paths)).encode("utf-8", "surrogateescape"))
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
                stored[0] == stat and _is_digest(stored[1]):
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
        gradchecked = facts.get("gradchecked") if isinstance(facts, dict) else None
        return (self._sound_records(files),
                {"gradchecked": gradchecked} if _sound_gradchecked(gradchecked) else {})

    def _sound_records(self, files: Any) -> dict[str, Any]:
        """The records a run could have written; the others are dropped (their
        files are analysed again). One with a finding past the end of its
        file as it is now is of other content: it is marked changed."""
        if not isinstance(files, dict):
            return {}
        records = {}
        for path, record in files.items():
            if not _sound_record(record):
                continue
            stat = self.stat(path)
            # A file of n bytes has at most n + 1 lines.
            last = stat[0] + 1 if _is_stat_key(stat) else None  # type: ignore[index]
            if last is not None and any(f["line"] > last or (f["end_line"] or 0) > last
                                        for f in record["findings"]):
                record = {**record, "digest": None}
            records[path] = record
        return records

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
        """A cache file's content; {} when it is missing or not a run's."""
        if not self._is_real_directory():
            return {}
        self._sweep()
        try:
            data = json.loads(_read_regular(self.directory / name).decode("utf-8"))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested too deeply
            return {}
        if not isinstance(data, dict) or (name == "scans.json" and data.get("code") != self._code):
            return {}
        return data

    def _write(self, name: str, data: dict[str, Any]) -> None:
        try:
            make_cache_directory(self.directory)
            self._sweep()
            path = self.directory / name
            unlink_symlink(path)
            write_atomically(path, json.dumps(data, separators=(",", ":")).encode("utf-8"))
        except OSError:
            pass  # a read-only checkout, or a cache directory that is a link: no cache

    def _is_real_directory(self) -> bool:
        """Whether the cache directory is a directory, not a symlink to one
        (a cloned repository can carry one: it is not used)."""
        try:
            return S_ISDIR(os.lstat(self.directory).st_mode)
        except OSError:
            return False

    def _sweep(self) -> None:
        """Remove (once) the temporary files of writes that runs killed in
        the middle left in the cache directory (see _STALE_TEMPORARY_NS)."""
        if self._swept:
            return
        self._swept = True
        now = time.time_ns()
        try:
            with os.scandir(self.directory) as entries:
                names = [entry.name for entry in entries if _TEMPORARY.fullmatch(entry.name)]
        except OSError:
            return
        for name in names:
            path = self.directory / name
            with contextlib.suppress(OSError):  # gone already, or not ours to remove
                info = os.lstat(path)
                if not S_ISDIR(info.st_mode) and now - info.st_mtime_ns > _STALE_TEMPORARY_NS:
                    os.unlink(path)


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
