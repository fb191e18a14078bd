"""Autofix: `--fix`, `--unsafe-fixes`, `--diff`."""
from __future__ import annotations

import importlib.util
import json
import os
import stat
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.findings import SAFE, Edit, Finding, Fix
from autograd_lint.core.registry import FIX_SAFETY, RULES, default_codes
from autograd_lint.engine.lint import lint_source
from autograd_lint.reporting.fixes import apply_fixes

HEADER = "import torch\n\n\n"


# The rules these tests exercise, whatever their tier (off by default: AGF001, AGF006
# and AGF008 pedantic, AGF103 and AGF213 style).
FIXABLE = ("--extend-select", "AGF001,AGF006,AGF008,AGF103,AGF213")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--isolated", "--no-cache", *FIXABLE, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def fixed(tmp_path: Path, capsys, source: str, *flags: str) -> str:
    path = tmp_path / "ops.py"
    path.write_text(source)
    run(capsys, "--fix", *flags, str(path))
    return path.read_text()


# Each case: code, source, the text after `--fix` (plus --unsafe-fixes for unsafe rules).
CASES = {
    "AGF103": (HEADER + textwrap.dedent('''\
        class Double(torch.autograd.Function):
            # forward doubles
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''), "    # forward doubles\n    @staticmethod\n    def forward(ctx, x):"),
    "AGF105": (HEADER + textwrap.dedent('''\
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2


        def double(x):
            return Double()(x)  # legacy
        '''), "    return Double.apply(x)  # legacy\n"),
    "AGF008": (HEADER + textwrap.dedent('''\
        class Shift(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x + x.data.sum()

            @staticmethod
            def backward(ctx, grad):
                return grad
        '''), "        return x + x.detach().sum()\n"),
    "AGF213": (HEADER + textwrap.dedent('''\
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_variables
                return 2 * x * grad
        '''), "        (x,) = ctx.saved_tensors\n"),
    "AGF101": (HEADER + textwrap.dedent('''\
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor: float):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.factor
        '''), "        return grad * ctx.factor, None\n"),
    "AGF006": (HEADER + textwrap.dedent('''\
        class Halve(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x / 2

            @staticmethod
            def backward(ctx, grad):
                """Halve the gradient."""
                grad.div_(2)
                return grad
        '''), '        """Halve the gradient."""\n        grad = grad.clone()\n'
              '        grad.div_(2)\n'),
    "AGF901": (HEADER + textwrap.dedent('''\
        class Triple(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3  # noqa: AGF002, E501

            @staticmethod
            def backward(ctx, grad):
                return grad * 3
        '''), "        return x * 3  # noqa: E501\n"),
}
# Opt-in rules: their cases select them.
OPT_IN_CASES = frozenset(code for code in CASES if not RULES[code].default)


def test_every_fixable_rule_has_a_case() -> None:
    assert set(CASES) == set(FIX_SAFETY)


@pytest.mark.parametrize("code", sorted(CASES))
def test_fix_applies_and_leaves_a_clean_file(code: str, tmp_path: Path, capsys) -> None:
    source, expected = CASES[code]
    codes = default_codes() | {code}
    selected = ["--extend-select", code] if code in OPT_IN_CASES else []
    assert code in [f.code for f in lint_source(source, "ops.py", codes)]
    unsafe = FIX_SAFETY[code] == "unsafe"
    if unsafe:  # not without the flag
        assert fixed(tmp_path, capsys, source, *selected) == source
    after = fixed(tmp_path, capsys, source, *selected, *(["--unsafe-fixes"] if unsafe else []))
    assert expected in after, after
    assert code not in [f.code for f in lint_source(after, "ops.py", codes)]
    compile(after, "ops.py", "exec")


@pytest.mark.parametrize("code", sorted(CASES))
def test_a_second_fix_run_changes_nothing(code: str, tmp_path: Path, capsys) -> None:
    source, _ = CASES[code]
    path = tmp_path / "ops.py"
    path.write_text(source)
    selected = ["--extend-select", code] if code in OPT_IN_CASES else []
    run(capsys, "--fix", "--unsafe-fixes", *selected, str(path))
    once = path.read_bytes()
    status, out, _ = run(capsys, "--fix", "--unsafe-fixes", *selected, str(path))
    assert path.read_bytes() == once
    assert "fixed" not in out


def test_summary_counts_fixed_and_remaining(tmp_path: Path, capsys) -> None:
    source = CASES["AGF103"][0].replace("return x * 2", "ctx.y = x\n        return x * 2")
    path = tmp_path / "ops.py"
    path.write_text(source)
    code, out, _ = run(capsys, "--fix", str(path))
    assert code == 1  # AGF001 has no fix
    assert "Found 2 findings (1 fixed, 1 remaining)." in out
    path.write_text(CASES["AGF103"][0])
    code, out, _ = run(capsys, "--fix", str(path))
    assert code == 0 and "(1 fixed, 0 remaining)" in out


@pytest.mark.parametrize("signature, fixed", [
    ("x, factor: float", True),  # a number: None is its only gradient
    ("x, training=False", True),
    ("x, bias", False),  # backward below uses nothing; forward adds it: a tensor
    ("x, scale", False),  # unknown: it may be a tensor that needs its gradient
])
def test_agf101_pads_with_none_only_inputs_that_cannot_need_a_gradient(
        tmp_path: Path, capsys, signature: str, fixed: bool) -> None:
    second = signature.split(",")[1].split(":")[0].split("=")[0].strip()
    body = f"x + {second}" if second == "bias" else "x * 2"
    path = tmp_path / "ops.py"
    path.write_text(HEADER + textwrap.dedent(f'''\
        class Add(torch.autograd.Function):
            @staticmethod
            def forward(ctx, {signature}):
                return {body}

            @staticmethod
            def backward(ctx, grad):
                return grad


        def add(x):
            return Add.apply(x, True)  # a call passes every input
        '''))
    _, out, _ = run(capsys, "--select", "AGF101", str(path))
    assert "AGF101" in out
    assert ("fixable with `--fix --unsafe-fixes`" in out) is fixed


def test_the_data_fix_makes_no_new_finding_appear(tmp_path: Path, capsys) -> None:
    """Fixing AGF008 leaves AGF001 as it was (it was reported before the
    fix, not after): `.detach()` adds no finding `.data` did not have."""
    path = tmp_path / "ops.py"
    path.write_text(HEADER + textwrap.dedent('''\
        class Mix(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y: torch.Tensor):
                ctx.y = y
                return x * y.data

            @staticmethod
            def backward(ctx, grad):
                return grad, grad
        '''))
    _, before, _ = run(capsys, "--select", "AGF001,AGF008", str(path))
    run(capsys, "--fix", "--select", "AGF008", str(path))
    assert "y.detach()" in path.read_text()
    _, after, _ = run(capsys, "--select", "AGF001,AGF008", str(path))
    assert "AGF001" in before and "AGF008" in before
    assert "AGF001" in after and "AGF008" not in after


def test_fix_hint_counts_safe_and_unsafe(tmp_path: Path, capsys) -> None:
    path = tmp_path / "ops.py"
    path.write_text(CASES["AGF101"][0])
    _, out, _ = run(capsys, str(path))
    assert "[*] 1 fixable with `--fix --unsafe-fixes`." in out
    path.write_text(CASES["AGF103"][0])
    _, out, _ = run(capsys, str(path))
    assert "[*] 1 fixable with `--fix`." in out


def test_diff_shows_without_writing(tmp_path: Path, capsys) -> None:
    source = CASES["AGF213"][0]
    path = tmp_path / "ops.py"
    path.write_text(source)
    code, out, err = run(capsys, "--diff", str(path))
    assert code == 1 and path.read_text() == source
    assert f"--- a/{path}" in out and f"+++ b/{path}" in out
    assert "-        (x,) = ctx.saved_variables\n+        (x,) = ctx.saved_tensors\n" in out
    assert "Would fix 1 finding." in err
    run(capsys, "--fix", str(path))
    code, out, err = run(capsys, "--diff", str(path))
    assert code == 0 and out == "" and "No fixes available." in err


def test_crlf_tabs_comments_and_bom_survive(tmp_path: Path, capsys) -> None:
    source = CASES["AGF103"][0].replace("    ", "\t").replace("\n", "\r\n")
    path = tmp_path / "ops.py"
    path.write_bytes(b"\xef\xbb\xbf" + source.encode())
    run(capsys, "--fix", str(path))
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\t# forward doubles\r\n\t@staticmethod\r\n\tdef forward(ctx, x):\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_unparsable_files_are_never_touched(tmp_path: Path, capsys) -> None:
    broken = CASES["AGF213"][0] + "\ndef oops(:\n"
    path = tmp_path / "ops.py"
    path.write_text(broken)
    code, out, _ = run(capsys, "--fix", str(path))
    assert path.read_text() == broken and "AGF000" in out and code == 1


def test_write_keeps_permissions_and_leaves_no_temporary_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "ops.py"
    path.write_text(CASES["AGF008"][0])
    os.chmod(path, 0o640)
    run(capsys, "--fix", str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ops.py"]


def test_data_writes_are_not_rewritten(tmp_path: Path, capsys) -> None:
    source = CASES["AGF008"][0].replace(
        "return x + x.data.sum()", "x.data[0] = 1\n        x.data.add_(1)\n        return x")
    findings = [f for f in lint_source(source, "ops.py", default_codes() | {"AGF008"})
                if f.code == "AGF008"]
    assert len(findings) == 2 and all(f.fix is None for f in findings)


def test_json_output_describes_the_fix(tmp_path: Path, capsys) -> None:
    path = tmp_path / "ops.py"
    path.write_text(CASES["AGF213"][0])
    _, out, _ = run(capsys, "--format", "json", str(path))
    [finding] = json.loads(out)
    assert finding["fix"] == {"title": "Use `saved_tensors`", "applicability": "safe",
                              "edits": [{"line": 12, "column": 19, "end_line": 12,
                                         "end_column": 34, "text": "saved_tensors"}]}


LITERAL_EDITS = '''\
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        label = "é→"; y = x.data
        grad_output.mul_(2)
        return grad_output + y * 0
'''


def apply_json_edits(text: str, edits: list[dict]) -> str:
    """What an editor or bot does with JSON edits: character positions,
    0-based columns, text inserted as written."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column

    for edit in sorted(edits, key=lambda e: (e["line"], e["column"]), reverse=True):
        start, end = offset(edit["line"], edit["column"]), offset(edit["end_line"],
                                                                  edit["end_column"])
        text = text[:start] + edit["text"] + text[end:]
    return text


def test_json_columns_count_characters_and_edits_apply_as_written(tmp_path: Path,
                                                                   capsys) -> None:
    path = tmp_path / "ops.py"
    path.write_text(LITERAL_EDITS, encoding="utf-8")
    _, out, _ = run(capsys, "--format", "json", str(path))
    by_code = {f["code"]: f for f in json.loads(out)}
    data_line = LITERAL_EDITS.splitlines()[12]
    assert by_code["AGF008"]["column"] == data_line.index("x.data")  # characters, not bytes
    edits = [e for f in by_code.values() if f["fix"] for e in f["fix"]["edits"]]
    fixed = apply_json_edits(LITERAL_EDITS, edits)
    compile(fixed, "ops.py", "exec")
    assert main(["check", "--isolated", *FIXABLE, "--fix", "--unsafe-fixes", str(path)]) in (0, 1)
    capsys.readouterr()
    assert fixed == path.read_text(encoding="utf-8")
    assert "        grad_output = grad_output.clone()\n        (x,)" in fixed


def test_fixes_survive_the_cache(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.py").write_text(CASES["AGF213"][0])
    outputs = []
    for _ in range(2):
        assert main(["check", "--isolated", *FIXABLE, "--format", "json", "ops.py"]) == 1
        outputs.append(json.loads(capsys.readouterr().out))
    assert (tmp_path / ".autograd_lint_cache").is_dir()
    assert outputs[0] == outputs[1] and outputs[1][0]["fix"]["applicability"] == "safe"
    assert main(["check", "--isolated", *FIXABLE, "--fix", "ops.py"]) == 0
    assert "saved_tensors" in (tmp_path / "ops.py").read_text()


def test_overlapping_edits_wait_and_broken_results_are_refused() -> None:
    text = "a = b.data\n"

    def finding(edit: Edit) -> Finding:
        rule = RULES["AGF008"]
        return Finding("x.py", edit.line, edit.column, "AGF008", rule.name, rule.severity, "m",
                       fix=Fix("t", SAFE, (edit,)))

    first = finding(Edit(1, 5, 1, 10, ".detach()"))
    second = finding(Edit(1, 6, 1, 10, "grad"))
    result = apply_fixes(text, [first, second])
    assert result.text == "a = b.detach()\n" and result.applied == [first]
    broken = finding(Edit(1, 5, 1, 10, ".("))
    assert apply_fixes(text, [broken]).text == text


torch = pytest.importorskip("torch")


def test_fixed_function_runs_backward_correctly(tmp_path: Path, capsys) -> None:
    source = HEADER + textwrap.dedent('''\
        class Scale(torch.autograd.Function):
            def forward(ctx, x, factor: float):
                ctx.save_for_backward(x)
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_variables
                grad.mul_(ctx.factor)
                return grad


        def scale(x, factor):
            return Scale()(x, factor)
        ''')
    path = tmp_path / "scaled_ops.py"
    path.write_text(source)
    code, out, _ = run(capsys, "--fix", "--unsafe-fixes", str(path))
    assert code == 0 and "(5 fixed, 0 remaining)" in out, out
    spec = importlib.util.spec_from_file_location("scaled_ops", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = module.scale(x, 3.0)
    upstream = torch.ones(3, dtype=torch.float64)
    y.backward(upstream)
    assert torch.equal(x.grad, torch.full((3,), 3.0, dtype=torch.float64))
    assert torch.equal(upstream, torch.ones(3, dtype=torch.float64))  # not changed in place
    assert torch.autograd.gradcheck(lambda t: module.Scale.apply(t, 3.0),
                                    (torch.randn(2, dtype=torch.float64, requires_grad=True),))


def test_a_file_declaring_another_encoding_is_left_alone(tmp_path: Path, capsys) -> None:
    # The bytes of "é" in UTF-8 (c3 a9) read as two latin-1 characters: the
    # findings' columns count those, so edits on the UTF-8 text would land
    # one character off.
    source = CASES["AGF213"][0].replace("import torch\n", "# -*- coding: latin-1 -*-\n"
                                        "import torch\nLABEL = 'é'\n", 1)
    path = tmp_path / "ops.py"
    data = source.encode("utf-8")
    path.write_bytes(data)
    assert main(["check", "--isolated", *FIXABLE, "--fix", str(path)]) == 1
    capsys.readouterr()
    assert path.read_bytes() == data
