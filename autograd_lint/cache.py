"""The on-disk cache of a project: `.autograd_lint_cache/` at its root (or
`--cache-dir`).

Two layers:

- byte scans of every file, reused while a file's size, mtime and inode are
  unchanged (a warm run then only stats the files that cannot matter);
- the findings of a run, keyed by the content hashes of the files that matter,
  the settings, and the linter's own code (so upgrading or editing the linter
  never serves stale results).

Everything is JSON: a cache directory may come with a checkout, and loading
pickle from it could run code, which static mode never does. Any failure to
read or write the cache is ignored: the cache only ever saves time.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .files import write_atomically
from .findings import Finding, Fix
from .scan import FileScan

CACHE_DIR = ".autograd_lint_cache"
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

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._code = _code_fingerprint()
        files = self._load("scans.json").get("files", {})
        self._scans: dict[str, Any] = files if isinstance(files, dict) else {}
        self._scans_changed = False
        self._stats: dict[str, list[int] | None] = {}  # stat keys taken in this run

    def _stat(self, path: str) -> list[int] | None:
        if path not in self._stats:
            self._stats[path] = _stat_key(path)
        return self._stats[path]

    # -- scans -----------------------------------------------------------------
    def scan(self, path: str) -> FileScan | None:
        entry = self._scans.get(path)
        if not isinstance(entry, dict) or entry.get("stat") != self._stat(path):
            return None
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
        self._scans[scan.path] = {"stat": self._stat(scan.path), "scan": {
            "headers": [[name, list(bases)] for name, bases in scan.headers],
            "aliases": sorted(scan.aliases),
            "imports": sorted([module, name] for module, name in scan.imports),
            "gradcheck": scan.gradcheck,
        }}
        self._scans_changed = True

    # -- relevance -----------------------------------------------------------------
    def relevance_key(self, paths: list[str], settings: object) -> str | None:
        """A key for the relevance of a file set: every file's stat (it reads
        some of them), the settings and the linter."""
        digest = hashlib.blake2b(f"{_FORMAT}:{self._code}".encode(), digest_size=20)
        digest.update(json.dumps(settings, sort_keys=True).encode())
        for path in paths:
            stat = self._stat(path)
            if stat is None:
                return None
            digest.update(f"{path}\0{stat}\0".encode())
        return digest.hexdigest()

    def relevance(self, key: str) -> dict[str, Any] | None:
        data = self._load("relevance.json")
        return data.get("relevance") if data.get("key") == key else None

    def store_relevance(self, key: str, relevance: dict[str, Any]) -> None:
        self._write("relevance.json", {"key": key, "relevance": relevance})

    # -- results -------------------------------------------------------------------
    def fingerprint(self, settings: object, files: list[str]) -> str | None:
        """A key for a run: settings, the linter, and the content of `files`."""
        digest = hashlib.blake2b(f"{_FORMAT}:{self._code}".encode(), digest_size=20)
        digest.update(json.dumps(settings, sort_keys=True, default=sorted).encode())
        for path in sorted(files):
            content = _content_digest(path)
            if content is None:
                return None  # an unreadable file: not cacheable
            digest.update(path.encode() + b"\0" + bytes.fromhex(content))
        return digest.hexdigest()

    def result(self, key: str) -> list[Finding] | None:
        """The findings stored under `key`, while the files the run read only
        to resolve names are unchanged too."""
        data = self._load("result.json")
        if data.get("key") != key:
            return None
        try:
            depends = data.get("depends", {})
            if any(_content_digest(path) != digest for path, digest in depends.items()):
                return None
            return [_finding(item) for item in data["findings"]]
        except (AttributeError, KeyError, TypeError, ValueError):
            return None  # a damaged result: run again

    def store_result(self, key: str, findings: list[Finding],
                     depends: Sequence[str] = ()) -> None:
        """Store a run's findings; `depends`: files outside the key that the
        run read (modules parsed to resolve an import)."""
        digests = {path: _content_digest(path) for path in depends}
        if None in digests.values():
            return  # unreadable now: nothing to validate against later
        items = [f.to_json(dynamic=True) for f in findings]
        self._write("result.json", {"key": key, "findings": items, "depends": digests})

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
