"""The shared analyses: tensor-valued judgement, return arity, path facts."""
from __future__ import annotations

import ast
import textwrap

import pytest

from autograd_lint.analysis.function_facts import FunctionFacts
from autograd_lint.analysis.interpreter import CtxCall, Mutation, Return
from autograd_lint.analysis.values import Kind
from autograd_lint.core.model import build_module
from autograd_lint.core.project import FunctionClass, Project


def function(source: str, name: str | None = None) -> FunctionClass:
    source = textwrap.dedent(source)
    module = build_module("m.py", "m", False, ast.parse(source), source)
    project = Project([module])
    functions = project.functions_in(module)
    return next(f for f in functions if name is None or f.name == name)


def facts(source: str) -> FunctionFacts:
    return FunctionFacts(function(source))


HEADER = "import torch\nfrom torch import Tensor\n"


# -- tensor-valued inputs --------------------------------------------------------
def test_input_kinds_from_annotations_defaults_and_evidence() -> None:
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: Tensor, b, c, d=3, e: int = 0, g: "torch.Tensor | None" = None,
                h=None, i=(1, 2), j=None):
        ctx.save_for_backward(b)
        k = c.detach()
        return a + h
''')
    kinds = {name: value.kind for name, value in f.inputs.items()}
    assert kinds == {"a": Kind.TENSOR, "b": Kind.TENSOR, "c": Kind.TENSOR, "d": Kind.NONTENSOR,
                     "e": Kind.NONTENSOR, "g": Kind.TENSOR, "h": Kind.UNKNOWN,
                     "i": Kind.NONTENSOR, "j": Kind.UNKNOWN}
    assert f.inputs["g"].maybe_none and not f.inputs["a"].maybe_none
    assert f.non_tensor_reason("d") == "its default is `3`"
    assert f.non_tensor_reason("e") == "annotated `int`"
    assert f.non_tensor_reason("b") is None


def test_evidence_ignores_uses_after_the_input_is_rebound() -> None:
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        n = torch.tensor(n)
        n.add_(1)
        return x.clone()
''')
    assert f.inputs["x"].kind is Kind.TENSOR
    assert f.inputs["n"].kind is Kind.UNKNOWN


def test_returned_arithmetic_on_one_input_is_no_tensor_evidence() -> None:
    # RULES.md: being returned, multiplied or compared is no evidence (an int
    # passed through forward and returned is no tensor).
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        if z:
            return -(x * 2) + 1
        return y * z
''')
    assert f.inputs["x"].kind is Kind.UNKNOWN
    assert f.inputs["y"].kind is Kind.UNKNOWN  # `y * z`: either could be the tensor


# -- forward outputs and backward return arity ----------------------------------------
@pytest.mark.parametrize(("body", "expected"), [
    ("return x.exp(), x.log()", 2),
    ("return (x,)", 1),
    ("out = x.sin(); return out", 1),
    ("pair = (x, x); return pair", 2),
    ("return x * 3", 1),
    ("return torch.relu(x), torch.sort(x)", 2),
    ("return torch.sort(x)", 2),
    ("return x.max(dim=0)", 2),
    ("return x.max(0, keepdim=True)", 2),
    ("return torch.split(x, 2)", None),
    ("return x.max()", 1),
    ("return helper(x)", None),
    ("return tuple(t for t in (x, x))", None),
    ("return (x,) + (x, x)", 3),
    ("return (x,) * 2", 2),
    ("return [x, x]", None),
    ("return x if x.dim() else (x, x)", None),
])
def test_forward_output_count(body: str, expected: int | None) -> None:
    f = facts(HEADER + f'''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        {body}
''')
    assert f.output_count == expected


def test_backward_return_values_follow_each_path() -> None:
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        if ctx.needs_input_grad[0]:
            grads = (g, None)
        else:
            grads = (None, g)
        if g is None:
            grads = None, None, None
            return grads
        return grads
''')
    returns = f.facts("backward").returns
    assert [r.value.arity() for r in returns] == [3, 2]


# -- path-sensitive aliasing and facts ------------------------------------------------
def test_alias_roots_survive_only_on_paths_without_rebinding() -> None:
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        a = g.view(-1)
        b = g
        if ctx.flag:
            b = b.clone()
        while ctx.more:
            a = a * 2
        a.add_(1)
        b.add_(1)
        c = g.clone()
        c.add_(1)
        return g
''')
    mutations = {ast.unparse(m.target): {r for r in m.value.roots if r.startswith("grad:")}
                 for m in f.facts("backward").of(Mutation)}
    assert mutations == {"a": {"grad:g"}, "b": {"grad:g"}, "c": set()}


def test_save_calls_know_what_ran_before_them_on_their_path() -> None:
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mode):
        if mode:
            ctx.save_for_backward(x)
            return x
        try:
            ctx.save_for_backward(x, x)
        except TypeError:
            ctx.save_for_backward(x)
        for _ in range(2):
            ctx.mark_dirty(x)
        return x
''')
    calls = f.facts("forward").of(CtxCall)
    prior = [(c.method, len(c.prior)) for c in calls]
    assert prior == [("save_for_backward", 0), ("save_for_backward", 0),
                     ("save_for_backward", 0), ("mark_dirty", 1)]


def test_setup_context_sees_inputs_and_outputs() -> None:
    f = facts(HEADER + '''
class F(torch.autograd.Function):
    @staticmethod
    def forward(x, dim):
        return x.sort(dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dim = inputs
        values, idx = output
        ctx.save_for_backward(x, idx)
        ctx.dim = dim
''')
    call = f.facts("setup_context").of(CtxCall)[0]
    assert [value.src for _, value, _ in call.args] == ["input:x", "output"]
    returns = f.facts("forward").of(Return)
    assert returns and f.fn.style == "setup_context"
