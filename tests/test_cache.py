"""The on-disk cache: reused while nothing that matters changed, never stale,
never in the way (damaged or unwritable caches are ignored)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core import scan as scan_module
from autograd_lint.engine import cache as cache_module
from autograd_lint.engine.cache import CACHE_DIR

from .helpers import PEDANTIC_AGF001, forbid_analysis, leaky_function

LEAKY = "import torch\n\n\n" + leaky_function()



def check(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, int, str]]:
    code = main(["check", ".", "--format", "json", *args])
    rows = [(Path(f["path"]).name, f["line"], f["code"])
            for f in json.loads(capsys.readouterr().out)]
    assert code == (1 if rows else 0)
    return rows


def test_a_second_run_is_answered_from_the_cache(project: Path, capsys, monkeypatch) -> None:
    first = check(capsys)
    assert ("ops.py", 7, "AGF001") in first
    assert (project / CACHE_DIR / ".gitignore").read_text().strip().endswith("*")
    forbid_analysis(monkeypatch)
    assert check(capsys) == first


def test_editing_a_file_that_matters_invalidates(project: Path, capsys) -> None:
    check(capsys)
    (project / "ops.py").write_text(LEAKY.replace("ctx.x = x", "ctx.save_for_backward(x)"))
    assert ("ops.py", 7, "AGF001") not in check(capsys)


def test_editing_an_unrelated_file_keeps_the_result(project: Path, capsys, monkeypatch) -> None:
    first = check(capsys)
    (project / "helpers.py").write_text("def add(a, b):\n    return b + a\n")
    forbid_analysis(monkeypatch)
    assert check(capsys) == first


def test_a_new_file_that_matters_invalidates(project: Path, capsys) -> None:
    check(capsys)
    (project / "more.py").write_text(LEAKY.replace("Leaky", "Leakier"))
    assert ("more.py", 7, "AGF001") in check(capsys)


def test_settings_are_part_of_the_key(project: Path, capsys) -> None:
    assert ("ops.py", 7, "AGF001") in check(capsys)
    assert check(capsys, "--ignore", "AGF001", "--ignore", "AGF301") == []
    (project / "pyproject.toml").write_text(PEDANTIC_AGF001 + 'ignore = ["AGF301"]\n')
    assert [row[2] for row in check(capsys)] == ["AGF001"]


def test_no_cache_reads_and_writes_nothing(project: Path, capsys) -> None:
    check(capsys, "--no-cache")
    assert not (project / CACHE_DIR).exists()


def test_a_warm_run_with_nothing_changed_reads_no_source_and_no_stored_scan(
        project: Path, capsys, monkeypatch) -> None:
    settled = time.time() - 60  # the stats of files this old vouch for their content
    for path in project.glob("*.py"):
        os.utime(path, (settled, settled))
    first = check(capsys)
    check(capsys)

    def refuse(*args: object) -> None:
        raise AssertionError("read although nothing changed")
    monkeypatch.setattr(cache_module, "_content_digest", refuse)
    monkeypatch.setattr(scan_module, "_read", refuse)
    load = cache_module.Cache._load
    monkeypatch.setattr(cache_module.Cache, "_load", lambda self, name: refuse() if
                        name == "scans.json" else load(self, name))
    forbid_analysis(monkeypatch)
    assert check(capsys) == first


def test_a_file_rewritten_with_the_same_stat_soon_after_is_read_again(
        project: Path, capsys) -> None:
    # A write within the file system's clock resolution may keep size, mtime
    # and inode: a stat vouches for content only once the file has settled.
    assert ("ops.py", 7, "AGF001") in check(capsys)
    ops = project / "ops.py"
    before = os.stat(ops)
    text = ops.read_text()
    leak = "        ctx.x = x\n"
    ops.write_text(text.replace(leak, "#" * (len(leak) - 1) + "\n"))
    os.utime(ops, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(ops)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)
    assert ("ops.py", 7, "AGF001") not in check(capsys)


def test_a_file_that_cannot_be_read_is_reported_by_every_run(
        project: Path, capsys, monkeypatch) -> None:
    (project / "secret.py").write_text("import torch\n")
    read = scan_module._read

    def denied(path: str) -> bytes:
        if path.endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return read(path)
    monkeypatch.setattr(scan_module, "_read", denied)
    for _ in range(2):  # the second run finds its stat unchanged
        assert main(["check", ".", "--quiet"]) == 1  # skipped: the rest is reported
        assert "warning: secret.py: cannot read file: Permission denied; skipped" in \
            capsys.readouterr().err


def test_damaged_caches_are_ignored(project: Path, capsys) -> None:
    expected = check(capsys)
    cache = project / CACHE_DIR
    damages = [
        ("files.json", "{not json"),
        ("files.json", json.dumps({"key": None, "findings": [1, 2]})),
        ("scans.json", json.dumps({"code": "x", "files": []})),
        ("scans.json", "[]"),
        ("relevance.json", json.dumps({"key": None, "stats": {}, "unreadable": 3})),
    ]
    for name, text in damages:
        (cache / name).write_text(text)
        assert check(capsys) == expected, (name, text)
    # Stored scans are read only when a file changed or the relevance must be
    # judged again: without relevance.json, all are.
    (cache / "relevance.json").unlink()
    assert check(capsys) == expected
    # A damaged entry under the right keys: read the file again.
    scans = json.loads((cache / "scans.json").read_text())
    for entry in scans["files"].values():
        entry["scan"] = {"headers": 5}
    (cache / "scans.json").write_text(json.dumps(scans))
    (cache / "relevance.json").unlink()
    assert check(capsys) == expected
    for damage in ({"findings": [{"path": 1}]}, {"findings": 7}, {"reads": 5}, {"digest": 3}):
        check(capsys)  # store sound records again
        result = json.loads((cache / "files.json").read_text())
        for record in result["files"].values():
            record.update(damage)
        (cache / "files.json").write_text(json.dumps(result))
        assert check(capsys) == expected, damage


def test_cache_dir_option_and_environment(project: Path, capsys, monkeypatch,
                                          tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("cache") / "nested"
    check(capsys, "--cache-dir", str(elsewhere))
    assert (elsewhere / "files.json").exists() and not (project / CACHE_DIR).exists()
    from_env = tmp_path_factory.mktemp("env-cache")
    monkeypatch.setenv("AUTOGRAD_LINT_CACHE_DIR", str(from_env))
    check(capsys)
    assert (from_env / "files.json").exists() and not (project / CACHE_DIR).exists()


def test_an_unwritable_cache_dir_is_no_error(project: Path, capsys) -> None:
    blocker = project / "blocker"
    blocker.write_text("a file where a directory would go")
    # Creating the directory fails even for the superuser.
    assert ("ops.py", 7, "AGF001") in check(capsys, "--cache-dir", str(blocker / "cache"))


def test_a_cache_path_that_is_a_file_is_no_error(project: Path, capsys) -> None:
    (project / CACHE_DIR).write_text("not a directory")
    assert ("ops.py", 7, "AGF001") in check(capsys)


def test_relevance_is_reused_until_a_file_changes(project: Path, capsys, monkeypatch) -> None:
    import autograd_lint.engine.relevance as relevance

    first = check(capsys)
    judged = []
    real_judge = relevance.judge
    monkeypatch.setattr(relevance, "judge", lambda *a, **k: judged.append(1) or real_judge(*a, **k))
    (project / "pyproject.toml").write_text(PEDANTIC_AGF001 + 'ignore = ["AGF008"]\n')
    assert check(capsys) == first and judged == []  # new settings, same files: not judged
    # An edit that leaves the file's scan as it was: only that file is judged again.
    (project / "helpers.py").write_text("def add(a, b):\n    return b + a\n")
    assert check(capsys) == first and judged == []
    # One that changes what the scan sees (an import): the tree is judged again.
    (project / "helpers.py").write_text("import os\n\n\ndef add(a, b):\n    return b + a\n")
    assert check(capsys) == first and judged == [1]
