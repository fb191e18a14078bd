"""Fuzzing: whatever the source, the engine returns findings (or AGF000) and
never raises or reports an internal error.

Sources are Function-shaped programs assembled from fragments that exercise
every rule family, and real files (the rule fixtures, the examples), then
mutated: truncated, sprinkled with odd unicode, nested deeply, padded with
huge literals. Each one goes through `lint_source` (editors, flake8) and
through a project run (byte scan, relevance, sparse parsing).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograd_lint.engine import SPARSE_MIN_BYTES, SourceInput, lint_inputs, lint_source
from autograd_lint.findings import Finding
from autograd_lint.registry import RULES

ALL_CODES = frozenset(RULES)
ROOT = Path(__file__).resolve().parent.parent
REAL_FILES = sorted([*(ROOT / "tests" / "fixtures").rglob("*.py"),
                     *(ROOT / "examples").glob("*.py")])

HEADERS = [
    "class F(torch.autograd.Function):",
    "class F(Function):",
    "class F(autograd.Function, Mixin):",
    "class F(Base):",
    "class F(\n    torch.autograd.function.InplaceFunction\n):",
]
PARAMS = ["ctx, x", "ctx, x, y=None", "ctx, x, bits: int = 8", "ctx, *args", "ctx, x, *, k",
          "", "x", "ctx, inputs, output", "ctx, x, weight, bias=None, /"]
DECORATORS = ["@staticmethod", "@classmethod", "@once_differentiable", "@staticmethod\n@jit"]
FORWARD = [
    "ctx.x = x", "ctx.save_for_backward(x, y)", "ctx.save_for_backward(*args)",
    "ctx.save_for_backward(x.shape)", "x.add_(1)", "y = x * 2", "ctx.mark_dirty(x)",
    "ctx.mark_non_differentiable(y)", "return x", "return x, y", "return (x,) * 3",
    "if flag:\n    return y", "for i in range(3):\n    x = x + i",
    "with torch.no_grad():\n    y = x.clone()", "ctx.set_materialize_grads(False)",
    "ctx.k, ctx.t = k, x", "setattr(ctx, 'w', x)", "del x", "torch.add(x, y, out=y)",
    "y = x.data", "x.data = y", "ctx.save_for_forward(x)", "x[0] = 1", "y = x.numpy()",
    "a, *b = ctx.saved_tensors", "dist.all_reduce(x)", "ctx.saved = [x, y]",
    "try:\n    y = x.exp()\nexcept RuntimeError:\n    raise", "while x:\n    break",
    "match x:\n    case 1:\n        return x", "y = lambda t: t.add_(1)", "global G",
    "return", "yield x", "x = (yield)", "assert x is not None", "y = x if x else None",
]
BACKWARD = [
    "grad.mul_(2)", "grad[grad < 0] = 0", "a, b = ctx.saved_tensors", "x, = ctx.saved_tensors",
    "return grad, None", "return grad * ctx.x", "return", "return None", "return 0",
    "if ctx.needs_input_grad[5]:\n    pass", "g = grad.view(-1)\ng.zero_()",
    "with torch.no_grad():\n    grad = grad * 2", "return grad.detach().numpy()",
    "x = ctx.saved_tensors[0]\nx.add_(grad)", "return (grad,) + (None,) * 2",
    "return grads", "grads = list(args)", "y = ctx.saved_tensors\nz = ctx.saved_tensors",
]
EXTRA = [
    "@staticmethod\ndef setup_context(ctx, inputs, output):\n    x, = inputs\n    ctx.x = x",
    "@staticmethod\ndef jvp(ctx, t):\n    return t * ctx.saved_tensors[0]",
    "@staticmethod\ndef vmap(info, in_dims, x):\n    return x, 0",
    "generate_vmap_rule = True",
    "@staticmethod\ndef vjp(ctx, g):\n    return g",
]
USES = ["F.apply(x)", "F()(x)", "F.forward(None, x)", "gradcheck(F.apply, (x,))",
        "fn = F.apply", "class G(F):\n    pass",
        "torch.autograd.gradcheck(lambda t: F.apply(t), x)"]


def indent(text: str, levels: int = 1) -> str:
    return "\n".join("    " * levels + line if line else line for line in text.split("\n"))


@st.composite
def function_sources(draw: st.DrawFn) -> str:
    def method(name: str, body: list[str]) -> str:
        decorator = draw(st.sampled_from(["", *DECORATORS]))
        lines = [decorator] if decorator else []
        lines.append(f"def {name}({draw(st.sampled_from(PARAMS))}):")
        lines.append(indent("\n".join(body) or "pass"))
        return "\n".join(lines)

    forward = draw(st.lists(st.sampled_from(FORWARD), max_size=6))
    backward = draw(st.lists(st.sampled_from(BACKWARD), max_size=5))
    members = [method("forward", forward), method("backward", backward),
               *draw(st.lists(st.sampled_from(EXTRA), max_size=2))]
    parts = ["import torch", "from torch.autograd import Function, gradcheck",
             draw(st.sampled_from(HEADERS)), indent("\n\n".join(members))]
    parts += draw(st.lists(st.sampled_from(USES), max_size=3))
    if draw(st.booleans()):  # the whole class nested in a function or a branch
        parts[2:4] = [draw(st.sampled_from(["def make():", "if torch.cuda.is_available():"])),
                      indent("\n".join(parts[2:4]))]
    return "\n".join(parts) + "\n"


def real_sources() -> st.SearchStrategy[str]:
    return st.sampled_from(REAL_FILES).map(lambda p: p.read_text(encoding="utf-8"))


@st.composite
def mutated(draw: st.DrawFn, sources: st.SearchStrategy[str]) -> str:
    text = draw(sources)
    kind = draw(st.sampled_from(["none", "truncate", "unicode", "nest", "parens",
                                 "literal", "chain", "indent", "bytes"]))
    at = draw(st.integers(0, len(text)))
    if kind == "truncate":
        return text[:at]
    if kind == "unicode":
        odd = draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8))
        return text[:at] + odd + text[at:]
    if kind == "nest":  # deep blocks, past the parser's limit of 100 levels
        depth = draw(st.integers(1, 120))
        block = "".join("    " * i + "if x:\n" for i in range(depth))
        block += "    " * depth + "F.apply(x)\n"
        return text + "\ndef deep(x):\n" + indent(block)
    if kind == "parens":  # deep expressions, past the parser's limit too
        depth = draw(st.integers(1, 400))
        return text + f"\ny = {'(' * depth}F.apply(x){')' * depth}\n"
    if kind == "literal":
        size = draw(st.integers(1, 60_000))
        return text + f"\nTABLE = [{', '.join(['1.5'] * size)}]\n"
    if kind == "chain":  # a long binary chain: a deep tree for recursive visitors
        size = draw(st.integers(1, 20_000))
        return text + "\ndef chain(ctx, x):\n    ctx.y = x" + " + x" * size + "\n"
    if kind == "indent":
        return text.replace("    ", "\t", draw(st.integers(0, 3)))
    if kind == "bytes":
        return text.encode("utf-8", "surrogatepass").decode("latin-1")
    return text


def assert_well_formed(findings: list[Finding], text: str) -> None:
    assert isinstance(findings, list)
    lines = max(text.count("\n") + 1, 1)
    for finding in findings:
        assert finding.code in RULES
        assert 1 <= finding.line <= lines + 1, finding
        assert finding.column >= 0


FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(mutated(function_sources()))
def test_generated_functions_never_crash_lint_source(text: str) -> None:
    assert_well_formed(lint_source(text, path="fuzz.py", codes=ALL_CODES), text)


@FUZZ
@given(mutated(real_sources()))
def test_mutated_real_files_never_crash_lint_source(text: str) -> None:
    assert_well_formed(lint_source(text, path="fuzz.py", codes=ALL_CODES), text)


@settings(FUZZ, max_examples=60)
@given(st.lists(mutated(st.one_of(function_sources(), real_sources())), min_size=1, max_size=3),
       st.booleans())
def test_project_runs_never_report_internal_errors(texts: list[str], pad: bool) -> None:
    filler = "def filler():\n    return 1\n\n\n" * (SPARSE_MIN_BYTES // 30) if pad else ""
    with tempfile.TemporaryDirectory() as directory:
        inputs = []
        for index, text in enumerate(texts):
            path = Path(directory) / f"mod{index}.py"
            path.write_text(filler + text, encoding="utf-8", errors="surrogatepass")
            inputs.append(SourceInput(path, str(path), ALL_CODES))
        for prefilter in (True, False):
            result = lint_inputs(inputs, scan_tree=True, prefilter=prefilter, jobs=1)
            assert result.errors == []
            for finding in result.findings:
                assert finding.code in RULES and finding.line >= 1
