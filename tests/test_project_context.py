"""Files named alone (pre-commit passes only the changed ones) are checked
with their project around them: Functions and bases defined in unchanged
files are known, and only the named files are reported."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli import main

FUNCTIONS = textwrap.dedent('''\
    import torch


    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x.clone()  # AGF001 here: never reported when only use.py is named
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            return 3 * ctx.x ** 2 * grad


    class Base(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad):
            return grad
    ''')
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
    main(["check", "--isolated", "--no-cache", "--format", "json", *args])
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
    from autograd_lint import engine

    analysed: list[str] = []
    real = engine.check_module
    monkeypatch.setattr(engine, "check_module", lambda module, *rest: (
        analysed.append(Path(module.path).name), real(module, *rest))[1])
    for _ in range(2):  # the second run with the cache: from it
        main(["check", "--isolated", "--format", "json", "use.py", *cache])
        found = [(f["path"], f["line"], f["code"]) for f in json.loads(capsys.readouterr().out)]
        assert found == [("use.py", 7, "AGF105"), ("use.py", 13, "AGF001")]
    # fns.py is parsed for Cube and Base, never checked.
    assert analysed == ["use.py"] * (1 if not cache else 2)


def test_a_long_context_file_that_does_not_parse_defines_nothing(project: Path,
                                                                  capsys) -> None:
    # Parsed sparsely when `from fns import Base` leads there, it must still
    # be checked whole: Python cannot import it, so Base is no Function.
    padding = "".join(f"def pad_{n}(x):\n    return x + {n}\n\n\n" for n in range(800))
    (project / "fns.py").write_text(padding + FUNCTIONS + "\n\ndef unused(x):\n    x = = 1\n")
    assert findings(capsys, "use.py") == findings(capsys, "use.py", "--no-prefilter") == []


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


def test_buffer_context_walks_a_project_once_per_refresh(tmp_path: Path, monkeypatch) -> None:
    """The language server lints on every pause in typing: the project's files
    are listed and stamped at most once per refresh interval, and again at
    once after a save (`forget`)."""
    import autograd_lint.files as files
    from autograd_lint.context import BufferContext

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "fns.py").write_text(textwrap.dedent('''\
        import torch


        class Cube(torch.autograd.Function):
            pass
        '''))
    walks = []
    real = files.iter_python_files

    def counting(root, excluded):
        walks.append(root)
        return real(root, excluded)

    monkeypatch.setattr(files, "iter_python_files", counting)
    now = [100.0]
    context = BufferContext(refresh_seconds=2.0, clock=lambda: now[0])
    buffer = str(tmp_path / "use.py")
    assert [m.path for m in context.modules_for(buffer)] == [str(tmp_path / "fns.py")]
    now[0] += 1.0
    context.modules_for(buffer)
    assert len(walks) == 1  # within the interval: the listing is reused
    # The buffer itself is never context, even from a cached listing.
    assert context.modules_for(str(tmp_path / "fns.py")) == []
    (tmp_path / "more.py").write_text("import torch\n\n\nclass Sq(torch.autograd.Function):\n"
                                      "    pass\n")
    context.forget()
    assert len(context.modules_for(buffer)) == 2 and len(walks) == 2
    now[0] += 5.0
    context.modules_for(buffer)
    assert len(walks) == 3
