"""Jupyter notebooks (`.ipynb`): code cells checked as one module, findings
shown at their cell and line, fixes written back into the cells. Every
notebook here is written by nbformat and read back by it."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.notebooks import cell_python

from .helpers import ROOT

CUBE = textwrap.dedent('''\
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x ** 3

        @staticmethod
        def backward(ctx, grad_output):
            grad_output.mul_(3)
            return grad_output * ctx.x ** 2''')
# In CUBE: AGF001 at line 4 (`ctx.x = x`), AGF006 at line 9 (`grad_output.mul_`).


def write_notebook(path: Path, *cells: str | tuple[str, str],
                   language: str | None = "python") -> Path:
    """A notebook of these cells: code, or ("markdown", text)."""
    notebook = nbformat.v4.new_notebook()
    if language is not None:
        notebook.metadata["kernelspec"] = {"name": "k", "display_name": "k",
                                           "language": language}
    notebook.cells = [nbformat.v4.new_markdown_cell(cell[1]) if isinstance(cell, tuple)
                      else nbformat.v4.new_code_cell(cell) for cell in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(path))
    return path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    # CUBE's findings, AGF001 and AGF006, are pedantic (off by default): on,
    # unless the test selects its own rules.
    pedantic = [] if "--select" in args else ["--extend-select", "AGF001,AGF006"]
    code = main(["check", "--isolated", "--no-cache", *pedantic, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def json_findings(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    code, out, err = check(capsys, "--format", "json", *args)
    assert code in (0, 1), err
    return json.loads(out)


# ---------------------------------------------------------------------------
# The README's example Functions, in a notebook
# ---------------------------------------------------------------------------
def readme_examples() -> list[Path]:
    """The example files the README's first console sample checks."""
    text = (ROOT / "README.md").read_text()
    folder = re.search(r"\$ autograd-lint check --format concise (\S+)/\n", text)
    assert folder is not None
    return sorted((ROOT / folder.group(1)).glob("*.py"))


MAGIC = "%matplotlib inline\n!pip install torch\n"


def as_cells(source: str) -> tuple[list[str], list[tuple[int, int, int]]]:
    """The file split into code cells before its second and third top-level
    class or def (the first with IPython's magic and shell lines in front),
    and for each cell: (first line of the file in it, its number among the
    notebook's cells (a markdown cell comes first), lines added in front)."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if re.match(r"(class|def) ", line)]
    cuts = [0, *starts[1:3], len(lines)]
    cells, where = [], []
    for k, (start, end) in enumerate(pairwise(cuts)):
        text = "".join(lines[start:end]).rstrip("\n")
        cells.append(MAGIC + text if k == 0 else text)
        where.append((start + 1, k + 2, 2 if k == 0 else 0))
    return cells, where


def in_cell(line: int, where: list[tuple[int, int, int]]) -> tuple[int, int]:
    first, number, added = max(w for w in where if w[0] <= line)
    return number, line - first + 1 + added


def lines_in_cells(message: str, where: list[tuple[int, int, int]]) -> str:
    """`(line 9)` of the file as the notebook's `(cell 3, line 6)`."""
    return re.sub(r"\(line (\d+)\)",
                  lambda m: "(cell {}, line {})".format(*in_cell(int(m.group(1)), where)),
                  message)


def test_readme_examples_in_a_notebook_match_the_py_files(tmp_path: Path, capsys) -> None:
    """Done-when of issue 29: a notebook holding the README's example
    Functions gets the same findings as the `.py` file, at the right cell and
    line (also the lines messages name)."""
    compared = 0
    for example in readme_examples():
        cells, where = as_cells(example.read_text())
        notebook = write_notebook(tmp_path / f"{example.stem}.ipynb", ("markdown", "# Example"),
                                  *cells)
        expected = json_findings(capsys, str(example))
        found = json_findings(capsys, str(notebook))
        assert len(found) == len(expected), example.name
        for py, nb in zip(expected, found, strict=True):
            cell, line = in_cell(py["line"], where)
            message = lines_in_cells(py["message"], where)
            assert (nb["cell"], nb["line"], nb["end_line"]) == (
                cell, line, in_cell(py["end_line"], where)[1])
            assert {k: nb[k] for k in ("code", "column", "end_column", "function")} == \
                {k: py[k] for k in ("code", "column", "end_column", "function")}
            assert nb["message"] == message
            compared += 1
        _, text, _ = check(capsys, "--format", "concise", str(notebook))
        shown = [line.partition(" [")[0] for line in text.splitlines() if ": AGF" in line]
        assert shown == [f"{notebook}:cell {f['cell']}:{f['line']}:{f['column'] + 1}: "
                         f"{f['code']}" for f in found]
    assert compared >= 8  # the examples with AGF001 and AGF006 on: 8 findings in 2 files


def test_a_message_naming_a_line_names_its_cell(tmp_path: Path, capsys) -> None:
    notebook = write_notebook(
        tmp_path / "twice.ipynb", "import torch",
        "class Twice(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n        ctx.save_for_backward(x)\n        return x\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g")
    (finding,) = json_findings(capsys, str(notebook), "--select", "AGF004")
    assert (finding["cell"], finding["line"]) == (2, 5)
    assert "(cell 2, line 4)" in finding["message"]


# ---------------------------------------------------------------------------
# IPython's syntax
# ---------------------------------------------------------------------------
IPYTHON_CELLS = (
    "%matplotlib inline\n%load_ext autoreload\n!pip install torch\n!!ls\nimport torch\n"
    "files = !ls\nt = %timeit -o sum(range(3))\ntorch?\n??torch\ntorch.*rand*?\n"
    "%time torch.ones(2, \\\n    3)",
    "%%bash\necho 'not python: (' \nfor x in *; do :; done",
    "%%time\n" + CUBE,
    "if True:\n    %time torch.ones(2)\n    !echo hi\nvalue = (3\n         % 2)\n"
    "text = '''\n!not an escape in a string\n%neither\n'''",
)


def test_magics_and_shell_escapes_are_never_syntax_errors(tmp_path: Path, capsys) -> None:
    notebook = write_notebook(tmp_path / "magic.ipynb", *IPYTHON_CELLS)
    found = json_findings(capsys, str(notebook))
    # The Function under `%%time` is checked, at its own lines.
    assert [(f["code"], f["cell"], f["line"]) for f in found] == [
        ("AGF001", 3, 5), ("AGF006", 3, 10)]


def test_the_python_of_a_cell_keeps_every_line() -> None:
    lines = cell_python("if x:\n    %time f()\nvalue = (3\n% 2)\n!ls \\\n  -l\ny?\n")
    assert lines == ["if x:\n", "    pass\n", "value = (3\n", "% 2)\n", "\n", "\n", "\n"]
    assert cell_python("%%html\n<b>(</b>") == ["\n", ""]


def test_a_notebook_in_another_language_is_not_read(tmp_path: Path, capsys) -> None:
    notebook = write_notebook(tmp_path / "r.ipynb", "import torch\n" + CUBE + "\n(",
                              language="R")
    assert check(capsys, str(notebook))[0] == 0
    python = write_notebook(tmp_path / "py.ipynb", "import torch\n" + CUBE, language=None)
    assert {f["code"] for f in json_findings(capsys, str(python))} == {"AGF001", "AGF006"}


# ---------------------------------------------------------------------------
# Syntax errors and files that are not notebooks
# ---------------------------------------------------------------------------
def test_a_syntax_error_is_reported_at_its_cell(tmp_path: Path, capsys) -> None:
    notebook = write_notebook(tmp_path / "broken.ipynb", ("markdown", "# Notes"),
                              "import torch\n" + CUBE, "%time 1\nx = 1\ndef f(:\n    pass")
    code, out, err = check(capsys, "--format", "concise", str(notebook))
    assert code == 1 and err == ""
    assert out.startswith(f"{notebook}:cell 3:3:7: AGF000 ")


@pytest.mark.parametrize(("text", "said"), [
    ("{not json", "is JSON, and this file is not"),
    ('{"nbformat": 3, "worksheets": []}', "nbformat 3: only nbformat 4 is read"),
    ('["a list"]', "no `nbformat` version"),
])
def test_a_file_that_is_not_a_notebook_is_one_syntax_error(text: str, said: str,
                                                           tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    (finding,) = json_findings(capsys, str(path))
    assert finding["code"] == "AGF000" and said in finding["message"]
    assert "cell" not in finding and finding["line"] == 1
    # In a directory scan too (it may hold anything, as ruff reports it).
    assert [f["code"] for f in json_findings(capsys, str(tmp_path))] == ["AGF000"]


def test_a_bad_notebook_never_shows_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.ipynb").write_text('{"nbformat": 4, "cells": [{"source": 3, '
                                        '"cell_type": "code"}]}')
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--no-cache",
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert "cell 1: `source` is not text" in proc.stdout


# ---------------------------------------------------------------------------
# Suppressions
# ---------------------------------------------------------------------------
def test_noqa_in_a_cell(tmp_path: Path, capsys) -> None:
    plain = write_notebook(tmp_path / "plain.ipynb", "import torch", CUBE)
    assert {f["code"] for f in json_findings(capsys, str(plain))} == {"AGF001", "AGF006"}
    line = write_notebook(tmp_path / "line.ipynb", "import torch",
                          CUBE.replace("ctx.x = x", "ctx.x = x  # noqa: AGF001"))
    assert [f["code"] for f in json_findings(capsys, str(line))] == ["AGF006"]
    whole = write_notebook(tmp_path / "whole.ipynb", "import torch", CUBE,
                           "# autograd-lint: noqa: AGF006")
    assert [f["code"] for f in json_findings(capsys, str(whole))] == ["AGF001"]


# ---------------------------------------------------------------------------
# Fixes
# ---------------------------------------------------------------------------
USE = "x = torch.ones(3)\ny = Cube()(x)"


def fixable_notebook(path: Path) -> Path:
    """Cells: markdown, magics and imports (with an output), the Function, its use."""
    write_notebook(path, ("markdown", "# Cube"), "%matplotlib inline\nimport torch", CUBE, USE)
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", text="ok\n")]
    notebook.cells[1].execution_count = 1
    notebook.cells[2].metadata["tags"] = ["keep"]
    nbformat.write(notebook, str(path))
    return path


def test_fix_writes_back_only_the_fixed_cell(tmp_path: Path, capsys) -> None:
    path = fixable_notebook(tmp_path / "fix.ipynb")
    before_text = path.read_text()
    before = nbformat.read(str(path), as_version=4)
    code, out, _ = check(capsys, "--fix", str(path))
    assert "1 fixed" in out
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert after.cells[3].source == "x = torch.ones(3)\ny = Cube.apply(x)"
    for old, new in zip(before.cells[:3], after.cells[:3], strict=True):
        assert old == new  # sources, outputs, metadata, ids
    assert after.metadata == before.metadata
    # nbformat's layout is kept: only the fixed line of the JSON text changed.
    changed = [(old, new) for old, new in zip(before_text.splitlines(),
                                              path.read_text().splitlines(), strict=True)
               if old != new]
    assert changed == [('    "y = Cube()(x)"', '    "y = Cube.apply(x)"')]
    assert check(capsys, "--fix", str(path))[1].count("fixed") == 0
    assert path.read_text().endswith("}\n")


def test_an_inserting_fix_lands_in_its_cell(tmp_path: Path, capsys) -> None:
    path = fixable_notebook(tmp_path / "fix.ipynb")
    before = nbformat.read(str(path), as_version=4)
    check(capsys, "--fix", "--unsafe-fixes", "--select", "AGF006", str(path))
    after = nbformat.read(str(path), as_version=4)
    assert after.cells[2].source == CUBE.replace(
        "def backward(ctx, grad_output):\n",
        "def backward(ctx, grad_output):\n        grad_output = grad_output.clone()\n")
    assert [c.source for c in after.cells if c is not after.cells[2]] == \
        [c.source for c in before.cells if c is not before.cells[2]]
    assert after.cells[2].metadata["tags"] == ["keep"]


def test_diff_shows_the_cell_and_writes_nothing(tmp_path: Path, capsys) -> None:
    path = fixable_notebook(tmp_path / "fix.ipynb")
    before = path.read_bytes()
    code, out, err = check(capsys, "--diff", str(path))
    assert code == 1 and path.read_bytes() == before
    assert out == (f"--- a/{path}:cell 4\n+++ b/{path}:cell 4\n@@ -1,2 +1,2 @@\n"
                   " x = torch.ones(3)\n-y = Cube()(x)\n+y = Cube.apply(x)\n")
    assert "Would fix 1 finding" in err


# ---------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------
def test_json_sarif_and_github_show_the_cell(tmp_path: Path, capsys) -> None:
    path = fixable_notebook(tmp_path / "out.ipynb")
    found = json_findings(capsys, str(path), "--select", "AGF105,AGF006")
    assert [(f["code"], f["cell"], f["line"]) for f in found] == [("AGF006", 3, 9),
                                                                   ("AGF105", 4, 2)]
    assert list(found[1])[:3] == ["path", "cell", "line"]
    (edit,) = found[1]["fix"]["edits"]
    assert (edit["cell"], edit["line"], edit["column"]) == (4, 2, 8)
    _, out, _ = check(capsys, "--format", "sarif", "--select", "AGF105", str(path))
    (result,) = json.loads(out)["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], result["properties"]) == (
        2, 5, {"cell": 4})
    _, out, _ = check(capsys, "--format", "github", "--select", "AGF105", str(path))
    assert out.startswith(f"::error file={path},line=2,col=5,")
    assert "title=AGF105 (function-instantiated) in cell 4::" in out
    # A .py file's findings keep their keys.
    (tmp_path / "ops.py").write_text("import torch\n" + CUBE + "\n")
    assert "cell" not in json_findings(capsys, str(tmp_path / "ops.py"))[0]


def test_pylint_gitlab_junit_and_json_lines_show_the_cell(tmp_path: Path, capsys) -> None:
    import xml.etree.ElementTree as ElementTree

    path = fixable_notebook(tmp_path / "out.ipynb")
    _, out, _ = check(capsys, "--format", "pylint", "--select", "AGF105", str(path))
    assert out.startswith(f"{path}:cell 4:2: [AGF105] ")
    _, out, _ = check(capsys, "--format", "gitlab", "--select", "AGF105", str(path))
    (issue,) = json.loads(out)
    assert issue["location"]["positions"]["begin"] == {"line": 2, "column": 5}
    assert issue["description"].endswith("(cell 4)")
    _, out, _ = check(capsys, "--format", "junit", "--select", "AGF105", str(path))
    case = ElementTree.fromstring(out).find("testsuite/testcase")
    assert (case.get("line"), case.get("column")) == ("2", "5")
    assert case.find("failure").text.startswith("cell 4, line 2, col 5, ")
    _, out, _ = check(capsys, "--format", "json-lines", "--select", "AGF105", str(path))
    assert (json.loads(out)["cell"], json.loads(out)["line"]) == (4, 2)


def test_add_noqa_leaves_a_notebook_alone_and_unused_noqa_works_in_cells(
        tmp_path: Path, capsys) -> None:
    path = fixable_notebook(tmp_path / "nb.ipynb")
    before = path.read_bytes()
    code, _, err = check(capsys, "--add-noqa", str(path))
    assert code == 0 and path.read_bytes() == before and "Added 0 noqa directives." in err
    stale = write_notebook(tmp_path / "stale.ipynb", "import torch",
                           CUBE.replace("ctx.x = x", "ctx.x = x  # noqa: AGF001, AGF105"))
    found = json_findings(capsys, "--extend-select", "AGF901", str(stale))
    assert [(f["code"], f["cell"], f["line"]) for f in found] == [
        ("AGF901", 2, 4), ("AGF006", 2, 9)]




# ---------------------------------------------------------------------------
# Discovery, exclusion, cache
# ---------------------------------------------------------------------------
def test_notebooks_under_a_folder_are_found_as_py_files_are(tmp_path: Path, capsys,
                                                            monkeypatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored/\n")
    for folder in ("nbs", "nbs/.ipynb_checkpoints", "skipped", "ignored"):
        write_notebook(tmp_path / folder / "a.ipynb", "import torch\n" + CUBE)
    write_notebook(tmp_path / "nbs" / "plain.ipynb", "print('no Function here')")
    monkeypatch.chdir(tmp_path)
    found = json_findings(capsys, ".", "--extend-exclude", "skipped", "--ignore", "AGF301")
    assert {f["path"] for f in found} == {"nbs/a.ipynb"}
    assert json_findings(capsys, ".", "--extend-exclude", "*.ipynb") == []
    # A named notebook is checked whatever the globs say, as a named .py file is.
    assert json_findings(capsys, "skipped/a.ipynb", "--extend-exclude", "skipped") != []


def test_the_cache_keys_on_the_notebook(tmp_path: Path, capsys, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.autograd-lint]\nextend-select = ["AGF001", "AGF006"]\n')
    path = write_notebook(tmp_path / "nb" / "a.ipynb", "import torch", CUBE)
    monkeypatch.chdir(tmp_path)

    def codes() -> list[str]:
        assert main(["check", ".", "--format", "json"]) == 1
        return [f["code"] for f in json.loads(capsys.readouterr().out) if f["code"] != "AGF301"]

    assert codes() == codes() == ["AGF001", "AGF006"]
    assert (tmp_path / ".autograd_lint_cache" / "files.json").exists()
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells[1].source = notebook.cells[1].source.replace("ctx.x = x", "x = x")
    nbformat.write(notebook, str(path))
    assert codes() == ["AGF006"]


def test_a_notebook_uses_the_functions_of_its_project(tmp_path: Path, capsys,
                                                      monkeypatch) -> None:
    """The byte scan reads a notebook's code, not its JSON: its imports lead
    to the project's Functions, in a folder's scan and beside a named notebook."""
    (tmp_path / "pyproject.toml").write_text("[tool.autograd-lint]\n")
    (tmp_path / "ops.py").write_text(
        "import torch\n\n\n" + CUBE.replace("ctx.x = x", "ctx.save_for_backward(x)")
        .replace("grad_output.mul_(3)", "(x,) = ctx.saved_tensors")
        .replace("ctx.x ** 2", "x ** 2") + "\n")
    write_notebook(tmp_path / "nbs" / "use.ipynb", "%matplotlib inline\nimport torch",
                   "from ops import Cube\ny = Cube()(torch.ones(2))",
                   "import ops\nOld = ops.Cube\nz = Old()(torch.ones(2))")
    monkeypatch.chdir(tmp_path)
    for paths in (["."], ["nbs/use.ipynb"]):
        found = json_findings(capsys, *paths, "--ignore", "AGF301")
        assert [(f["path"], f["code"], f["cell"], f["line"]) for f in found] == [
            ("nbs/use.ipynb", "AGF105", 2, 2), ("nbs/use.ipynb", "AGF105", 3, 3)], paths
