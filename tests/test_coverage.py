"""`autograd-lint coverage`: a row per Function and op with how its gradients
are checked, a summary, JSON, and `--fail-under` (RULES.md, "The coverage
report"; issue 39)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main

FILES = {
    "pkg/ops.py": '''
        import torch


        class Checked(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x.cos()


        class Untested(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.exp()

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x.exp()


        class Indices(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.argmax(-1)
                ctx.mark_non_differentiable(out)
                return out

            @staticmethod
            def backward(ctx, grad):
                return None


        @torch.library.custom_op("cov::double", mutates_args=())
        def double(x: torch.Tensor) -> torch.Tensor:
            return x * 2


        @torch.library.custom_op("cov::triple", mutates_args=())
        def triple(x: torch.Tensor) -> torch.Tensor:
            return x * 3


        def _triple_backward(ctx, grad):
            return grad * 3


        triple.register_autograd(_triple_backward)
        ''',
    "tests/test_ops.py": '''
        import torch
        from torch.autograd import gradcheck

        from pkg.ops import Checked, double


        def test_checked():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert gradcheck(Checked.apply, (x,))


        def test_double():
            torch.library.opcheck(double, (torch.randn(3),))
        ''',
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "cov"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def coverage(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["coverage", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_row_per_function_and_op_with_how_it_is_checked(project: Path, capsys) -> None:
    code, out, err = coverage(capsys, "--format", "json", ".")
    assert code == 0, err
    data = json.loads(out)
    rows = {row["name"]: (row["kind"], row["status"], row["how"]) for row in data["rows"]}
    assert rows["Checked"][:2] == ("Function", "checked")
    assert rows["Checked"][2].startswith("gradcheck at tests/test_ops.py:")
    assert rows["Untested"] == ("Function", "none", "none")
    assert rows["Indices"] == ("Function", "exempt", "no differentiable output")
    assert rows["cov::double"][:2] == ("op", "checked")
    assert rows["cov::double"][2].startswith("opcheck at tests/test_ops.py:")
    assert rows["cov::triple"] == ("op", "none", "none")
    assert data["summary"] == "checked 1 of 2 Functions, 1 of 2 ops (50%)"
    assert data["percent"] == 50.0


def test_text_rows_and_the_summary_line(project: Path, capsys) -> None:
    code, out, _ = coverage(capsys, ".")
    lines = out.splitlines()
    assert code == 0 and lines[-1] == "checked 1 of 2 Functions, 1 of 2 ops (50%)"
    assert any(line.startswith("pkg/ops.py:16") and line.endswith("  none") for line in lines)
    code, out, _ = coverage(capsys, "--no-show-missing", ".")
    assert "none" not in out.replace("(50%)", "") and "Checked" in out


@pytest.mark.parametrize(("threshold", "expected"), [("40", 0), ("50", 0), ("60", 1)])
def test_fail_under_gates_ci_as_coverage_py_does(project: Path, capsys, threshold: str,
                                                 expected: int) -> None:
    code, _, err = coverage(capsys, "--fail-under", threshold, ".")
    assert code == expected
    assert ("below --fail-under" in err) is bool(expected)


def test_a_bad_threshold_is_one_error_line(project: Path, capsys) -> None:
    code, out, err = coverage(capsys, "--fail-under", "lots", ".")
    assert code == 2 and out == "" and err.count("\n") == 1


def test_write_tests_writes_one_per_unchecked_row_and_again_the_same(project: Path,
                                                                    capsys) -> None:
    """The written file is not counted as the check of what it is written for:
    a second run writes the same tests, not an empty file."""
    pytest.importorskip("torch")
    texts = []
    for _ in range(2):
        code, out, err = coverage(capsys, "--write-tests", "tests/test_written.py", ".")
        assert code == 0, err
        assert out.splitlines()[-1] == "checked 1 of 2 Functions, 1 of 2 ops (50%)"
        assert "wrote 2 tests to tests/test_written.py (0 skipped" in err
        texts.append((project / "tests" / "test_written.py").read_text())
    assert texts[0] == texts[1]
    assert "def test_Untested()" in texts[0] and "def test_op_cov_triple()" in texts[0]
    assert "def test_Checked()" not in texts[0]


OPS_WITHOUT_GRADIENTS = '''
import torch

lib = torch.library.Library("nograd", "DEF")
lib.define("pack(Tensor x) -> Tensor")
lib.define("blend(Tensor x) -> Tensor")


@torch.library.custom_op("nograd::quantize", mutates_args=())
def quantize(x: torch.Tensor) -> torch.Tensor:
    return x.round()


@torch.library.custom_op("nograd::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


scale.register_autograd(lambda ctx, grad: grad * 2)


@torch.library.impl("nograd::pack", "CPU")
def pack(x):
    return x.to(torch.uint8)


@torch.library.impl("nograd::blend", "CompositeImplicitAutograd")
def blend(x):
    return x * 0.5
'''


def test_ops_known_to_have_no_gradient_need_no_check(tmp_path: Path, monkeypatch,
                                                      capsys) -> None:
    """optimum-quanto's ops: defined with backend implementations only, and
    no autograd formula anywhere in the project, they have no gradient to
    check. An autograd formula, or an implementation autograd
    differentiates (CompositeImplicitAutograd), leaves the op to check."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'nograd'\n")
    (tmp_path / "ops.py").write_text(OPS_WITHOUT_GRADIENTS)
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    _, out, _ = coverage(capsys, ".", "--format", "json")
    rows = {row["name"]: (row["status"], row["how"]) for row in json.loads(out)["rows"]}
    exempt = ("exempt", "no autograd registration (not differentiable)")
    assert rows["nograd::quantize"] == exempt and rows["nograd::pack"] == exempt
    assert rows["nograd::scale"] == ("none", "none") == rows["nograd::blend"]
    # A formula registered under a name built at run time: which op gets it is not known.
    (tmp_path / "more.py").write_text(
        "import torch\n\n\ndef register(name, fn):\n"
        "    torch.library.register_autograd(name, fn)\n")
    _, out, _ = coverage(capsys, ".", "--format", "json")
    rows = {row["name"]: row["status"] for row in json.loads(out)["rows"]}
    assert rows["nograd::quantize"] == "none" == rows["nograd::pack"]
