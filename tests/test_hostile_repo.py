"""A cloned, hostile repository, checked by a normal user (issue 37).

The tree holds what a repository can commit or a checkout can leave behind:
a folder and a file its user cannot read, a file name that is not UTF-8,
links to `/dev/zero` and `/proc/self/pagemap` (as a source file and as the
`.gitignore`), a FIFO, an op name that forges lines and terminal escapes,
and links that lead out of the project. A run loses no finding to any of
them, hangs on none, writes nothing outside the project, and prints nothing
from the code raw. The command runs as an unprivileged user: as the user
running the tests, or, under root (who reads everything), as `nobody`
through setpriv; where neither is possible the tests that need it skip.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import xml.dom.minidom
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_first_contact import INSTANTIATED

NOBODY = 65534
BAD_NAME = b"bad\xffname.py"
FORGED = textwrap.dedent('''\
    import torch


    @torch.library.custom_op(
        "ns::x\\n::error file=README.md,line=1::forged\\x1b]0;title\\x07\\x1b[2J\\u202e",
        mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2
    ''')


def _unprivileged() -> list[str] | None:
    """A command prefix that runs as a user who cannot read what its mode
    forbids ([] when the tests run as one); None where there is no way."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import autograd_lint"],
                           capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None


@pytest.fixture(scope="module")
def prefix() -> list[str]:
    found = _unprivileged()
    if found is None:
        pytest.skip("no unprivileged user to run the linter as (setpriv is missing or "
                    "cannot switch users here)")
    return found


@pytest.fixture
def hostile(prefix: list[str]) -> Iterator[Path]:
    """The cloned repository (`repo/`) beside the user's own files (`home/`)."""
    # Not pytest's tmp_path: its folders are private to the user running the
    # tests, and the linter may run as another one.
    base = Path(tempfile.mkdtemp(prefix="autograd-lint-hostile-"))
    base.chmod(0o755)
    repo, home = base / "repo", base / "home"
    repo.mkdir()
    home.mkdir()
    (home / "victim.txt").write_text("the user's own file\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "hostile"\n')
    (repo / "ops.py").write_text(INSTANTIATED)
    (repo / "forged.py").write_text(FORGED)
    (repo / os.fsdecode(BAD_NAME)).write_text(INSTANTIATED)
    (repo / "secret.py").write_text(INSTANTIATED)
    data = repo / "data"
    data.mkdir()
    (data / "pyproject.toml").write_text("[tool.autograd-lint]\n")
    (data / "hidden.py").write_text(INSTANTIATED)
    (repo / "zero.py").symlink_to("/dev/zero")
    if os.path.exists("/proc/self/pagemap"):
        (repo / "pagemap.py").symlink_to("/proc/self/pagemap")
    (repo / ".gitignore").symlink_to("/dev/zero")
    os.mkfifo(repo / "pipe.py")
    os.mkfifo(repo / "pipe.json")
    (repo / "zero.json").symlink_to("/dev/zero")
    (repo / "report.json").symlink_to(home / "victim.txt")
    (repo / "out").symlink_to(home)
    (repo / "readonly.py").write_text(INSTANTIATED)
    if os.geteuid() == 0:
        for path in [base, *base.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)
    (repo / "readonly.py").chmod(0o444)
    (repo / "secret.py").chmod(0o000)
    data.chmod(0o000)
    try:
        yield repo
    finally:
        data.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def check(prefix: list[str], repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "AUTOGRAD_LINT_DEBUG": "1"}
    return subprocess.run([*prefix, sys.executable, "-m", "autograd_lint", "check",
                           "--no-cache", *args], cwd=repo, capture_output=True, timeout=120,
                          env=env, check=False)


FORMATS = ["concise", "full", "json", "json-lines", "sarif", "github", "gitlab", "junit",
           "pylint"]


@pytest.mark.parametrize("output", FORMATS)
def test_a_hostile_tree_loses_no_finding_and_prints_nothing_raw(
        prefix: list[str], hostile: Path, output: str) -> None:
    done = check(prefix, hostile, "--select", "ALL", "--format", output, ".")
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 1, err
    assert "internal error" not in err and "Traceback" not in err
    # What cannot be read is skipped, one warning each; the rest is reported.
    assert "data: cannot read folder: Permission denied; skipped" in err
    assert "secret.py: cannot read file: Permission denied; skipped" in err
    assert "ops.py" in out and "AGF105" in out
    # (JSON doubles the backslash, a SARIF URI quotes it)
    assert any(shown in out for shown in ("bad\\xffname.py", "bad\\\\xffname.py",
                                          "bad%5Cxffname.py"))
    assert "hidden.py" not in out
    # Nothing from the code reaches the output raw: no forged line, no escape.
    assert not any(line.startswith("::error file=README.md") for line in out.splitlines())
    assert not any(char in out for char in "\x1b\x07\u202e")
    if output in ("json", "sarif", "gitlab"):
        json.loads(out)
    elif output == "json-lines":
        [json.loads(line) for line in out.splitlines()]
    elif output == "junit":
        xml.dom.minidom.parseString(out)


def test_a_named_file_keeps_its_project_context(prefix: list[str], hostile: Path) -> None:
    done = check(prefix, hostile, "ops.py")
    err = done.stderr.decode("utf-8")
    assert done.returncode == 1, err
    assert "internal error" not in err and b"ops.py:14:5: AGF105" in done.stdout


def test_reports_and_baselines_are_never_written_out_of_the_project(
        prefix: list[str], hostile: Path) -> None:
    victim = hostile.parent / "home" / "victim.txt"
    for args in (["-o", "report.json"], ["-o", "out/newdir/r.json"],
                 ["--write-baseline", "out/baseline.json"]):
        done = check(prefix, hostile, *args, ".")
        err = done.stderr.decode("utf-8")
        assert done.returncode == 2, err
        assert err.count("\n") <= 3 and "outside the project" in err, err
    assert victim.read_text() == "the user's own file\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    done = check(prefix, hostile, "-o", "reports/lint.json", "--format", "json", ".")
    assert done.returncode == 1 and (hostile / "reports" / "lint.json").is_file()


def test_a_read_only_file_is_not_fixed(prefix: list[str], hostile: Path) -> None:
    before = (hostile / "readonly.py").read_bytes()
    done = check(prefix, hostile, "--fix", "readonly.py")
    assert b"readonly.py: not fixed: it is read-only" in done.stderr
    assert (hostile / "readonly.py").read_bytes() == before
    done = check(prefix, hostile, "--add-noqa", "readonly.py")
    assert (hostile / "readonly.py").read_bytes() == before


@pytest.mark.parametrize("baseline", ["pipe.json", "zero.json"])
def test_a_baseline_that_is_no_file_is_one_error_line(prefix: list[str], hostile: Path,
                                                      baseline: str) -> None:
    done = check(prefix, hostile, "--baseline", baseline, ".")  # no hang, no memory
    assert done.returncode == 2
    assert done.stderr.decode() == \
        f"autograd-lint: error: cannot read baseline {baseline}: not a regular file\n"
