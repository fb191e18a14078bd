"""Precision first (RULES.md): every premise of a finding needs evidence.

Each family of false alarms found on real projects is tested side by side
with the true finding the same analysis must keep: the value (a tensor, not a
number or a project object), the event (the write happens under the
arguments the call passes), the harm (the consequence can arise), and
AGF301's idea of a tested Function (reference tests, deliberate gradients).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from .helpers import DEFAULT_CODES, lint, lint_tree

HEADER = "import torch\nfrom torch.autograd import Function\n"
# The rules whose silences these tests hold to: the default set and the
# pedantic AGF001, AGF005 and AGF006.
CODES = (*DEFAULT_CODES, "AGF001", "AGF005", "AGF006")


def codes_by_function(code: str, codes: tuple[str, ...] | None = None) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in lint(HEADER + textwrap.dedent(code), codes or CODES):
        found.setdefault(finding.function or "", []).append(finding.code)
    return found


# -- the event: writes the call rules out ----------------------------------------------
def test_a_branch_on_the_flag_that_chose_an_alias_knows_which_tensor_it_is() -> None:
    found = codes_by_function('''
        class Decided(Function):
            @staticmethod
            def forward(ctx, x, w, inplace=False):
                ctx.inplace = inplace
                out = x if inplace else torch.empty_like(x)
                if not inplace:
                    out.copy_(x * w)
                ctx.save_for_backward(w)
                return out

            @staticmethod
            def backward(ctx, dy):
                (w,) = ctx.saved_tensors
                dx = dy if ctx.inplace else torch.empty_like(dy)
                if not ctx.inplace:
                    dx.copy_(dy * w)
                return dx, None, None

        class Undecided(Function):
            @staticmethod
            def forward(ctx, x, w, inplace=False):
                ctx.inplace = inplace
                ctx.save_for_backward(w)
                return x * w

            @staticmethod
            def backward(ctx, dy):
                (w,) = ctx.saved_tensors
                dx = dy if ctx.inplace else torch.empty_like(dy)
                dx.copy_(dy * w)
                if ctx.inplace:
                    dx.mul_(2)
                return dx, None, None
    ''', (*CODES, "AGF011"))
    assert "Decided" not in found
    # Both writes happen only when the caller opts in (`inplace` defaults to False).
    assert found["Undecided"] == ["AGF011", "AGF011"]


def test_literal_arguments_select_the_branches_of_helpers_and_kernels() -> None:
    prelude = '''
        import triton
        import triton.language as tl

        @triton.jit
        def _copy(a_ptr, b_ptr, n, A_TO_B: tl.constexpr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            src = a_ptr if A_TO_B else b_ptr
            dst = b_ptr if A_TO_B else a_ptr
            if SCALE:
                tl.store(a_ptr + offs, tl.load(a_ptr + offs) * 2)
            tl.store(dst + offs, tl.load(src + offs))

        def _quant(x, dim=1, quant_type="vector"):
            if quant_type in ["vector", "row"]:
                return torch.round(x * 127).to(torch.int8)
            elif quant_type == "truncated-vector":
                x[x.abs() > 1] = 1
            return x

        def _early(x, mode):
            if mode == "keep":
                return x
            x.mul_(2)
            return x
    '''
    found = codes_by_function(prelude + '''
        class RuledOut(Function):
            @staticmethod
            def forward(ctx, a):
                b = torch.empty_like(a)
                _copy[(1,)](a, b, a.numel(), A_TO_B=True, SCALE=False, BLOCK=128)
                q = _quant(a, dim=0) + _quant(a, quant_type="row") + _early(a, "keep")
                return b + q

            @staticmethod
            def backward(ctx, grad):
                out = torch.empty_like(grad)
                _copy[(1,)](out, grad, grad.numel(), False, False, 128)
                return out + _quant(grad, 0, "vector")

        class Reached(Function):
            @staticmethod
            def forward(ctx, a):
                b = torch.empty_like(a)
                _copy[(1,)](a, b, a.numel(), A_TO_B=True, SCALE=True, BLOCK=128)
                return b + _early(a, "scale")

            @staticmethod
            def backward(ctx, grad, mode):
                out = torch.empty_like(grad)
                _copy[(1,)](grad, out, grad.numel(), A_TO_B=False, SCALE=False, BLOCK=128)
                q = _quant(grad, quant_type="truncated-vector")
                return out + q + _quant(grad, 1, mode)
    ''', ("AGF005", "AGF006", "AGF007"))
    assert "RuledOut" not in found
    # SCALE=True stores into `a`; "scale" passes the early return; A_TO_B=False
    # stores into the first pointer; the truncating branch writes; an unknown
    # mode decides nothing.
    assert found["Reached"] == ["AGF007", "AGF007", "AGF006", "AGF006", "AGF006"]


def test_tuple_concatenation_is_no_inplace_change() -> None:
    found = codes_by_function('''
        class Tuples(Function):
            @staticmethod
            def forward(ctx, q, k):
                ctx.save_for_backward(q, k)
                return q * k

            @staticmethod
            def backward(ctx, g):
                q, k = ctx.saved_tensors
                inputs = (q, k)
                if g is not None:
                    inputs += (g,)
                k += 1
                return g * inputs[1], g * inputs[0]
    ''')
    assert found["Tuples"] == ["AGF005"]  # `k += 1`, not `inputs += (...)`


def test_one_statement_changing_a_tensor_twice_is_one_finding() -> None:
    findings = lint(HEADER + textwrap.dedent('''
        class Chain(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                g.mul_(2).add_(1)
                return g
    '''), CODES)
    assert [f.code for f in findings] == ["AGF006"]


# -- the value: tensors, not numbers or project objects ---------------------------------
def test_project_object_data_is_no_tensor_but_a_tensor_data_is() -> None:
    found = codes_by_function('''
        class Topology:
            def __init__(self, data):
                self.data = data

        class BlockSparse(Function):
            @staticmethod
            def forward(ctx, x, topo: Topology):
                ctx.save_for_backward(x)
                return x * topo.data.sum()

            @staticmethod
            def backward(ctx, g):
                return g, None

        class Detaches(Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                ctx.save_for_backward(x.data)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
    ''', (*CODES, "AGF008"))
    assert "BlockSparse" not in found
    assert found["Detaches"] == ["AGF008"]


def test_returned_number_on_ctx_is_silent_integer_tensors_are_constants_a_float_input_is_not(
        ) -> None:
    found = codes_by_function('''
        class PassesCount(Function):
            @staticmethod
            def forward(ctx, x, n):
                ctx.n = n
                ctx.save_for_backward(x)
                return x * 2, n

            @staticmethod
            def backward(ctx, g, gn):
                return g * 2, None

        class Offsets(Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor, cu_seqlens: torch.LongTensor | None = None):
                ctx.cu_seqlens = cu_seqlens
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None

        class KeepsInput(Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor, state: torch.Tensor):
                ctx.state = state
                return x * state

            @staticmethod
            def backward(ctx, g):
                return g * ctx.state, g

        class KeepsMask(Function):
            @staticmethod
            def forward(ctx, x: torch.Tensor):
                ctx.mask = x > 0
                return x.clamp(min=0)

            @staticmethod
            def backward(ctx, g):
                return g * ctx.mask
    ''', (*CODES, "AGF009"))
    assert "PassesCount" not in found
    assert found["KeepsInput"] == ["AGF001"]
    # Integer and bool tensors carry no gradient: by design on ctx (pedantic).
    assert found["Offsets"] == ["AGF009"]
    assert found["KeepsMask"] == ["AGF009"]


# -- the harm: consequences that can arise ----------------------------------------------
def test_running_statistics_update_is_silent_a_returned_cache_write_is_not() -> None:
    found = codes_by_function('''
        class BatchNormStats(Function):
            @staticmethod
            def forward(ctx, x, running_mean, momentum: float):
                mean = x.mean(0)
                running_mean.mul_(1 - momentum).add_(momentum * mean)
                return x - mean

            @staticmethod
            def backward(ctx, g):
                return g, None, None

        class KVCacheAppend(Function):
            @staticmethod
            def forward(ctx, cache, k):
                cache.copy_(k)
                return cache

            @staticmethod
            def backward(ctx, g):
                return None, g

        class GradientFlowsThrough(Function):
            @staticmethod
            def forward(ctx, x, acc):
                acc.add_(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, g
    ''', (*CODES, "AGF012"))
    assert "BatchNormStats" not in found
    assert found["KVCacheAppend"] == ["AGF012"]  # written and returned: an in-place op
    assert found["GradientFlowsThrough"] == ["AGF007"]


def test_a_saved_buffer_only_this_node_holds_may_become_the_gradient() -> None:
    found = codes_by_function('''
        class PrecomputedGradient(Function):
            @staticmethod
            def forward(ctx, logits, target):
                probs = torch.softmax(logits, -1)
                grad_input = probs.clone()
                ctx.save_for_backward(grad_input, target)
                return -probs.gather(-1, target[:, None]).log().sum()

            @staticmethod
            def backward(ctx, g):
                grad_input, target = ctx.saved_tensors
                grad_input.mul_(g)
                return grad_input, None

        class HelperBuffer(Function):
            @staticmethod
            def forward(ctx, x, w):
                loss, grad_x = fused_forward(x, w)
                ctx.save_for_backward(grad_x)
                return loss

            @staticmethod
            def backward(ctx, g):
                (grad_x,) = ctx.saved_tensors
                grad_x.mul_(g)
                return grad_x, None

        class SavedInput(Function):
            @staticmethod
            def forward(ctx, logits):
                ctx.save_for_backward(logits)
                return logits.sum()

            @staticmethod
            def backward(ctx, g):
                (logits,) = ctx.saved_tensors
                logits.mul_(g)
                return logits

        class SavedOutputView(Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(out.view(-1))
                return out, x.sum()

            @staticmethod
            def backward(ctx, g, g_sum):
                (flat,) = ctx.saved_tensors
                flat.mul_(2)
                return flat.view_as(g) * g + g_sum
    ''', ("AGF005",))
    assert "PrecomputedGradient" not in found and "HelperBuffer" not in found
    assert found["SavedInput"] == ["AGF005"]
    assert found["SavedOutputView"] == ["AGF005"]


def test_backward_that_never_runs_has_no_gradient_count_or_missing_backward() -> None:
    found = codes_by_function('''
        class CacheWrite(Function):
            @staticmethod
            def forward(ctx, kv, cache):
                cache[0] = kv
                return None

        class NeverRuns(Function):
            @staticmethod
            def forward(ctx, scores, k: int):
                idx = scores.argsort(dim=-1)
                ctx.mark_non_differentiable(idx)
                return idx

            @staticmethod
            def backward(ctx, g):
                return None

        class TooFew(Function):
            @staticmethod
            def forward(ctx, x, w):
                return x * w

            @staticmethod
            def backward(ctx, g):
                return g
    ''')
    assert "CacheWrite" not in found and "NeverRuns" not in found
    assert found["TooFew"] == ["AGF101"]


# -- AGF301: what a tested Function is --------------------------------------------------
FUNCTIONS = '''
import torch
from torch.autograd import Function


class Reverse(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return -ctx.alpha * g, None


class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x, scale):
        return torch.round(x / scale) * scale

    @staticmethod
    def backward(ctx, g):
        return g, None


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def cube(x):
    return Cube.apply(x)


class CubeModule(torch.nn.Module):
    def forward(self, x):
        return cube(x)
'''

REFERENCE_TEST = '''
import torch
from ops import CubeModule


def test_cube_matches_reference():
    x = torch.randn(3, requires_grad=True)
    CubeModule()(x).sum().backward()
    assert_verbose_allclose(x.grad, 3 * x.detach() ** 2)


def assert_verbose_allclose(a, b):
    assert torch.allclose(a, b)
'''


def agf301(root: Path) -> list[str]:
    return sorted(f.function for f in lint_tree(root, ["AGF301"]))


def test_reference_test_through_wrappers_counts_deliberate_gradients_need_none(
        tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(FUNCTIONS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(REFERENCE_TEST)
    assert agf301(tmp_path) == ["Square"]


def test_a_test_that_only_runs_forward_is_no_reference_test(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(FUNCTIONS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(
        REFERENCE_TEST.replace(".sum().backward()", ".sum()"))
    assert agf301(tmp_path) == ["Cube", "Square"]


def test_a_tree_without_tests_cannot_say_what_is_untested(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(FUNCTIONS)
    assert agf301(tmp_path) == []
    (tmp_path / "test_other.py").write_text("def test_nothing():\n    pass\n")
    assert agf301(tmp_path) == ["Cube", "Square"]


MORE_FUNCTIONS = '''
import torch
from torch.autograd import Function


class ToFP8(Function):
    @staticmethod
    def forward(ctx, x):
        return x.to(torch.float8_e4m3fn).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


class FireHooks(Function):
    @staticmethod
    def forward(ctx, *args):
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class InferenceOnly(Function):
    @staticmethod
    def forward(ctx, q, k):
        return q @ k

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("inference only")


class Scale(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3


class Shift(Function):
    @staticmethod
    def forward(ctx, x):
        return x + x.mean()

    @staticmethod
    def backward(ctx, g):
        return g + g.mean()
'''

SIMILARITY_TEST = '''
import torch
from ops import Scale


def test_scale():
    x = torch.randn(3, requires_grad=True)
    Scale.apply(x).sum().backward()
    assert_similar(x.grad, torch.full_like(x, 3.0))
'''


def test_casts_varargs_identity_raising_backwards_and_similarity(
        tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(MORE_FUNCTIONS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(SIMILARITY_TEST)
    assert agf301(tmp_path) == ["Shift"]


BACKEND_OPS = '''
import torch
from torch.autograd import Function


class RMSNormFunction(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.pow(2).mean(-1, keepdim=True).rsqrt()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2
'''

HOOKS = '''
import torch
from torch.autograd import Function
from torch.utils._pytree import tree_map


class PushState(Function):
    @staticmethod
    def forward(ctx, *args):
        args = tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, args)
        return args[0] if len(args) == 1 else args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class PreBackward(Function):
    @staticmethod
    def forward(ctx, module, hook, outputs):
        ctx.module = module
        outputs = outputs.detach()
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        return (None, None) + grads


class Doubled(Function):
    @staticmethod
    def forward(ctx, *args):
        args = tree_map(lambda t: t * 2, args)
        return args[0]

    @staticmethod
    def backward(ctx, *grads):
        return tuple(g * 2 for g in grads)


class Prefetch(Function):
    @staticmethod
    def forward(ctx, x, events):
        events["fwd"] = torch.cuda.Event()
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


def exchange(q, k):
    return k, q


class Exchange(Function):
    @staticmethod
    def forward(ctx, q, k):
        q, k = exchange(q, k)
        return q, k

    @staticmethod
    def backward(ctx, gq, gk):
        return gk, gq


class QuantizeBernoulli(Function):
    @staticmethod
    def forward(ctx, soft):
        hard = soft.round()
        hard._unquantize = soft
        return hard

    @staticmethod
    def backward(ctx, g):
        return g


class CloneThenLaunch(Function):
    @staticmethod
    def forward(ctx, x):
        out = x.clone() if not x.is_contiguous() else x
        rotate_kernel[(1,)](out, x.shape[-1])
        return out

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        rotate_kernel[(1,)](g, -g.shape[-1])
        return g


class CloneThenWrite(Function):
    @staticmethod
    def forward(ctx, q):
        q_out = q.clone() if not q.is_contiguous() else q
        q_out.mul_(2)
        return q_out

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''

BACKEND_TEST = '''
import torch
from pkg.ops.rms_norm import RMSNormFunction


def test_rms_norm_grad():
    x = torch.randn(3, 4, requires_grad=True)
    RMSNormFunction.apply(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
'''


def test_a_backend_of_a_tested_name_pass_through_hooks_need_no_gradcheck(
        tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    for folder in ("pkg/ops", "pkg/backends/npu", "tests"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "pkg" / "ops" / "rms_norm.py").write_text(BACKEND_OPS)
    (tmp_path / "pkg" / "backends" / "npu" / "rms_norm.py").write_text(BACKEND_OPS)
    (tmp_path / "pkg" / "backends" / "npu" / "layer_norm.py").write_text(
        BACKEND_OPS.replace("RMSNormFunction", "LayerNormFunction"))
    (tmp_path / "pkg" / "hooks.py").write_text(HOOKS)
    (tmp_path / "tests" / "test_rms_norm.py").write_text(BACKEND_TEST)
    # Another project beside it with a Function of the same name is not covered.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "setup.py").write_text("")
    (tmp_path / "other" / "ops.py").write_text(BACKEND_OPS)
    (tmp_path / "other" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    # (Exchange's backward hands each input an output's gradient unchanged:
    # a permutation, straight through, with nothing to gradcheck.)
    assert agf301(tmp_path) == ["CloneThenLaunch", "CloneThenWrite", "Doubled",
                                "LayerNormFunction", "RMSNormFunction"]


ERROR_METRIC_TEST = '''
import torch
from ops import Scale, Shift
from helpers import compute_error


def test_scale_sqnr():
    x = torch.randn(3, requires_grad=True)
    Scale.apply(x).sum().backward()
    sqnr = compute_error(torch.full_like(x, 3.0), x.grad)
    assert sqnr >= 25.0


def test_shift_runs():
    x = torch.randn(3, requires_grad=True)
    Shift.apply(x).sum().backward()
    error = x.grad.abs().sum()
'''


def test_an_error_metric_on_gradients_is_a_reference_comparison(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(MORE_FUNCTIONS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(ERROR_METRIC_TEST)
    found = agf301(tmp_path)
    assert "Scale" not in found and "Shift" in found
