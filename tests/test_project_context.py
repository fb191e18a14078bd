"""Files named alone (pre-commit passes only the changed ones) are checked
with their project around them: Functions and bases defined in unchanged
files are known, and only the named files are reported."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main

from .helpers import CUBE_AND_BASE as FUNCTIONS

PEDANTIC = ["--extend-select", "AGF001"]  # use.py's second finding is pedantic

USE = textwrap.dedent('''\
    import torch

    from fns import Base, Cube


    def cube(x):
        return Cube()(x)


    class Derived(Base):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x.clone()
    ''')


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    (tmp_path / "use.py").write_text(USE)
    (tmp_path / "broken.py").write_text("def broken(:\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def findings(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, int, str]]:
    main(["check", "--isolated", "--no-cache", "--format", "json", *PEDANTIC, *args])
    return [(f["path"], f["line"], f["code"]) for f in json.loads(capsys.readouterr().out)]


def test_a_named_file_sees_functions_and_bases_of_unchanged_files(project: Path,
                                                                   capsys) -> None:
    assert findings(capsys, "use.py") == [("use.py", 7, "AGF105"), ("use.py", 13, "AGF001")]


def test_the_context_is_read_but_never_reported(project: Path, capsys) -> None:
    reported = findings(capsys, "use.py")
    assert {path for path, _, _ in reported} == {"use.py"}  # not fns.py's AGF001
    assert all(code != "AGF000" for _, _, code in reported)  # nor broken.py


def test_same_findings_as_the_whole_project_for_the_named_file(project: Path, capsys) -> None:
    # (AGF301, "no gradcheck in the scanned tree", needs a tree scan)
    whole = [f for f in findings(capsys, ".") if f[0] == "use.py" and f[2] != "AGF301"]
    assert findings(capsys, "use.py") == whole


@pytest.mark.parametrize("cache", [[], ["--no-cache"]])
def test_only_the_named_files_are_analysed(project: Path, capsys, monkeypatch,
                                           cache: list[str]) -> None:
    from autograd_lint.engine import lint as engine

    analysed: list[str] = []
    real = engine.check_module
    monkeypatch.setattr(engine, "check_module", lambda module, *rest: (
        analysed.append(Path(module.path).name), real(module, *rest))[1])
    for _ in range(2):  # the second run with the cache: from it
        main(["check", "--isolated", "--format", "json", *PEDANTIC, "use.py", *cache])
        found = [(f["path"], f["line"], f["code"]) for f in json.loads(capsys.readouterr().out)]
        assert found == [("use.py", 7, "AGF105"), ("use.py", 13, "AGF001")]
    # fns.py is parsed for Cube and Base, never checked.
    assert analysed == ["use.py"] * (1 if not cache else 2)


def test_a_long_context_file_read_sparsely_is_what_its_statements_say(project: Path,
                                                                      capsys) -> None:
    # Parsed sparsely when `from fns import Base` leads there: the syntax
    # error is in a statement no rule reads, which AGF000 leaves out
    # (RULES.md), so Base is the Function its statements define. Parsed
    # whole (--no-prefilter), the file fails and defines nothing.
    padding = "".join(f"def pad_{n}(x):\n    return x + {n}\n\n\n" for n in range(800))
    (project / "fns.py").write_text(padding + FUNCTIONS + "\n\ndef unused(x):\n    x = 1\n")
    mended = findings(capsys, "use.py")
    assert mended
    (project / "fns.py").write_text(padding + FUNCTIONS + "\n\ndef unused(x):\n    x = = 1\n")
    assert findings(capsys, "use.py") == mended
    assert findings(capsys, "use.py", "--no-prefilter") == []


def test_the_context_can_be_turned_off(project: Path, capsys) -> None:
    assert findings(capsys, "use.py", "--no-project-context") == []


def test_without_a_project_marker_only_the_named_files_are_read(tmp_path: Path, monkeypatch,
                                                                capsys) -> None:
    folder = tmp_path / "loose"
    folder.mkdir()
    (folder / "fns.py").write_text(FUNCTIONS)
    (folder / "use.py").write_text(USE)
    monkeypatch.chdir(folder)
    assert findings(capsys, "use.py") == []


def test_the_summary_counts_the_named_files_only(project: Path, capsys) -> None:
    (project / "clean.py").write_text("x = 1\n")
    main(["check", "--isolated", "--no-cache", "clean.py"])
    assert "(1 file checked)" in capsys.readouterr().out
