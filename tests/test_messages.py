"""What each finding says, its severity, and where it points."""
from __future__ import annotations

import re
import textwrap

from autograd_lint.engine.lint import lint_source

from .helpers import DEFAULT_CODES, lint

HEADER = "import torch\nfrom torch.autograd import Function\n\n\n"


def only(source: str, code: str):
    findings = [f for f in lint(HEADER + textwrap.dedent(source), DEFAULT_CODES | {code})
                if f.code == code]
    assert len(findings) == 1, findings
    return findings[0]


def test_agf001_is_an_error_for_inputs_and_outputs_and_a_warning_otherwise() -> None:
    findings = lint(HEADER + textwrap.dedent('''\
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.x = x
                ctx.mid = y * 2
                ctx.y = y
                return y

            @staticmethod
            def backward(ctx, g):
                return g * ctx.y
        '''), DEFAULT_CODES | {"AGF001"})
    by_attr = {f.message.split("`")[1]: f for f in findings if f.code == "AGF001"}
    assert by_attr["ctx.x"].severity == "error" and "input `x`" in by_attr["ctx.x"].message
    assert by_attr["ctx.y"].severity == "error" and "output `y`" in by_attr["ctx.y"].message
    assert by_attr["ctx.mid"].severity == "warning" and "reference cycle" not in \
        by_attr["ctx.mid"].message
    assert all(f.function == "F" for f in findings)
    assert "reference cycle" in by_attr["ctx.y"].message
    assert "reference cycle" not in by_attr["ctx.x"].message and \
        "alive as long as the graph" in by_attr["ctx.x"].message


def test_agf001_names_the_tensor_of_a_tuple_and_a_contiguous_input() -> None:
    findings = lint(HEADER + textwrap.dedent('''\
        class F(Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor, n):
                ctx.pair = (n, x * 2)
                ctx.kept = (n, x)
                ctx.flat = x.contiguous()
                return x * n

            @staticmethod
            def backward(ctx, g):
                return g * ctx.flat, None
        '''), DEFAULT_CODES | {"AGF001"})
    by_attr = {f.message.split("`")[1]: f for f in findings if f.code == "AGF001"}
    assert by_attr["ctx.pair"].severity == "warning" and "input `n`" not in \
        by_attr["ctx.pair"].message
    assert by_attr["ctx.kept"].severity == "error" and "input `x`" in by_attr["ctx.kept"].message
    assert by_attr["ctx.flat"].severity == "error" and "input `x`" in by_attr["ctx.flat"].message


def test_agf204_names_the_context_that_turns_grad_mode_off() -> None:
    finding = only('''\
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                with torch.inference_mode():
                    out = g * 2
                return out
        ''', "AGF204")
    assert "`torch.inference_mode()` block" in finding.message and "no_grad" not in \
        finding.message


def test_agf101_message_names_inputs_and_optional_ones() -> None:
    finding = only('''\
        class F(Function):
            @staticmethod
            def forward(ctx, x, weight, bias=None):
                return x

            @staticmethod
            def backward(ctx, g):
                return g, g

        def linear(x, weight, bias):
            return F.apply(x, weight, bias)
        ''', "AGF101")
    assert "returns 2 gradients but forward takes 3 inputs (`x`, `weight`, `bias`)" in \
        finding.message
    assert "optional `bias`" in finding.message
    assert finding.line == 12 and finding.column == 8


def test_def_findings_underline_the_signature_head() -> None:
    finding = only('''\
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp(), x.sin()

            @staticmethod
            def backward(ctx, g):
                return g
        ''', "AGF102")
    assert (finding.line, finding.column) == (11, 4)
    assert (finding.end_line, finding.end_column) == (11, 4 + len("def backward"))


def test_agf006_message_names_the_alias_and_the_gradient() -> None:
    finding = only('''\
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, grad_out):
                g = grad_out.view(-1)
                g.mul_(2)
                return grad_out
        ''', "AGF006")
    assert finding.message.startswith("in-place `.mul_()` on `g` changes the incoming "
                                      "gradient `grad_out` (which `g` may alias)")
    assert "`grad_out = grad_out.clone()`" in finding.message


def test_agf000_points_at_the_error_and_says_which_python() -> None:
    [finding] = lint_source("x = (1,\ny = 2\n", path="bad.py")
    assert finding.code == "AGF000" and finding.severity == "error"
    assert finding.line == 1 and finding.column == 4
    assert "parsed as Python 3." in finding.message


def test_every_message_is_one_sentence_with_a_fix() -> None:
    from .helpers import FIXTURES

    for path in sorted((FIXTURES / "rules").glob("*.py")):
        for finding in lint(path.read_text()):
            assert "\n" not in finding.message
            assert ";" in finding.message or finding.code == "AGF000", finding.message
            assert not finding.message.endswith("."), finding.message
            assert not re.search(r"\{[a-z_]+\}", finding.message), finding.message


def _balanced(text: str) -> bool:
    """Brackets outside quoted code close in order, and quotes pair up."""
    outside = "".join(text.split("`")[::2]) if text.count("`") % 2 == 0 else None
    if outside is None:
        return False
    stack: list[str] = []
    for char in outside:
        if char in "([{":
            stack.append(")]}"["([{".index(char)])
        elif char in ")]}":
            if not stack or stack.pop() != char:
                return False
    return not stack


def test_every_message_splits_into_a_balanced_head_and_its_fix() -> None:
    """The concise output shows a message's head: it is cut at the advice's
    `; `, never at one inside brackets or quoted code."""
    from autograd_lint.core.registry import RULES
    from autograd_lint.reporting.output import split_message

    from .helpers import ALL_CODES, FIXTURES

    seen = set()
    for path in sorted((FIXTURES / "rules").glob("*.py")):
        for finding in lint(path.read_text(), ALL_CODES):
            head, advice = split_message(finding.message)
            assert _balanced(head), finding.message
            assert advice is not None or finding.code == "AGF000", finding.message
            seen.add(finding.code)
    assert len(seen) > 40
    # Every rule's template, with a quoted name and a parenthesis holding `; `.
    for code, rule in RULES.items():
        fields = {name: "`a; b` (c; d)" for name in re.findall(r"\{(\w+)", rule.message)}
        try:
            message = rule.format(**fields)
        except (KeyError, IndexError, ValueError):
            continue
        head, _ = split_message(message)
        assert _balanced(head), (code, head)


def test_advice_after_a_semicolon_in_parentheses_is_kept() -> None:
    from autograd_lint.reporting.output import split_message

    head, advice = split_message("`F(...)` instantiates a Function (legacy; raises); "
                                 "call `F.apply(...)` instead")
    assert head == "`F(...)` instantiates a Function (legacy; raises)"
    assert advice == "call `F.apply(...)` instead"
