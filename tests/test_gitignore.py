"""Directory scans honour `.gitignore` as ruff does (and as git reads it):
the repository's root and nested `.gitignore` files and `.git/info/exclude`,
only inside a git repository; files named on the command line are checked
anyway."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.files import iter_python_files

from .test_cli import LEAKY


def scan(root: Path | str, **options: bool) -> list[str]:
    """The files a walk of `root` yields, relative to it, as posix paths."""
    found = iter_python_files(str(root), lambda path, is_dir: False, **options)
    return sorted(Path(path).relative_to(root).as_posix() for path in found)


def ignored(patterns: str, *paths: str) -> dict[str, bool]:
    """Which paths one `.gitignore` of a repository's root ignores (a path
    ending in `/` is a folder, its files `x.py` inside it)."""
    from autograd_lint.core.files import GitIgnore, IgnoreFile, parse_gitignore

    rules = GitIgnore((IgnoreFile("", parse_gitignore(textwrap.dedent(patterns))),))
    return {path: rules.ignored(path.rstrip("/"), path.endswith("/")) for path in paths}


# -- git's pattern semantics -------------------------------------------------------
def test_a_name_matches_at_any_depth_a_slash_anchors() -> None:
    assert ignored("gen.py\n/top.py\nsub/deep.py\n",
                   "gen.py", "a/b/gen.py", "top.py", "a/top.py", "sub/deep.py",
                   "x/sub/deep.py") == {
        "gen.py": True, "a/b/gen.py": True, "top.py": True, "a/top.py": False,
        "sub/deep.py": True, "x/sub/deep.py": False}


def test_wildcards_match_bytes_as_git_matches_them() -> None:
    """git matches a name's UTF-8 bytes: `?` is one byte, so `?.py` leaves
    `ø.py` (two bytes) alone, which a walk must then check (it was skipped)."""
    assert ignored("?.py\n", "a.py", "ø.py", "øø.py") == {
        "a.py": True, "ø.py": False, "øø.py": False}
    assert ignored("??.py\n[!a]?.py\n", "ø.py", "ab.py") == {"ø.py": True, "ab.py": True}
    assert ignored("ø*.py\n", "øx.py", "o.py") == {"øx.py": True, "o.py": False}


def test_a_trailing_slash_matches_folders_only() -> None:
    assert ignored("out/\n", "out/", "a/out/", "out") == {
        "out/": True, "a/out/": True, "out": False}


def test_negation_and_last_match_wins() -> None:
    assert ignored("*.py\n!keep.py\nkeep.py\n!again.py\n", "x.py", "keep.py", "again.py") == {
        "x.py": True, "keep.py": True, "again.py": False}


def test_stars_question_marks_and_classes() -> None:
    assert ignored("gen_*.py\nv?.py\nrun[0-9].py\nnot[!a-c].py\n[[:upper:]]*.py\n",
                   "gen_a.py", "gen_.py", "v1.py", "v10.py", "run7.py", "runx.py",
                   "notd.py", "nota.py", "Main.py", "main.py") == {
        "gen_a.py": True, "gen_.py": True, "v1.py": True, "v10.py": False, "run7.py": True,
        "runx.py": False, "notd.py": True, "nota.py": False, "Main.py": True,
        "main.py": False}


def test_a_star_stops_at_a_slash_two_stars_do_not() -> None:
    assert ignored("/a/*.py\n**/logs/x.py\nlib/**\ndocs/**/ref.py\n",
                   "a/x.py", "a/b/x.py", "logs/x.py", "q/r/logs/x.py", "lib/one.py",
                   "lib/a/b.py", "lib/", "docs/ref.py", "docs/a/b/ref.py") == {
        "a/x.py": True, "a/b/x.py": False, "logs/x.py": True, "q/r/logs/x.py": True,
        "lib/one.py": True, "lib/a/b.py": True, "lib/": False, "docs/ref.py": True,
        "docs/a/b/ref.py": True}


def test_comments_blank_lines_escapes_and_trailing_spaces() -> None:
    assert ignored("# gen.py\n\n\\#hash.py\n\\!bang.py\nspace.py   \nlit\\*.py\n",
                   "gen.py", "#hash.py", "!bang.py", "space.py", "lit*.py", "litx.py") == {
        "gen.py": False, "#hash.py": True, "!bang.py": True, "space.py": True,
        "lit*.py": True, "litx.py": False}


def test_malformed_patterns_match_nothing() -> None:
    """An unclosed class or a trailing backslash never matches (as in git),
    and never stops the other lines from working."""
    assert ignored("bad[.py\nbad\\\nok.py\n", "bad[.py", "bad", "ok.py") == {
        "bad[.py": False, "bad": False, "ok.py": True}


# -- directory walks ----------------------------------------------------------------
@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A git repository: `generated/` ignored at the root, a nested
    .gitignore in src/, a negation, and .git/info/exclude."""
    root = tmp_path / "repo"
    for folder in (".git/info", "generated", "src/cache", "src/vendor", "src/pkg", "notes"):
        (root / folder).mkdir(parents=True)
    (root / ".gitignore").write_text("generated/\n*_pb2.py\n!keep_pb2.py\n# comment\n")
    (root / ".git" / "info" / "exclude").write_text("notes/\n")
    (root / "src" / ".gitignore").write_text("cache/\n/vendor/\n*.py\n!ops.py\n!pkg/\n")
    for name in ("generated/ops.py", "model_pb2.py", "keep_pb2.py", "notes/scratch.py",
                 "src/ops.py", "src/other.py", "src/cache/c.py", "src/vendor/v.py",
                 "src/pkg/ops.py", "src/pkg/util.py", "top.py"):
        (root / name).write_text(LEAKY)
    return root


def test_the_walk_skips_what_git_ignores(repository: Path) -> None:
    # src/pkg/util.py: `*.py` of src/.gitignore ignores it (`!pkg/` re-includes
    # the folder, not each file); src/pkg/ops.py: `!ops.py` takes it back.
    assert scan(repository) == ["keep_pb2.py", "src/ops.py", "src/pkg/ops.py", "top.py"]


def test_a_scan_of_a_subfolder_obeys_the_gitignores_above_it(repository: Path) -> None:
    assert scan(repository / "src") == ["ops.py", "pkg/ops.py"]
    (repository / "src" / "pkg" / "model_pb2.py").write_text(LEAKY)
    assert scan(repository / "src" / "pkg") == ["ops.py"]


def test_respect_gitignore_false_walks_everything(repository: Path) -> None:
    assert len(scan(repository, respect_gitignore=False)) == 11


def test_gitignore_outside_a_repository_is_not_read(repository: Path) -> None:
    """As ruff (and ripgrep): `.gitignore` applies inside a git repository."""
    (repository / ".git" / "info" / "exclude").unlink()
    (repository / ".git" / "info").rmdir()
    (repository / ".git").rmdir()
    assert len(scan(repository)) == 11


def test_a_nested_repository_starts_afresh(repository: Path) -> None:
    """A submodule (its `.git` a file naming its git directory) is a
    repository of its own: the outer `*_pb2.py` does not reach into it, its
    own .gitignore and info/exclude do."""
    sub = repository / "third_party" / "lib"
    sub.mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    (sub / ".gitignore").write_text("skip.py\n")
    (repository / ".git" / "modules" / "lib" / "info").mkdir(parents=True)
    (repository / ".git" / "modules" / "lib" / "info" / "exclude").write_text("local.py\n")
    for name in ("lib_pb2.py", "skip.py", "kept.py", "local.py"):
        (sub / name).write_text(LEAKY)
    assert [p for p in scan(repository) if p.startswith("third_party")] == [
        "third_party/lib/kept.py", "third_party/lib/lib_pb2.py"]


# -- the command line and the setting ------------------------------------------------
def checked(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, set[str], str]:
    code = main(["check", "--no-cache", "--format", "json", "--select", "AGF001", *args])
    captured = capsys.readouterr()
    findings = json.loads(captured.out) if captured.out.strip() else []
    return code, {Path(f["path"]).as_posix() for f in findings}, captured.err


def test_check_skips_ignored_files_unless_told(repository: Path, capsys,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repository)
    kept = {"keep_pb2.py", "src/ops.py", "src/pkg/ops.py", "top.py"}
    assert checked(capsys, ".")[1] == kept
    assert len(checked(capsys, ".", "--no-respect-gitignore")[1]) == 11
    (repository / "pyproject.toml").write_text(
        "[tool.autograd-lint]\nrespect-gitignore = false\n")
    assert len(checked(capsys, ".")[1]) == 11
    assert checked(capsys, ".", "--respect-gitignore")[1] == kept


def test_files_named_on_the_command_line_are_checked_even_if_ignored(
        repository: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repository)
    code, paths, err = checked(capsys, "generated/ops.py", "--force-exclude")
    assert (code, paths, err) == (1, {"generated/ops.py"}, "")
