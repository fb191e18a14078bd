"""The language server's linting of a buffer (`context.BufferLinter`): the
same engine and findings as `autograd-lint check FILE` for the buffer's text,
with its project's scans and relevance kept between lints and nothing of an
unsaved buffer written to disk."""
from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.engine.context import BufferLinter, context_inputs, project_root
from autograd_lint.engine.lint import SourceInput, lint_inputs

from .helpers import CUBE_AND_BASE as FUNCTIONS
from .helpers import DEFAULT_CODES, write_tricky_project

# DERIVED's finding, AGF001, is pedantic: the project turns it on.
CODES = DEFAULT_CODES | {"AGF001"}

USE = "from fns import Base, Cube\n\n\ndef cube(x):\n    return Cube.apply(x)\n"
DERIVED = textwrap.dedent('''\


    class Derived(Base):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x.clone()
    ''')


def _never_excluded(path: str, is_dir: bool) -> bool:
    return False


def buffer_lint(linter: BufferLinter, path: Path, text: str) -> list[tuple]:
    root = project_root(str(path))
    result = linter.lint(str(path), text.encode(), CODES, _never_excluded,
                         Path(root or path.parent))
    assert not result.errors, result.errors
    return [(f.line, f.code, f.message) for f in result.findings]


def named_file_lint(path: Path, text: str | None = None) -> list[tuple]:
    """What `autograd-lint check FILE` reports for `path` (holding `text`)."""
    named = SourceInput(str(path), str(path), CODES, explicit=True,
                        text=None if text is None else text.encode())
    seen = {os.path.normpath(str(path))}
    result = lint_inputs([named, *context_inputs([named], _never_excluded, seen)], jobs=1)
    assert not result.errors, result.errors
    return [(f.line, f.code, f.message) for f in result.findings]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'p'\n\n[tool.autograd-lint]\nextend-select = ['AGF001']\n")
    (tmp_path / "fns.py").write_text(FUNCTIONS)
    (tmp_path / "use.py").write_text(USE)
    return tmp_path


def test_the_buffers_text_is_checked_with_the_project_on_disk(project: Path) -> None:
    linter = BufferLinter()
    use = project / "use.py"
    assert buffer_lint(linter, use, USE) == []
    # Unsaved: a class deriving from a Function of another file.
    found = buffer_lint(linter, use, USE + DERIVED)
    assert [code for _, code, _ in found] == ["AGF001"] and found[0][0] == 11
    assert found == named_file_lint(use, USE + DERIVED)
    # The file on disk was never the one checked, and fns.py's own defect
    # (AGF001 in Cube) is not the buffer's.
    assert use.read_text() == USE


def test_what_the_buffer_reaches_is_read_from_its_text(project: Path) -> None:
    """`fns.Cube()` names a Function only as a module's attribute: the byte
    judgement finds it in the text (the file on disk does not say it)."""
    use = project / "use.py"
    use.write_text("import fns\n")
    typed = "import fns\n\n\ndef cube(x):\n    return fns.Cube()(x)\n"
    linter = BufferLinter()
    for text in ("import fns\n", typed):  # judged afresh, then updated
        expected = named_file_lint(use, text)
        assert buffer_lint(linter, use, text) == expected
    assert [code for _, code, _ in expected] == ["AGF105"]
    assert [code for _, code, _ in buffer_lint(BufferLinter(), use, typed)] == ["AGF105"]


def test_every_file_of_a_tricky_project_as_the_command_line_sees_it(tmp_path: Path) -> None:
    root = write_tricky_project(tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'tricky'\n")
    linter = BufferLinter()  # one server: the state of each lint serves the next
    compared = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        assert buffer_lint(linter, path, text) == named_file_lint(path), path
        compared += bool(named_file_lint(path))
    assert compared >= 3  # files with findings were among them


def test_random_edits_of_buffers_match_a_fresh_run(tmp_path: Path) -> None:
    """Edits that change what a buffer defines, imports and aliases (its scan,
    so the relevance is judged again or updated) give what a run with no
    kept state gives."""
    root = write_tricky_project(tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'tricky'\n")
    files = sorted(p for p in root.rglob("*.py") if "Function" in p.read_text()
                   or "import" in p.read_text())
    edits = [
        lambda text: text + DERIVED.replace("Base", "Scale"),
        lambda text: text + "\n\nLegacy = Scale\n",
        lambda text: "from pkg.ops import Scale\n" + text,
        lambda text: text.replace("(F)", "(object)", 1),
        lambda text: text.replace("import", "# import", 1),
        lambda text: text.replace("    return", "    return  ", 1),
        lambda text: text[: len(text) // 2],  # half-typed
    ]
    generator = random.Random(15)
    linter = BufferLinter()
    texts: dict[Path, str] = {}
    for _ in range(40):
        path = generator.choice(files)
        texts[path] = generator.choice(edits)(texts.get(path, path.read_text()))
        assert buffer_lint(linter, path, texts[path]) == named_file_lint(path, texts[path])


def test_lints_reuse_the_projects_scans_and_write_nothing(project: Path, monkeypatch) -> None:
    import autograd_lint.core.scan as scan

    scanned: list[str] = []
    real = scan.scan_file

    def counting(path: str) -> scan.FileScan:
        scanned.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(scan, "scan_file", counting)
    linter = BufferLinter()
    use = project / "use.py"
    buffer_lint(linter, use, USE)
    assert scanned == ["fns.py"]  # the buffer is scanned from its text
    scanned.clear()
    buffer_lint(linter, use, USE + DERIVED)  # typing: the project is not scanned again
    buffer_lint(linter, project / "fns.py", FUNCTIONS)  # nor for another buffer
    assert scanned == ["use.py"]  # the first buffer's file, now context, from disk
    (project / "fns.py").write_text(FUNCTIONS + "\n")
    scanned.clear()
    buffer_lint(linter, use, USE)
    assert scanned == ["fns.py"]  # changed on disk: scanned again
    assert not (project / ".autograd_lint_cache").exists()


def test_an_edit_that_keeps_the_buffers_scan_updates_the_relevance(project: Path,
                                                                   monkeypatch) -> None:
    """Typing inside a function leaves the buffer's byte scan as it was: the
    relevance is updated for it, not judged again over the project (an
    editor's text is stored with its hash as its stat, and such a scan is a
    sound one to compare with)."""
    import autograd_lint.engine.relevance as relevance

    edited = USE.replace("return Cube", "return  Cube")
    expected = named_file_lint(project / "use.py", edited)
    judged: list[int] = []
    real = relevance.judge

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        judged.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(relevance, "judge", counting)
    linter = BufferLinter()
    use = project / "use.py"
    first = buffer_lint(linter, use, USE)
    assert judged == [1]
    assert buffer_lint(linter, use, edited) == first == expected
    assert buffer_lint(linter, use, USE) == first
    assert judged == [1]


def test_the_first_lint_starts_from_the_command_lines_scans(project: Path, monkeypatch,
                                                             capsys) -> None:
    monkeypatch.chdir(project)
    main(["check", "."])  # stores the scans (paths relative to the project's root)
    capsys.readouterr()
    stored = (project / ".autograd_lint_cache" / "scans.json").read_bytes()
    expected = named_file_lint(project / "use.py", USE + DERIVED)
    import autograd_lint.core.scan as scan

    def refuse(path: str) -> scan.FileScan:
        raise AssertionError(f"{path} was scanned again")

    monkeypatch.setattr(scan, "scan_file", refuse)
    assert buffer_lint(BufferLinter(), project / "use.py", USE + DERIVED) == expected != []
    assert (project / ".autograd_lint_cache" / "scans.json").read_bytes() == stored


def test_a_walk_per_refresh_interval_and_after_a_save(project: Path, monkeypatch) -> None:
    """The server lints on every pause in typing: the project's files are
    listed and stamped at most once per refresh interval, and at once after a
    save (`forget`)."""
    import autograd_lint.core.files as files

    walks = []
    real = files.iter_python_files

    def counting(root, excluded):
        walks.append(root)
        return real(root, excluded)

    monkeypatch.setattr(files, "iter_python_files", counting)
    now = [100.0]
    linter = BufferLinter(refresh_seconds=2.0, clock=lambda: now[0])
    use = project / "use.py"
    assert buffer_lint(linter, use, USE + DERIVED) != []
    now[0] += 1.0
    buffer_lint(linter, use, USE)
    assert len(walks) == 1  # within the interval: the listing is reused
    # A new file is seen after a save, not before the interval ends.
    (project / "more.py").write_text(FUNCTIONS.replace("Base", "Other"))
    other = USE.replace("fns import Base, Cube", "more import Other") + \
        DERIVED.replace("Base", "Other")
    assert buffer_lint(linter, use, other) == []
    linter.forget()
    assert [code for _, code, _ in buffer_lint(linter, use, other)] == ["AGF001"]
    assert len(walks) == 2
    now[0] += 5.0
    buffer_lint(linter, use, other)
    assert len(walks) == 3


def test_excluded_files_are_no_context(project: Path) -> None:
    root = Path(project_root(str(project / "use.py")) or project)
    result = BufferLinter().lint(str(project / "use.py"), (USE + DERIVED).encode(),
                                 DEFAULT_CODES, lambda path, is_dir: path.endswith("fns.py"),
                                 root)
    assert result.findings == [] and result.errors == []  # Base is unknown: no Function


def test_a_buffer_outside_any_project_is_read_alone(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "fns.py").write_text(FUNCTIONS)
    if project_root(str(loose / "use.py")) is not None:
        pytest.skip("the temporary folder lies inside a project")
    assert buffer_lint(BufferLinter(), loose / "use.py", USE + DERIVED) == []
