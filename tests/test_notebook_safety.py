"""Notebooks as they come, not as nbformat writes them: `--fix` changes
nothing of the file but the fixed cells' source (numbers, escapes, duplicate
keys elsewhere stay byte for byte), and a cell or output holding an escape
UTF-8 cannot hold (a lone surrogate) costs at most that notebook's finding."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main

FUNCTION = [
    "import torch\n",
    "class Cube(torch.autograd.Function):\n",
    "    @staticmethod\n",
    "    def forward(ctx, x):\n",
    "        return x ** 3\n",
    "\n",
    "    @staticmethod\n",
    "    def backward(ctx, g):\n",
    "        return g * 3\n",
]
# What the README promises to leave alone, spelt as json.dumps never spells it:
# an exponent in capitals, an escaped slash, an escaped non-ASCII letter, a key
# given twice (json.loads keeps the last).
ODD_METADATA = '{"scale": 1.0E-5, "scale": 2, "path": "a\\/b", "name": "caf\\u00e9"}'
ODD_OUTPUT = ('{"name": "stdout", "output_type": "stream", '
              '"text": ["1.0E-5 a\\/b caf\\u00e9\\n", "\\u00e9t\\u00e9"]}')


def _lines(cell: list[str], indent: str) -> str:
    """nbformat's list of lines, one per line at `indent`."""
    inner = ",\n".join(indent + " " + json.dumps(line, ensure_ascii=False) for line in cell)
    return "[\n" + inner + "\n" + indent + "]"


def nbformat_layout(use: list[str]) -> str:
    """One-space indentation, sources as lists of lines, the edited cell's
    source spelt as given (`use`: JSON string tokens)."""
    use_lines = "[\n" + ",\n".join("    " + token for token in use) + "\n   ]"
    return (
        '{\n "cells": [\n'
        '  {\n   "cell_type": "code",\n   "execution_count": 1,\n'
        f'   "metadata": {ODD_METADATA},\n'
        f'   "outputs": [{ODD_OUTPUT}],\n'
        f'   "source": {_lines(FUNCTION, "   ")}\n  }},\n'
        '  {\n   "cell_type": "code",\n   "execution_count": null,\n   "metadata": {},\n'
        f'   "outputs": [],\n   "source": {use_lines}\n  }}\n ],\n'
        f' "metadata": {{"kernelspec": {{"language": "python", "name": "python3", '
        f'"display_name": "Python 3"}}, "odd": {ODD_METADATA}}},\n'
        ' "nbformat": 4,\n "nbformat_minor": 5\n}\n')


def one_line_layout(use: list[str]) -> str:
    """A compact file on one line, sources as single strings."""
    function = json.dumps("".join(FUNCTION))
    source = '"' + "".join(token[1:-1] for token in use) + '"'
    return ('{"cells":[{"cell_type":"code","execution_count":1,'
            f'"metadata":{ODD_METADATA},"outputs":[{ODD_OUTPUT}],"source":{function}}},'
            '{"cell_type":"code","execution_count":null,"metadata":{},"outputs":[],'
            f'"source":{source}}}],"metadata":{ODD_METADATA},"nbformat":4,"nbformat_minor":5}}')


USE = ['"x = torch.ones(3)  # a\\/b\\n"', '"y = Cube()(x)"']
# The edited line holds a non-ASCII letter: escaped in an ASCII file, as it is in another.
USE_ESCAPED = ['"x = torch.ones(3)\\n"', '"y = Cube()(x)  # caf\\u00e9"']
USE_LITERAL = ['"x = torch.ones(3)  # \u00e9t\u00e9\\n"', '"y = Cube()(x)  # caf\u00e9"']
LAYOUTS = {
    "nbformat": nbformat_layout(USE),
    "nbformat, CRLF": nbformat_layout(USE).replace("\n", "\r\n"),
    "nbformat, escaped non-ASCII": nbformat_layout(USE_ESCAPED),
    "nbformat, literal non-ASCII": nbformat_layout(USE_LITERAL),
    "one line": one_line_layout(USE),
    "one line, escaped non-ASCII": one_line_layout(USE_ESCAPED),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_fix_changes_nothing_but_the_fixed_cell_source(tmp_path: Path, layout: str,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    before = LAYOUTS[layout]
    assert before.count("Cube()(x)") == 1
    path = tmp_path / "nb.ipynb"
    path.write_bytes(before.encode("utf-8"))
    code = main(["check", "--isolated", "--no-cache", "--fix", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "1 fixed" in out, out
    assert path.read_bytes().decode("utf-8") == before.replace("Cube()(x)", "Cube.apply(x)")


# ---------------------------------------------------------------------------
# Lone surrogates
# ---------------------------------------------------------------------------
SURROGATE_CELL = ['"x = \'\\ud800\'\\n"']  # JSON's escape of a lone surrogate
FINDING = "".join(FUNCTION) + "\n\ny = Cube()(torch.ones(3))\n"
FORMATS = ["text", "full", "concise", "json", "json-lines", "sarif", "github", "gitlab",
           "junit", "pylint"]


def _surrogate_project(root: Path) -> None:
    """A notebook whose code cell holds a lone surrogate, and beside it a
    Python file and a notebook with a finding each."""
    (root / "bad.ipynb").write_text(nbformat_layout(SURROGATE_CELL), encoding="utf-8")
    (root / "good.ipynb").write_text(nbformat_layout(USE), encoding="utf-8")
    (root / "use.py").write_text(FINDING, encoding="utf-8")


@pytest.mark.parametrize("output_format", FORMATS)
def test_a_lone_surrogate_in_a_code_cell_is_that_notebooks_finding(
        tmp_path: Path, output_format: str, capsys: pytest.CaptureFixture[str]) -> None:
    _surrogate_project(tmp_path)
    code = main(["check", "--isolated", "--no-cache", "--format", output_format,
                 str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert "error" not in captured.err, captured.err
    for name in ("bad.ipynb", "good.ipynb", "use.py"):
        assert name in captured.out, (name, captured.out)
    if output_format == "junit":
        ElementTree.fromstring(captured.out)  # still a well-formed report
    elif output_format in ("json", "sarif", "gitlab"):
        json.loads(captured.out)


def test_a_lone_surrogate_in_a_code_cell_is_agf000(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _surrogate_project(tmp_path)
    assert main(["check", "--isolated", "--no-cache", "--format", "json",
                 str(tmp_path)]) == 1
    found = [(Path(f["path"]).name, f["code"], f["message"])
             for f in json.loads(capsys.readouterr().out)]
    [bad] = [f for f in found if f[0] == "bad.ipynb"]
    assert bad[1] == "AGF000" and "cell 2: its source holds a lone surrogate" in bad[2]
    assert ("good.ipynb", "AGF105") in {f[:2] for f in found}
    assert ("use.py", "AGF105") in {f[:2] for f in found}
    # --fix fixes the others and leaves that notebook as it is.
    bad_bytes = (tmp_path / "bad.ipynb").read_bytes()
    assert main(["check", "--isolated", "--no-cache", "--fix", str(tmp_path)]) == 1
    assert "2 fixed" in capsys.readouterr().out
    assert (tmp_path / "bad.ipynb").read_bytes() == bad_bytes
    assert "Cube.apply(torch.ones(3))" in (tmp_path / "use.py").read_text()


def test_a_lone_surrogate_in_an_output_does_not_stop_fixes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A non-ASCII notebook (written with non-ASCII as it is) whose output
    holds an escaped lone surrogate: the code cells are fixed, the output
    keeps its escape."""
    before = nbformat_layout(USE_LITERAL).replace('"\\u00e9t\\u00e9"', '"\\ud800"')
    assert '"\\ud800"' in before and not before.isascii()
    folder = tmp_path / "nbs"
    folder.mkdir()
    path = folder / "nb.ipynb"
    path.write_text(before, encoding="utf-8")
    code = main(["check", "--isolated", "--no-cache", "--fix", str(folder)])
    captured = capsys.readouterr()
    assert code == 0 and "1 fixed" in captured.out, captured.err
    assert path.read_text(encoding="utf-8") == before.replace("Cube()(x)", "Cube.apply(x)")
