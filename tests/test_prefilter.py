"""The prefilter (byte scan, relevance, sparse parsing) never changes findings
(but AGF000 of a statement no rule reads, which RULES.md leaves out).

A run with the prefilter must report exactly what a run that parses every file
whole reports: on a synthetic project built to stress the prefilter's guesses,
and on the installed torch package's source tree (about 2,300 files).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autograd_lint.core.findings import Finding
from autograd_lint.core.registry import TREE_ONLY_CODES
from autograd_lint.engine.lint import HUGE_BYTES, SPARSE_MIN_BYTES, SourceInput, lint_inputs

from .helpers import (
    ALL_CODES,
    finding_rows,
    leaky_function,
    lint_tree,
    torch_source_tree,
    write_tricky_project,
)


def run(root: Path, prefilter: bool, jobs: int = 1) -> list[Finding]:
    return lint_tree(root, ALL_CODES, prefilter=prefilter, jobs=jobs)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tricky_project(tmp_path)


@pytest.mark.parametrize("jobs", [1, 2])  # syntax checks in-process, or in a worker
def test_prefilter_keeps_every_finding_of_a_tricky_project(project: Path, jobs: int) -> None:
    filtered, whole = run(project, prefilter=True, jobs=jobs), run(project, prefilter=False)
    assert finding_rows(filtered) == finding_rows(whole)
    codes = {(Path(f.path).name, f.code) for f in filtered}
    # The project really exercises the rules the prefilter must not hide.
    assert {("ops.py", "AGF001"), ("ops.py", "AGF012"), ("ops.py", "AGF006"),
            ("app.py", "AGF105"), ("crlf.py", "AGF001"), ("broken.py", "AGF000"),
            ("derived.py", "AGF301"), ("via_alias.py", "AGF105"),
            ("via_package.py", "AGF105"), ("base_alias.py", "AGF001"),
            ("test_suite.py", "AGF001"), ("test_suite.py", "AGF105"), ("helpers.py", "AGF006"),
            ("test_ns.py", "AGF105")} <= codes
    assert not any(name == "unrelated.py" for name, _ in codes)
    assert [f.code for f in filtered if Path(f.path).name == "legacy.py"] == ["AGF000"]
    assert not any(f.function and f.function.startswith("NotReal") for f in filtered)


@pytest.mark.skipif(torch_source_tree() is None, reason="torch is not installed")
def test_prefilter_keeps_every_finding_on_the_torch_tree() -> None:
    tree = torch_source_tree()
    assert tree is not None
    filtered = run(tree, prefilter=True)
    whole = run(tree, prefilter=False)
    assert finding_rows(filtered) == finding_rows(whole)
    assert len(filtered) > 50  # the tree has real findings, so the comparison means something


# ---------------------------------------------------------------------------
# A file scanned in a tree reports what it reports named alone
# ---------------------------------------------------------------------------
def named_and_scanned(path: Path) -> tuple[list[tuple], list[tuple]]:
    """The file's findings named alone, and in a scan of its folder (the
    prefilter and, past SPARSE_MIN_BYTES, the sparse parse); rules that
    only a tree scan applies are left out."""
    named = lint_inputs([SourceInput(path, str(path), ALL_CODES, explicit=True)], jobs=1)
    assert not named.errors, named.errors
    scanned = lint_tree(path.parent, ALL_CODES, jobs=1)
    return tuple(finding_rows(f for f in findings if f.code not in TREE_ONLY_CODES)
                 for findings in (named.findings, scanned))  # type: ignore[return-value]


LEAKY = "import torch\n\n\n" + leaky_function()  # AGF001 on line 7
# Code no rule reads, past SPARSE_MIN_BYTES: the file is parsed sparsely.
PADDING = "".join(f"def filler_{n}(x):\n    return x + {n}\n\n\n"
                  for n in range(SPARSE_MIN_BYTES // 30))
SPELLINGS = {
    "form feed before class": LEAKY.replace("class Leaky", "\x0cclass Leaky"),
    "form feeds inside the header": LEAKY.replace("class Leaky(", "class\x0cLeaky\x0c("),
    "vertical tab before class": LEAKY.replace("class Leaky", "\x0bclass Leaky"),  # AGF000
    "lone carriage returns": LEAKY.replace("\n", "\r"),
    "type parameters": LEAKY.replace("class Leaky(", "class Leaky[T]("),  # 3.12+
    "comment in the bases": LEAKY.replace("class Leaky(", "class Leaky(  # f(): x\n    "),
    # A form feed sets the column back to 0: this import is a statement of its own.
    "form feed before a statement": "x = 1\n  \x0cfrom torch.autograd import Function as Base\n"
    + leaky_function().replace("torch.autograd.Function", "Base"),
}


@pytest.mark.parametrize("pad", [False, True], ids=["small", "sparse"])
@pytest.mark.parametrize("label", list(SPELLINGS))
def test_headers_in_any_spelling_the_parser_reads_are_scanned(tmp_path: Path, label: str,
                                                              pad: bool) -> None:
    text = SPELLINGS[label]
    if pad:  # in the lines' own endings
        text = PADDING.replace("\n", "\r" if "\r" in text else "\n") + text
    path = tmp_path / "mod.py"
    path.write_bytes(text.encode())
    named, scanned = named_and_scanned(path)
    assert named, "the file has findings, so the comparison means something"
    assert scanned == named


def test_a_backslash_line_keeps_the_method_after_it(tmp_path: Path) -> None:
    source = PADDING + textwrap.dedent('''
        import torch


        class Saved(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2
        \\
            @staticmethod
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * 2
        ''')
    path = tmp_path / "mod.py"
    path.write_text(source)
    named, scanned = named_and_scanned(path)
    assert not any(code == "AGF106" for _, _, _, code, _ in named)  # backward is there
    assert scanned == named


@pytest.mark.parametrize("named", [True, False], ids=["named", "scanned"])
def test_files_too_large_to_parse_whole_still_report_syntax_errors(tmp_path: Path,
                                                                   named: bool) -> None:
    rows = "".join(f'ROW_{n} = "{"x" * 1000}"\n' for n in range(HUGE_BYTES // 1000))
    path = tmp_path / "huge.py"
    for tail, broken in (("", False), ("def broken(:\n    pass\n", True)):
        path.write_text(LEAKY + rows + tail)
        result = lint_inputs([SourceInput(path, str(path), ALL_CODES, explicit=named)],
                             scan_tree=not named, jobs=1)
        assert not result.errors
        codes = [(f.line, f.code) for f in result.findings]
        if broken:  # as a whole parse says it (too slow and large to run here)
            assert codes == [(LEAKY.count("\n") + HUGE_BYTES // 1000 + 1, "AGF000")]
        else:
            assert (7, "AGF001") in codes and "AGF000" not in {code for _, code in codes}


def test_a_syntax_error_in_a_statement_the_run_does_not_read_is_not_reported(
        tmp_path: Path) -> None:
    """AGF000 covers what the run reads (RULES.md): of a file parsed sparsely,
    a syntax error in a statement no rule reads is left to ruff's and
    flake8's syntax errors; the Function's findings stand. Parsed whole
    (`--no-prefilter`), the file fails as Python would."""
    rows = "".join(f'ROW_{n} = "{"x" * 100}"\n' for n in range(SPARSE_MIN_BYTES // 100 + 10))
    path = tmp_path / "large.py"
    path.write_text(LEAKY + rows + "def broken(:\n    pass\n")
    filtered, whole = run(tmp_path, prefilter=True), run(tmp_path, prefilter=False)
    assert (7, "AGF001") in {(f.line, f.code) for f in filtered}
    assert "AGF000" not in {f.code for f in filtered}
    assert [f.code for f in whole] == ["AGF000"]


HELPER_WRITES = '''import torch


def scale_(t, factor):
    t.mul_(factor)
    return t


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return scale_(x, 2.0)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.0
'''


def test_helpers_of_a_file_with_an_unread_syntax_error_are_still_read(tmp_path: Path) -> None:
    """The file's whole text does not parse, so the helpers the analysis
    asks for are read statement by statement: the findings are the mended
    file's, not fewer."""
    path = tmp_path / "large.py"
    path.write_text(HELPER_WRITES + PADDING + "def mended(x):\n    return x\n")
    mended = [(f.line, f.code) for f in run(tmp_path, prefilter=True)]
    assert (12, "AGF012") in mended  # (the helper writes the input in place)
    path.write_text(HELPER_WRITES + PADDING + "def broken(:\n    return x\n")
    assert [(f.line, f.code) for f in run(tmp_path, prefilter=True)] == mended


# ---------------------------------------------------------------------------
# Large files that register a custom op's autograd
# ---------------------------------------------------------------------------
_OP_REGISTRATIONS = {
    # The op's Python object registers its callbacks.
    "method": 'scale.register_autograd(backward, setup_context=setup_context)',
    # torch.library's function, by the op's name.
    "function": 'torch.library.register_autograd("mylib::{name}", backward, '
                'setup_context=setup_context)',
}
_OP_BODY = '''\
import torch


{padding_before}
def setup_context(ctx, inputs, output):
    x, s = inputs
    ctx.x = x
    ctx.s = s


def backward(ctx, grad):
    grad.mul_(ctx.s)
    return grad, None


@torch.library.custom_op("mylib::{name}", mutates_args=())
def scale(x: torch.Tensor, s: float) -> torch.Tensor:
    return x * s


{registration}
{padding_after}
'''


def _helpers(count: int, prefix: str) -> str:
    return "".join(f"def {prefix}_{i}(a, b):\n    return a + b * {i}\n\n\n"
                   for i in range(count))


@pytest.mark.parametrize("registration", sorted(_OP_REGISTRATIONS))
@pytest.mark.parametrize("where", ["before", "after"])
def test_a_large_file_keeps_the_findings_of_its_op_callbacks(
        tmp_path: Path, registration: str, where: str) -> None:
    """The sparse parse keeps an op's registration but not always the defs it
    names; the op's setup_context and backward are checked all the same."""
    padding = _helpers(600, "helper")
    text = _OP_BODY.format(name=f"op_{registration}",
                           registration=_OP_REGISTRATIONS[registration].format(
                               name=f"op_{registration}"),
                           padding_before=padding if where == "before" else "",
                           padding_after=padding if where == "after" else "")
    (tmp_path / "big_ops.py").write_text(text)
    assert len(text) > SPARSE_MIN_BYTES
    filtered, whole = run(tmp_path, prefilter=True), run(tmp_path, prefilter=False)
    assert finding_rows(filtered) == finding_rows(whole)
    assert {"AGF001", "AGF006"} <= {f.code for f in filtered}
