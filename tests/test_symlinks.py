"""Symlinks in scanned trees: directory links met while walking are not
followed (as ruff), and `--fix` never writes outside the scanned roots and
project through a link, nor turns a linked file into a regular one."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.files import iter_python_files

from .test_cli import LEAKY


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A project (with a pyproject.toml) and a folder outside it."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "pkg").mkdir(parents=True)
    outside.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "pkg" / "ops.py").write_text(LEAKY)
    (outside / "theirs.py").write_text(LEAKY)
    monkeypatch.chdir(project)
    return project, outside


def fix(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", "--fix", "--select", "AGF008", *paths])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_directory_links_met_while_walking_are_not_followed(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    (project / "pkg" / "linked").symlink_to(outside, target_is_directory=True)
    found = sorted(iter_python_files("pkg", lambda path, is_dir: False))
    assert found == [os.path.join("pkg", "ops.py")]
    # A root named on the command line is followed, link or not.
    assert sorted(iter_python_files(os.path.join("pkg", "linked"),
                                    lambda path, is_dir: False)) == [
        os.path.join("pkg", "linked", "theirs.py")]


def test_fix_does_not_reach_through_a_directory_link(layout: tuple[Path, Path],
                                                     capsys) -> None:
    project, outside = layout
    (project / "pkg" / "linked").symlink_to(outside, target_is_directory=True)
    code, _, err = fix(capsys, ".")
    assert code == 0 and err == ""
    assert (outside / "theirs.py").read_text() == LEAKY
    assert (project / "pkg" / "ops.py").read_text() != LEAKY  # fixed


def test_fix_skips_a_file_linked_from_outside_with_a_warning(layout: tuple[Path, Path],
                                                             capsys) -> None:
    project, outside = layout
    link = project / "pkg" / "theirs.py"
    link.symlink_to(outside / "theirs.py")
    code, out, err = fix(capsys, ".")
    assert (outside / "theirs.py").read_text() == LEAKY and link.is_symlink()
    assert err.count("\n") == 1 and "warning" in err and "theirs.py" in err \
        and "outside" in err, err
    assert code == 1 and "pkg/theirs.py" in out  # still reported: it was not fixed
    assert (project / "pkg" / "ops.py").read_text() != LEAKY


def test_fix_writes_through_a_link_inside_the_project_and_keeps_it(
        layout: tuple[Path, Path], capsys) -> None:
    project, _ = layout
    (project / "real").mkdir()
    target = project / "real" / "kernel.py"
    target.write_text(LEAKY)
    link = project / "pkg" / "kernel.py"
    link.symlink_to(os.path.join("..", "real", "kernel.py"))
    code, _, err = fix(capsys, "pkg")
    assert (code, err) == (0, "")
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "real", "kernel.py")
    assert target.read_text() != LEAKY and ".detach()" in target.read_text()


def test_a_linked_root_named_on_the_command_line_is_fixed(layout: tuple[Path, Path],
                                                          capsys) -> None:
    project, outside = layout
    (project / "vendored").symlink_to(outside, target_is_directory=True)
    code, _, err = fix(capsys, "vendored")
    assert (code, err) == (0, "")
    assert ".detach()" in (outside / "theirs.py").read_text()
    assert (project / "vendored").is_symlink()
