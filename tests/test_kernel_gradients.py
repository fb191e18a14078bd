"""AGF216: a gradient handed, as autograd gave it, to a Triton kernel that
indexes it by shape. Each flagged form sits beside the silent forms the
same analysis must keep (RULES.md, "Must, not may")."""
from __future__ import annotations

import ast
import textwrap

import pytest

from autograd_lint.analysis.raw_gradients import gradient_calls, initial_env, raw_gradient
from autograd_lint.analysis.triton_kernels import pointer_indexing

from .helpers import lint

HEADER = '''
import torch
import triton
import triton.language as tl
from torch.autograd import Function


@triton.jit
def _scale_bwd(dy_ptr, dx_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dy = tl.load(dy_ptr + offs, mask=mask)
    tl.store(dx_ptr + offs, dy * s, mask=mask)


@triton.jit
def _rows_bwd(dy_ptr, dx_ptr, stride_dy, stride_dx, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    dy = tl.load(dy_ptr + row * stride_dy + cols, mask=cols < n)
    tl.store(dx_ptr + row * stride_dx + cols, dy, mask=cols < n)


@triton.jit
def _rows_ld(dy_ptr, dx_ptr, ld, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    dy = tl.load(dy_ptr + row * ld + cols, mask=cols < n)
    tl.store(dx_ptr + row * ld + cols, dy, mask=cols < n)


@triton.jit
def _scalar_bwd(dloss_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    dloss = tl.load(dloss_ptr)
    tl.store(dx_ptr + offs, dloss, mask=offs < n)
'''


def findings(backward: str, *, forward: str = "return x * s", extra: str = "") -> list[str]:
    """AGF216's findings (`line: argument`) on a Function with this backward body."""
    source = HEADER + textwrap.dedent(extra) + textwrap.dedent('''
        class Scale(Function):
            @staticmethod
            def forward(ctx, x, s: float):
                ctx.s = s
                FORWARD

            @staticmethod
            def backward(ctx, dy):
        ''').replace("FORWARD", forward) + textwrap.indent(textwrap.dedent(backward), " " * 8)
    ast.parse(source)  # a snippet that does not parse would be silent for nothing
    lines = source.splitlines()
    return [lines[f.line - 1][f.column:f.end_column]
            for f in lint(source, codes={"AGF216"})]


# -- flagged ---------------------------------------------------------------------------
def test_the_raw_gradient_passed_to_a_shape_indexed_kernel() -> None:
    assert findings('''
        dx = torch.empty(dy.shape, device=dy.device, dtype=dy.dtype)
        n = dx.numel()
        _scale_bwd[(triton.cdiv(n, 1024),)](dy, dx, ctx.s, n, BLOCK=1024)
        return dx, None
    ''') == ["dy"]


@pytest.mark.parametrize("view", ["dy.view(-1)", "dy[..., :n]", "dy.t()", "dy.detach()"])
def test_a_view_of_the_gradient(view: str) -> None:
    assert findings(f'''
        n = dy.shape[-1]
        dx = torch.empty(dy.numel(), device=dy.device)
        _scale_bwd[(1,)]({view}, dx, ctx.s, dx.numel(), BLOCK=1024)
        return dx, None
    ''') == [view]


def test_a_view_bound_to_a_name_and_passed_by_keyword() -> None:
    source_findings = findings('''
        flat = dy.view(-1)
        dx = torch.empty_like(flat)
        _scale_bwd[(1,)](dx_ptr=dx, dy_ptr=flat, s=ctx.s, n=flat.numel(), BLOCK=1024)
        return dx, None
    ''')
    assert source_findings == ["flat"]


def test_the_message_names_the_gradient_the_view_and_the_kernel() -> None:
    source = HEADER + textwrap.dedent('''
        class Scale(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, dy):
                flat = dy.view(-1)
                dx = torch.empty_like(flat)
                _scale_bwd[(1,)](flat, dx, 2.0, flat.numel(), BLOCK=1024)
                return dx
    ''')
    (finding,) = lint(source, codes={"AGF216"})
    assert finding.code == "AGF216" and finding.function == "Scale"
    assert "`flat` (the incoming gradient `dy` through `.view()`)" in finding.message
    assert "`_scale_bwd`" in finding.message and "`dy_ptr`" in finding.message


def test_a_gradient_of_star_grads_and_a_stride_of_another_tensor() -> None:
    source = HEADER + textwrap.dedent('''
        class Rows(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, *grads):
                (dy,) = grads
                dx = torch.empty(dy.shape, device=dy.device)
                _scale_bwd[(1,)](grads[0], dx, 2.0, dx.numel(), BLOCK=1024)
                _scale_bwd[(1,)](dy, dx, 2.0, dx.numel(), BLOCK=1024)
                return dx
    ''')
    assert [f.code for f in lint(source, codes={"AGF216"})] == ["AGF216", "AGF216"]


# -- silent ----------------------------------------------------------------------------
@pytest.mark.parametrize("prepare", [
    "dy = dy.contiguous()",
    "dy = dy.reshape(-1)",
    "dy = dy.clone()",
    "dy = torch.zeros_like(ctx.saved)",
    "dy = dy.float()",
    "dy = dy.view(-1).contiguous()",
    "dy = helper(dy)",
    "if not dy.is_contiguous():\n    dy = dy.contiguous()",
    "assert dy.is_contiguous()",
    "if ctx.s:\n    dy = dy.contiguous()",
])
def test_a_gradient_made_contiguous_or_fresh_first(prepare: str) -> None:
    assert findings(prepare + textwrap.dedent('''
        dx = torch.empty(dy.shape, device=dy.device)
        _scale_bwd[(1,)](dy, dx, ctx.s, dx.numel(), BLOCK=1024)
        return dx, None
    ''')) == []


def test_a_row_length_as_the_leading_dimension_is_indexing_by_shape() -> None:
    assert findings('''
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        _rows_ld[(dx.shape[0],)](dy, dx, dx.shape[1], dx.shape[1], BLOCK=1024)
        return dx, None
    ''') == ["dy"]


@pytest.mark.parametrize(("prepare", "leading"), [
    ("", "dy.stride(0)"),  # its own stride: backward handles the layout
    ("s0, _ = dy.stride()", "s0"),
    ("", "x.stride(0)"),  # another tensor's: the launch gives the kernel a layout
    ("ld = x.stride(0)", "ld"),
    ("", "ctx.row_stride"),
])
def test_a_kernel_given_strides(prepare: str, leading: str) -> None:
    assert findings(prepare + textwrap.dedent(f'''
        (x,) = ctx.saved_tensors
        dx = torch.empty_like(x)
        _rows_ld[(dx.shape[0],)](dy, dx, {leading}, dx.shape[1], BLOCK=1024)
        return dx, None
    ''')) == []


def test_a_kernel_with_a_stride_parameter_for_the_pointer() -> None:
    # `stride_dy` decides the addresses: the launch passes a number there,
    # which code we cannot judge computes; the kernel does not assume a layout.
    assert findings('''
        dx = torch.empty_like(dy)
        _rows_bwd[(dx.shape[0],)](dy, dx, ctx.row_size, ctx.row_size, dx.shape[1], BLOCK=1024)
        return dx, None
    ''') == []


def test_unknown_kernels_wrappers_and_star_args() -> None:
    assert findings('''
        dx = torch.empty_like(dy)
        unknown_kernel[(1,)](dy, dx, ctx.s, dx.numel(), BLOCK=1024)
        launch_scale(dy, dx)
        args = (dy, dx, ctx.s, dx.numel())
        _scale_bwd[(1,)](*args, BLOCK=1024)
        _scale_bwd[(1,)](dy, dx, **ctx.options)
        kernel = _scale_bwd
        kernel[(1,)](dy, dx, ctx.s, dx.numel(), BLOCK=1024)
        return dx, None
    ''', extra='''
        from kernels_elsewhere import unknown_kernel

        def launch_scale(dy, dx):
            _scale_bwd[(1,)](dy, dx, 1.0, dx.numel(), BLOCK=1024)
    ''') == []


def test_a_scalar_gradient_read_without_an_offset() -> None:
    assert findings('''
        dx = torch.empty(ctx.shape, device=dy.device)
        _scalar_bwd[(1,)](dy, dx, dx.numel(), BLOCK=1024)
        return dx, None
    ''') == []


def test_a_scalar_output_and_a_decorator_that_may_make_it_contiguous() -> None:
    assert findings('''
        dx = torch.empty(ctx.shape, device=dy.device)
        _scale_bwd[(1,)](dy, dx, ctx.s, dx.numel(), BLOCK=1024)
        return dx, None
    ''', forward="return (x * s).sum()") == []
    source = HEADER + textwrap.dedent('''
        from mylib import ensure_contiguous

        class Scale(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @ensure_contiguous
            def backward(ctx, dy):
                dx = torch.empty_like(dy)
                _scale_bwd[(1,)](dy, dx, 2.0, dx.numel(), BLOCK=1024)
                return dx
    ''')
    assert lint(source, codes={"AGF216"}) == []


def test_a_gradient_rebound_on_every_path_or_in_a_loop() -> None:
    assert findings('''
        if ctx.s > 1:
            dy = dy.contiguous()
        else:
            dy = torch.zeros(ctx.shape)
        for _ in range(2):
            dy = dy.contiguous()
        dx = torch.empty_like(dy)
        _scale_bwd[(1,)](dy, dx, ctx.s, dx.numel(), BLOCK=1024)
        return dx, None
    ''') == []


def test_the_gradient_on_the_path_that_keeps_it_is_still_flagged() -> None:
    # The early return leaves the launch only the path where dy is raw.
    assert findings('''
        if ctx.s == 0:
            return torch.zeros_like(dy.contiguous()), None
        dx = torch.empty_like(dy)
        _scale_bwd[(1,)](dy, dx, ctx.s, dx.numel(), BLOCK=1024)
        return dx, None
    ''') == ["dy"]


# -- the analysis ----------------------------------------------------------------------
def _backward_calls(body: str) -> dict[str, str | None]:
    """Each call's text in this backward body -> the gradient it receives first."""
    node = ast.parse(textwrap.dedent(f"def backward(ctx, dy, *grads):\n{body}")).body[0]
    assert isinstance(node, ast.FunctionDef)
    out: dict[str, str | None] = {}
    for call, env in gradient_calls(node, initial_env(["dy"], "grads")):
        raw = raw_gradient(call.args[0], env) if call.args else None
        out[ast.unparse(call.func)] = None if raw is None else raw.text + "".join(raw.via)
    return out


def test_raw_gradients_follow_views_paths_and_rebindings() -> None:
    calls = _backward_calls('''
    a(dy)
    b(dy.T[0])
    g = grads[1]
    c(g)
    if flag:
        dy = dy.contiguous()
    d(dy)
    e, f = grads
    h(f)
    dy2 = dy if flag else dy.contiguous()
    i(dy2)
    ''')
    assert calls["a"] == "dy" and calls["b"] == "dy.T[...]" and calls["c"] == "grads[1]"
    assert calls["d"] is None and calls["h"] == "grads[1]" and calls["i"] is None


def test_pointer_indexing_reads_offsets_strides_and_constexpr_branches() -> None:
    kernel = ast.parse(textwrap.dedent('''
    @triton.jit
    def k(a_ptr, b_ptr, c_ptr, d_ptr, stride_b, n, SCALAR: tl.constexpr):
        offs = tl.arange(0, 16)
        a = tl.load(a_ptr + offs)
        b_ptr += tl.program_id(0) * stride_b
        b = tl.load(b_ptr + offs)
        c = tl.load(c_ptr)
        if SCALAR:
            d = tl.load(d_ptr)
        else:
            d = tl.load(d_ptr + offs)
        tl.store(a_ptr + offs, a + b + c + d)
    ''')).body[0]
    assert isinstance(kernel, ast.FunctionDef)
    undecided = pointer_indexing(kernel)
    assert undecided.indexed == {"a_ptr", "b_ptr"}
    assert "stride_b" in undecided.depends["b_ptr"] and "stride_b" not in undecided.depends["a_ptr"]
    assert "d_ptr" in pointer_indexing(kernel, {"SCALAR": False}).indexed
    assert "d_ptr" not in pointer_indexing(kernel, {"SCALAR": True}).indexed
