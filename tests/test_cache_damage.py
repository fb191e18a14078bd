"""A cache directory is never trusted: damaged, hostile or half-written
content is ignored (the run goes on as if there were no cache), nothing is
read or written through a symlink in it, and a bad baseline is a one-line
error."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.engine.cache import CACHE_DIR, Cache

from .helpers import ROOT

DEEP = "[" * 100_000 + "]" * 100_000  # valid JSON, nested past any recursion limit

needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")



@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the project that a run must never touch."""
    return tmp_path_factory.mktemp("outside")


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    """The exit code and every field of every finding (a served finding that
    differs from a fresh one in any field shows)."""
    code = main(["check", ".", "--format", "json", *args])
    captured = capsys.readouterr()
    assert "internal error" not in captured.err
    return code, json.loads(captured.out)


def leaks(result: tuple[int, list[dict[str, Any]]]) -> bool:
    """Whether a run reported ops.py's leak (AGF001 on line 7)."""
    return ("ops.py", 7, "AGF001") in [(f["path"], f["line"], f["code"]) for f in result[1]]


def edit_in_place(path: Path, before: os.stat_result) -> None:
    """Comment out the leak keeping size, mtime and inode (only the ctime
    changes), as an editor writing in place and restoring the time does."""
    leak = b"        ctx.x = x\n"
    with open(path, "r+b") as handle:
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace(leak, b"#" * (len(leak) - 1) + b"\n"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)


def test_deeply_nested_cache_files_are_ignored(project: Path, capsys) -> None:
    expected = check(capsys)
    for name in ("files.json", "scans.json", "relevance.json"):
        (project / CACHE_DIR / name).write_text(DEEP)
        assert check(capsys) == expected, name


def run_capped(project: Path) -> subprocess.CompletedProcess[str]:
    """`check .` in a process whose memory is capped: one that reads an
    endless device fails fast instead of taking the machine's memory."""
    capped = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
              "from autograd_lint.cli.entry import main\n"
              "sys.exit(main(['check', '.', '--format', 'json', '--jobs', '1']))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("AUTOGRAD_LINT_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-c", capped], cwd=project, env=env,
                          capture_output=True, text=True, timeout=60)


needs_dev_zero = pytest.mark.skipif(
    not os.path.exists("/dev/zero") or sys.platform == "darwin",
    reason="needs /dev/zero and a cap on address space (RLIMIT_AS)")


@needs_symlinks
@needs_dev_zero
@pytest.mark.parametrize("where", ["files.json is a link", "a record reads it", "a FIFO"])
def test_an_endless_device_the_cache_leads_to_is_not_read(project: Path, capsys,
                                                          where: str) -> None:
    cache = project / CACHE_DIR
    if where == "files.json is a link":
        cache.mkdir()
        (cache / "files.json").symlink_to("/dev/zero")
    elif where == "a FIFO":  # opening one for reading waits for a writer
        cache.mkdir()
        os.mkfifo(cache / "scans.json")
    else:  # a path it names, whose content hash it compares
        check(capsys)
        stored = json.loads((cache / "files.json").read_text())
        stored["files"]["ops.py"]["reads"]["/dev/zero"] = "0" * 128
        (cache / "files.json").write_text(json.dumps(stored))
    done = run_capped(project)
    assert done.returncode == 1, done.stderr
    assert [(f["line"], f["code"]) for f in json.loads(done.stdout)
            if f["path"] == "ops.py"] == [(7, "AGF001")]


@needs_symlinks
def test_a_cache_file_that_is_a_symlink_is_not_served(project: Path, outside: Path,
                                                      capsys) -> None:
    expected = check(capsys)
    files = project / CACHE_DIR / "files.json"
    forged = json.loads(files.read_text())
    for record in forged["files"].values():
        for finding in record["findings"]:
            finding["message"] = "served through a symlink"
    (outside / "files.json").write_text(json.dumps(forged))
    files.unlink()
    files.symlink_to(outside / "files.json")
    assert check(capsys) == expected
    # Nor written through: the link is replaced by the run's own file.
    assert json.loads((outside / "files.json").read_text()) == forged
    assert not files.is_symlink()


# Each is valid JSON of the right overall shape that no run writes.
FINDING_DAMAGES: dict[str, dict[str, Any]] = {
    "unknown rule": {"code": "AGF999"},
    "rule of another name": {"name": "not-this-rule"},
    "unknown severity": {"severity": "fatal"},
    "boolean line": {"line": True},
    "line zero": {"line": 0},
    "line past the file": {"line": 1_000_000},
    "negative column": {"column": -1},
    "text end line": {"end_line": "11"},
    "float end column": {"end_column": 3.5},
    "numeric function": {"function": 5},
    "another file's path": {"path": "helpers.py"},
    "fix with text positions": {"fix": {"title": "t", "applicability": "safe", "edits": [
        {"line": "7", "column": "0", "end_line": "7", "end_column": "1", "text": ""}]}},
    "missing key": {"function": None},  # removed below
}


@pytest.mark.parametrize("damage", FINDING_DAMAGES, ids=list(FINDING_DAMAGES))
def test_cached_findings_a_run_does_not_write_are_discarded(project: Path, capsys,
                                                            damage: str) -> None:
    expected = check(capsys)
    files = project / CACHE_DIR / "files.json"
    stored = json.loads(files.read_text())
    for record in stored["files"].values():
        for finding in record["findings"]:
            finding.update(FINDING_DAMAGES[damage])
            if damage == "missing key":
                del finding["function"]
    files.write_text(json.dumps(stored))
    assert check(capsys) == expected


def test_findings_of_wrong_types_are_refused(project: Path, capsys) -> None:
    # Also what no output shows (a finding's `confirmed`).
    check(capsys)
    stored = json.loads((project / CACHE_DIR / "files.json").read_text())
    findings = stored["files"]["ops.py"]["findings"]
    assert Cache.findings(findings) is not None
    assert Cache.findings([{**findings[0], "confirmed": "yes"}]) is None


def test_a_stored_scan_of_wrong_types_is_not_used() -> None:
    stat = [120, 1_700_000_000_000_000_000, 42, 1_700_000_000_000_000_000]
    sound = {"headers": [["Leaky", ["Function"]]], "aliases": ["torch"],
             "imports": [["torch", "autograd"]], "gradcheck": False}
    assert Cache._scan_of("ops.py", {"stat": stat, "scan": sound}) is not None
    for damage in ({"gradcheck": "no"}, {"aliases": [1]}, {"headers": [["Leaky", "Function"]]},
                   {"imports": [["torch", 3]]}):
        assert Cache._scan_of("ops.py", {"stat": stat, "scan": {**sound, **damage}}) is None, \
            damage


def test_stored_facts_of_wrong_types_are_discarded(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.begin_run({})
    damaged = {"gradchecked": {"keys": [[1, 2]], "reads": {}}}
    cache.store_file_results("key", {}, damaged)
    assert cache.file_results("key") == ({}, {})


@pytest.mark.parametrize("text", [DEEP, '{"format": 1, "findings": [], "n": %s}' % ("9" * 5000)],
                         ids=["deeply nested", "a number too long to convert"])
def test_a_baseline_json_cannot_take_is_a_one_line_error(project: Path, capsys,
                                                         text: str) -> None:
    (project / "baseline.json").write_text(text)
    assert main(["check", ".", "--baseline", "baseline.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograd-lint: error: cannot read baseline baseline.json:"), err
    assert "internal error" not in err and "Recursion" not in err and err.count("\n") == 1


@needs_symlinks
def test_a_cache_directory_that_is_a_symlink_is_not_used(project: Path, outside: Path,
                                                         capsys) -> None:
    (project / CACHE_DIR).symlink_to(outside, target_is_directory=True)
    first = check(capsys)
    assert first[0] == 1 and leaks(first)
    assert check(capsys) == first
    assert list(outside.iterdir()) == []


@needs_symlinks
def test_a_dangling_gitignore_symlink_creates_nothing_outside(project: Path, outside: Path,
                                                              capsys) -> None:
    cache = project / CACHE_DIR
    cache.mkdir()
    (cache / ".gitignore").symlink_to(outside / "planted")
    expected = check(capsys, "--no-cache")
    assert check(capsys) == expected
    assert list(outside.iterdir()) == []
    # Replaced by a regular file in the cache: git still ignores the cache.
    assert not (cache / ".gitignore").is_symlink()
    assert (cache / ".gitignore").read_text().strip().endswith("*")


def test_stale_temporary_files_are_removed(project: Path, capsys) -> None:
    check(capsys)
    cache = project / CACHE_DIR
    # As a run killed in the middle of a write leaves them (files.write_atomically).
    old, fresh = cache / ".autograd-lint-k1ll3d.tmp", cache / ".autograd-lint-wr1t1ng.tmp"
    other = cache / "notes.tmp"
    for path in (old, fresh, other):
        path.write_text("{")
    long_ago = time.time() - 3600
    for path in (old, other):
        os.utime(path, (long_ago, long_ago))
    check(capsys)
    assert not old.exists()
    assert fresh.exists() and other.exists()  # a live run's, and none of ours


def test_an_edit_that_keeps_size_mtime_and_inode_is_seen(project: Path, capsys) -> None:
    ops = project / "ops.py"
    settled = time.time() - 60  # old enough that its stat vouches for its content
    os.utime(ops, (settled, settled))
    assert leaks(check(capsys))
    edit_in_place(ops, os.stat(ops))
    assert not leaks(check(capsys))


def test_entries_of_an_older_cache_without_the_ctime_are_stale(project: Path, capsys) -> None:
    ops = project / "ops.py"
    settled = time.time() - 60
    os.utime(ops, (settled, settled))
    check(capsys)
    before = os.stat(ops)
    # The cache as a version that keyed files by (size, mtime, inode) wrote it.
    old_key = [before.st_size, before.st_mtime_ns, before.st_ino]
    cache = project / CACHE_DIR
    new_text, old_text = (json.dumps(key, separators=(",", ":"))
                          for key in (old_key + [before.st_ctime_ns], old_key))
    for name in ("files.json", "scans.json", "relevance.json"):
        text = (cache / name).read_text()
        assert new_text in text, name
        (cache / name).write_text(text.replace(new_text, old_text))
    edit_in_place(ops, before)  # which that key cannot see
    assert not leaks(check(capsys))
