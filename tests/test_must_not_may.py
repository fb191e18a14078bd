"""Must, not may (RULES.md): a finding rests on facts established on a path.

Each family of misreads seen on projects nobody had tuned for is tested side
by side with the true finding the same analysis must keep: an unknown is
silent (a container slot store, a storage operation, an over-declared
mutation, a method any object may have), a detached copy is outside the
graph, a flag decides its branches, a default every call overrides says
nothing, and no pre-filter drops a Function reached through an alias.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from .helpers import DEFAULT_CODES, lint, lint_tree

HEADER = "import torch\nfrom torch.autograd import Function\n"
# The analysis is shared: its facts are held to in the default set and in the
# pedantic AGF001, AGF005 and AGF006 alike.
CODES = DEFAULT_CODES | {"AGF001", "AGF005", "AGF006"}


def by_function(code: str, *extra: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in lint(HEADER + textwrap.dedent(code), CODES | set(extra)):
        found.setdefault(finding.function or "", []).append(finding.code)
    return found


# -- unknown is silent ----------------------------------------------------------------
def test_a_container_slot_store_in_a_helper_writes_no_tensor_the_container_holds() -> None:
    found = by_function('''
        def remember(cache, key, value):
            cache[key] = value

        def scale_(t, factor):
            t[...] = t * factor

        class StoresIntoACache(Function):
            @staticmethod
            def forward(ctx, x, w):
                cache = {"x": x, "w": w}
                remember(cache, "y", x * w)
                parts = [x, w]
                remember(parts, 0, w)
                ctx.save_for_backward(x, w)
                return x * w

            @staticmethod
            def backward(ctx, grad):
                x, w = ctx.saved_tensors
                return grad * w, grad * x

        class WritesATensorThroughAHelper(Function):
            @staticmethod
            def forward(ctx, x, w):
                scale_(x, 2.0)
                return (x * w).sum()

            @staticmethod
            def backward(ctx, grad):
                return grad, grad
    ''')
    assert "StoresIntoACache" not in found
    assert found["WritesATensorThroughAHelper"] == ["AGF007"]


def test_storage_operations_on_a_temporary_are_no_writes() -> None:
    found = by_function('''
        class FreesATemporary(Function):
            @staticmethod
            def forward(ctx, x):
                flat = x.view(-1)
                out = flat * 2
                flat.set_()
                return out

            @staticmethod
            def backward(ctx, grad):
                g = grad.view(-1)
                out = g * 2
                g.resize_(0)
                return out.view_as(grad)

        class WritesTheData(Function):
            @staticmethod
            def forward(ctx, x):
                flat = x.view(-1)
                flat.zero_()
                return x.sum()

            @staticmethod
            def backward(ctx, grad):
                return grad.expand(3)
    ''')
    assert "FreesATemporary" not in found
    assert found["WritesTheData"] == ["AGF007"]


def test_a_declared_mutation_is_no_write_unless_the_body_writes() -> None:
    found = by_function('''
        @torch.library.custom_op("demo::scaled", mutates_args=("out",))
        def scaled(x: torch.Tensor, out: torch.Tensor) -> None:
            out.copy_(x * 2)

        @torch.library.custom_op("demo::over_declared", mutates_args=("x", "out"))
        def over_declared(x: torch.Tensor, out: torch.Tensor) -> None:
            out.copy_(x * 2)

        class CallsOps(Function):
            @staticmethod
            def forward(ctx, x, y):
                over_declared(x, y.new_empty(y.shape))
                torch.ops.demo.over_declared(x, y.new_empty(y.shape))
                return x * y

            @staticmethod
            def backward(ctx, grad):
                return grad, grad

        class WritesThroughAnOp(Function):
            @staticmethod
            def forward(ctx, x, y):
                torch.ops.demo.scaled(x, y)
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, grad
    ''')
    assert "CallsOps" not in found
    assert found["WritesThroughAnOp"] == ["AGF007"]


def test_methods_any_object_may_have_are_no_tensor_evidence() -> None:
    found = by_function('''
        class ModuleBackward(Function):
            @staticmethod
            def forward(ctx, x, module):
                ctx.module = module
                ctx.save_for_backward(x)
                return module(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                ctx.module.backward(grad)
                return grad, None

        class DuckRequiresGrad(Function):
            @staticmethod
            def forward(ctx, x, wrapper):
                ctx.wrapper = wrapper
                if wrapper.requires_grad:
                    wrapper.requires_grad_(False)
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, None

        class TensorOnlyMethod(Function):
            @staticmethod
            def forward(ctx, x, table):
                ctx.table = table
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * ctx.table.t(), None
    ''', "AGF009")
    assert "ModuleBackward" not in found and "DuckRequiresGrad" not in found
    assert found["TensorOnlyMethod"] == ["AGF009"]


# -- a detached copy is outside the graph -----------------------------------------------
def test_a_detached_copy_is_outside_the_graph() -> None:
    found = by_function('''
        class RecomputesOnADetachedCopy(Function):
            @staticmethod
            def forward(ctx, run_fn, x):
                ctx.run_fn = run_fn
                ctx.save_for_backward(x.detach())
                with torch.no_grad():
                    return run_fn(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                x = x.requires_grad_()
                with torch.enable_grad():
                    y = ctx.run_fn(x)
                torch.autograd.backward(y, grad)
                return None, x.grad

        class RecomputesOnTheInput(Function):
            @staticmethod
            def forward(ctx, run_fn, x):
                ctx.run_fn = run_fn
                ctx.save_for_backward(x)
                with torch.no_grad():
                    return run_fn(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                with torch.enable_grad():
                    y = ctx.run_fn(x)
                torch.autograd.backward(y, grad)
                return None, x.grad

        class SavesADetachedView(Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(out.detach()[0])
                return out

            @staticmethod
            def backward(ctx, grad):
                (first,) = ctx.saved_tensors
                return grad * first

        class SavesAView(Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(out[0])
                return out

            @staticmethod
            def backward(ctx, grad):
                (first,) = ctx.saved_tensors
                return grad * first
    ''')
    assert "RecomputesOnADetachedCopy" not in found and "SavesADetachedView" not in found
    assert found["RecomputesOnTheInput"] == ["AGF214"]
    assert found["SavesAView"] == ["AGF215"]


# -- what the code says about callers ------------------------------------------------
def test_a_default_every_call_overrides_says_nothing_of_the_type() -> None:
    found = by_function('''
        class Bias(Function):
            @staticmethod
            def forward(ctx, x, bias=0.0):
                return x + bias

            @staticmethod
            def backward(ctx, grad):
                return grad, grad.sum(0)

        def add_bias(x, b):
            return Bias.apply(x, b)

        class Scale(Function):
            @staticmethod
            def forward(ctx, x, scale=2.0):
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, grad.sum()

        def doubled(x):
            return Scale.apply(x)
    ''')
    assert "Bias" not in found
    assert found["Scale"] == ["AGF114"]  # a call uses the default: a number


def test_a_flag_inside_a_compound_condition_decides_its_alias() -> None:
    found = by_function('''
        class Rotary(Function):
            @staticmethod
            def forward(ctx, x, rotary_dim: int, inplace: bool = False):
                out = x if inplace else torch.empty_like(x)
                if rotary_dim < x.shape[-1] and not inplace:
                    out[..., rotary_dim:].copy_(x[..., rotary_dim:])
                return out.exp()

            @staticmethod
            def backward(ctx, grad):
                return grad, None, None

        class RotaryElse(Function):
            @staticmethod
            def forward(ctx, x, rotary_dim: int, inplace: bool = True):
                out = x if inplace else torch.empty_like(x)
                if rotary_dim >= x.shape[-1] or inplace:
                    return out.exp()
                out.neg_()
                return out.exp()

            @staticmethod
            def backward(ctx, grad):
                return grad, None, None

        class RotaryOtherTest(Function):
            @staticmethod
            def forward(ctx, x, rotary_dim: int, inplace: bool = True):
                out = x if inplace else torch.empty_like(x)
                if rotary_dim < x.shape[-1]:
                    out[..., rotary_dim:].copy_(x[..., rotary_dim:])
                return out.exp()

            @staticmethod
            def backward(ctx, grad):
                return grad, None, None
    ''')
    assert "Rotary" not in found and "RotaryElse" not in found
    assert found["RotaryOtherTest"] == ["AGF007"]


# -- the harm --------------------------------------------------------------------------
def test_an_abstract_forward_and_integer_outputs_need_no_backward() -> None:
    found = by_function('''
        def _not_implemented():
            raise NotImplementedError("subclasses implement forward")

        class AbstractBase(Function):
            @staticmethod
            def forward(ctx, x):
                _not_implemented()

        class IntOutput(Function):
            @staticmethod
            def forward(ctx, x):
                out = torch.cuda.IntTensor(x.shape)
                return out

        class FloatOutput(Function):
            @staticmethod
            def forward(ctx, x):
                return torch.cuda.FloatTensor(x.shape)
    ''', "AGF106")
    assert "AbstractBase" not in found and "IntOutput" not in found
    assert found["FloatOutput"] == ["AGF106"]


def test_the_only_differentiable_output_always_has_its_gradient() -> None:
    found = by_function('''
        class ArgmaxToo(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                idx = x.argmax()
                ctx.mark_non_differentiable(idx)
                return x * 2, idx

            @staticmethod
            def backward(ctx, grad, grad_idx):
                return grad * 2

        class TwoOutputs(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g2, g3):
                return g2 * 2 + g3 * 3
    ''')
    assert "ArgmaxToo" not in found
    assert found["TwoOutputs"] == ["AGF201"]


# -- no pre-filter drops what a full read reports ------------------------------------
ALIASED = '''\
import torch as th
{padding}

class ViaAlias(th.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def test_a_function_reached_through_a_torch_alias_survives_the_prefilter(
        tmp_path: Path) -> None:
    padding = "\n".join(f"def helper_{i}(a):\n    return a * {i}\n" for i in range(1500))
    (tmp_path / "small.py").write_text(ALIASED.format(padding=""))
    (tmp_path / "large.py").write_text(ALIASED.format(padding=padding))  # read sparsely
    (tmp_path / "other.py").write_text("import torch as th\nth.zeros(1)\n")
    found = sorted((Path(f.path).name, f.code) for f in lint_tree(tmp_path, CODES))
    assert found == [("large.py", "AGF001"), ("small.py", "AGF001")]
    assert found == sorted((Path(f.path).name, f.code)
                           for f in lint_tree(tmp_path, CODES, prefilter=False))


OPTIONAL_PASSED = '''\
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k=2):
        return x * k

    @staticmethod
    def backward(ctx, grad):
        return grad * 2

{padding}

def scale(x):
    return Scale.apply(x, 3)
'''


def test_the_calls_of_a_large_file_are_read_without_parsing_it_whole(tmp_path: Path) -> None:
    """What an `apply` call passes decides AGF101 (an optional input is
    counted once a call passes it): a file read sparsely keeps the call."""
    padding = "\n".join(f"def helper_{i}(a):\n    return a * {i}\n" for i in range(1500))
    (tmp_path / "large.py").write_text(OPTIONAL_PASSED.format(padding=padding))
    (tmp_path / "silent.py").write_text(  # no call passes k: the count may be right
        OPTIONAL_PASSED.format(padding=padding).replace("Scale.apply(x, 3)", "Scale.apply(x)"))
    for codes in ({"AGF101"}, CODES):  # alone, AGF101 asks for no references to Scale
        found = sorted((Path(f.path).name, f.code) for f in lint_tree(tmp_path, codes))
        assert found == [("large.py", "AGF101")]
        assert found == sorted((Path(f.path).name, f.code)
                               for f in lint_tree(tmp_path, codes, prefilter=False))


def test_a_number_read_from_a_saved_tensor_made_from_data_leaves_no_gradient() -> None:
    """`torch.tensor(scale)` has no autograd history: `.item()` of it in
    backward loses nothing; of a saved input it does (AGF204)."""
    found = by_function('''
        class ScaleFromData(Function):
            @staticmethod
            def forward(ctx, x, scale):
                ctx.save_for_backward(torch.tensor(scale))
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                (scale_t,) = ctx.saved_tensors
                return grad * scale_t.item(), None

        class ScaleFromInput(Function):
            @staticmethod
            def forward(ctx, x, scale: torch.Tensor):
                ctx.save_for_backward(scale)
                return x * scale

            @staticmethod
            def backward(ctx, grad):
                (scale,) = ctx.saved_tensors
                return grad * scale.item(), None
    ''', "AGF204")
    assert "ScaleFromData" not in found and found["ScaleFromInput"] == ["AGF204"]


def test_grad_of_a_list_element_of_unknown_kind_is_no_accumulated_saved_tensor() -> None:
    """A recompute that detaches each tensor input (an element of unknown kind
    takes the other branch): `.grad` of the list's elements may be of fresh
    leaves, so AGF214 needs the saved tensor itself."""
    found = by_function('''
        class Recompute(Function):
            @staticmethod
            def forward(ctx, run, *args):
                ctx.run = run
                ctx.inputs = list(args)
                ctx.save_for_backward(*[a for a in args if isinstance(a, torch.Tensor)])
                with torch.no_grad():
                    return run(*args)

            @staticmethod
            def backward(ctx, *grads):
                inputs = list(ctx.inputs)
                tensors = ctx.saved_tensors
                inputs[0] = tensors[0]
                detached = []
                for inp in inputs:
                    if not isinstance(inp, torch.Tensor):
                        detached.append(inp)
                        continue
                    x = inp.detach()
                    x.requires_grad = inp.requires_grad
                    detached.append(x)
                detached[0] = tensors[0].detach()
                with torch.enable_grad():
                    outputs = ctx.run(*detached)
                torch.autograd.backward(outputs, grads)
                return (None,) + tuple(inp.grad if isinstance(inp, torch.Tensor) else None
                                       for inp in detached)

        class KeepsSaved(Function):
            @staticmethod
            def forward(ctx, run, x):
                ctx.run = run
                ctx.save_for_backward(x)
                with torch.no_grad():
                    return run(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                with torch.enable_grad():
                    out = ctx.run(x)
                torch.autograd.backward(out, grad)
                return None, x.grad
    ''', "AGF214")
    assert "Recompute" not in found and found["KeepsSaved"] == ["AGF214"]


# -- found on the tuning half of the ecosystem check -----------------------------------
def test_repeated_and_summed_tuples_are_counted() -> None:
    found = by_function('''
        class PacksOffsets(Function):
            @staticmethod
            def forward(ctx, x, cu_seqlens: torch.Tensor, a, b, c):
                ctx.cu_seqlens = cu_seqlens
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, *[None] * 4

        class PadsWithATupleName(Function):
            @staticmethod
            def forward(ctx, x, cu_seqlens: torch.Tensor, a):
                ctx.cu_seqlens = cu_seqlens
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                rest = (None,) * 2
                return (grad * 2,) + rest

        class OneShort(Function):
            @staticmethod
            def forward(ctx, x, w, b):
                return x * w + b

            @staticmethod
            def backward(ctx, grad):
                return (grad,) + (None,) * 1
    ''', "AGF009")
    assert found["PacksOffsets"] == ["AGF009"] and found["PadsWithATupleName"] == ["AGF009"]
    assert found["OneShort"] == ["AGF101"]


def test_an_op_backward_padded_by_tuple_arithmetic_has_the_right_count() -> None:
    found = lint(HEADER + textwrap.dedent('''
        @torch.library.custom_op("t::three", mutates_args=())
        def three(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            return x * y * z

        def _setup(ctx, inputs, output):
            pass

        def _backward(ctx, grad):
            if grad is None:
                return (None,) * 3
            return (grad,) + (None,) * 2

        three.register_autograd(_backward, setup_context=_setup)

        @torch.library.custom_op("t::short", mutates_args=())
        def short(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            return x * y * z

        def _short_backward(ctx, grad):
            return (grad,) + (None,) * 1

        short.register_autograd(_short_backward, setup_context=_setup)
    '''))
    assert [(f.code, f.line) for f in found if f.code == "AGF406"] == [("AGF406", 23)]


def test_a_saved_tensors_read_is_reported_once_per_method() -> None:
    found = by_function('''
        class ReadsThrice(Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return x * w

            @staticmethod
            def backward(ctx, grad):
                x = ctx.saved_tensors[0]
                w = ctx.saved_tensors[1]
                n = len(ctx.saved_tensors)
                return grad * w, grad * x
    ''')
    assert found["ReadsThrice"] == ["AGF210"]


def test_optional_inputs_count_only_when_a_call_passes_them() -> None:
    found = by_function('''
        class NeverPassed(Function):
            @staticmethod
            def forward(ctx, x, descale=None):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def never(x):
            return NeverPassed.apply(x)

        class Passed(Function):
            @staticmethod
            def forward(ctx, x, descale=None):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def passed(x, descale):
            return Passed.apply(x, descale)

        class NoCallSeen(Function):  # called elsewhere, maybe with descale: RULES.md's report
            @staticmethod
            def forward(ctx, x, descale=None):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
    ''')
    assert "NeverPassed" not in found and found["Passed"] == ["AGF101"]
    assert found["NoCallSeen"] == ["AGF101"]


def test_an_instance_is_a_defect_only_when_called_or_given_inputs() -> None:
    found = by_function('''
        class Cube(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * grad

        class Layer:
            def __init__(self):
                self.cube = Cube()

            def __call__(self, x):
                return self.cube.apply(x)

        def called(x):
            return Cube()(x)

        def given_inputs(x):
            return Cube(x)
    ''')
    assert found["Cube"] == ["AGF105", "AGF105"]


def test_grad_mode_held_in_a_local_decides_a_direct_forward_call() -> None:
    found = by_function('''
        class Cube(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad):
                return grad

        def run(x):
            enabled = torch.is_grad_enabled()
            if not enabled:
                return Cube.forward(None, x)
            return Cube.apply(x)

        def always(x):
            return Cube.forward(None, x)
    ''')
    assert found["Cube"] == ["AGF105"]


def test_isinstance_decides_what_a_number_default_says() -> None:
    found = by_function('''
        class Rotary(Function):
            @staticmethod
            def forward(ctx, x, cos, offsets=0):
                if isinstance(offsets, int):
                    ctx.save_for_backward(cos)
                else:
                    ctx.save_for_backward(cos, offsets)
                return x * cos

            @staticmethod
            def backward(ctx, grad):
                return grad, None, None

        class Saves(Function):
            @staticmethod
            def forward(ctx, x, offsets=0):
                ctx.save_for_backward(x, offsets)
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, None
    ''')
    assert "Rotary" not in found and found["Saves"] == ["AGF002"]


def test_a_helper_is_read_with_the_flags_the_call_passes() -> None:
    found = by_function('''
        def norm_backward(dY, W, in_place):
            if in_place is True:
                dX = dY
            else:
                dX = torch.zeros_like(dY)
            dX.copy_(dY * W)
            return dX

        class OptIn(Function):
            @staticmethod
            def forward(ctx, X, W, in_place=False):
                ctx.in_place = in_place
                ctx.save_for_backward(W)
                return X * W

            @staticmethod
            def backward(ctx, dY):
                (W,) = ctx.saved_tensors
                return norm_backward(dY, W, ctx.in_place), None, None

        class Literal(Function):
            @staticmethod
            def forward(ctx, X, W):
                ctx.save_for_backward(W)
                return X * W

            @staticmethod
            def backward(ctx, dY):
                (W,) = ctx.saved_tensors
                return norm_backward(dY, W, False), None

        class DefaultOn(Function):
            @staticmethod
            def forward(ctx, X, W, in_place=True):
                ctx.in_place = in_place
                ctx.save_for_backward(W)
                return X * W

            @staticmethod
            def backward(ctx, dY):
                (W,) = ctx.saved_tensors
                return norm_backward(dY, W, ctx.in_place), None, None
    ''', "AGF011")
    assert "Literal" not in found
    assert found["OptIn"] == ["AGF011"] and found["DefaultOn"] == ["AGF006"]


def test_parameters_and_opt_in_stores_on_ctx_are_no_graph_tensors() -> None:
    found = by_function('''
        class Linear(Function):
            @staticmethod
            def forward(ctx, x, weight):
                ctx.x = x
                ctx.weight = weight
                return x @ weight

            @staticmethod
            def backward(ctx, grad):
                return grad @ ctx.weight.t(), ctx.x.t() @ grad

        class Layer:
            def __call__(self, x):
                return Linear.apply(x, self.weight)

        class Solver(Function):
            @staticmethod
            def forward(ctx, x, solver="batched"):
                y = x * 2
                if solver == "debug":
                    ctx.y = y
                return y

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, None
    ''', "AGF009")
    assert found["Linear"] == ["AGF001", "AGF009"]
    assert "Solver" not in found


def test_a_mode_enum_of_a_factory_decides_a_store() -> None:
    found = by_function('''
        import enum

        class Solvers(enum.Enum):
            BATCHED = 1
            DEBUG = 2

        def make(solver=Solvers.BATCHED, keep=False):
            class Solve(Function):
                @staticmethod
                def forward(ctx, x):
                    y = x * 2
                    if solver == Solvers.DEBUG:
                        ctx.y = y
                    if keep:
                        ctx.x = x
                    return y

                @staticmethod
                def backward(ctx, grad):
                    return grad * 2
            return Solve

        def make_on(keep=True):
            class Kept(Function):
                @staticmethod
                def forward(ctx, x):
                    if keep:
                        ctx.x = x
                    return x * 2

                @staticmethod
                def backward(ctx, grad):
                    return grad * 2
            return Kept
    ''')
    assert "Solve" not in found and found["Kept"] == ["AGF001"]


def test_a_narrow_chunk_unpacked_from_a_helper_is_no_saved_tensor() -> None:
    found = by_function('''
        def chunks(pred, *tensors):
            if pred.shape[0] < 4:
                return [(pred, *tensors)]
            splits = [t.split(2) for t in (pred, *tensors)]
            return [tuple(s[i] for s in splits) for i in range(len(splits[0]))]

        class Chunked(Function):
            @staticmethod
            def forward(ctx, pred):
                ctx.save_for_backward(pred)
                return pred * 2

            @staticmethod
            def backward(ctx, grad_output):
                (pred,) = ctx.saved_tensors
                grad = torch.empty_like(pred)
                for p, g in chunks(pred, grad):
                    g.sub_(p)
                return grad

        class Direct(Function):
            @staticmethod
            def forward(ctx, pred):
                ctx.save_for_backward(pred)
                return pred * 2

            @staticmethod
            def backward(ctx, grad_output):
                (pred,) = ctx.saved_tensors
                pred.sub_(1)
                return grad_output * 2
    ''')
    assert "Chunked" not in found and found["Direct"] == ["AGF005"]


def test_direct_calls_meant_to_fail_or_made_as_plain_functions_are_no_bypass() -> None:
    found = by_function('''
        import pytest

        class Plain(Function):
            @staticmethod
            def forward(ctx, storage, dtype):
                return storage.to(dtype)

            @staticmethod
            def backward(ctx, grad):
                return grad, None

        class Routed(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 2

        def dequantize(storage):
            return Plain.forward(None, storage, torch.float32)

        def test_backward_rejects_a_fake_ctx():
            with pytest.raises(RuntimeError):
                Routed.backward(object(), torch.ones(2))

        def bypass(x):
            return Routed.forward(None, x)
    ''')
    assert "Plain" not in found and found["Routed"] == ["AGF105"]


def test_arity_and_keyword_findings_need_the_harm() -> None:
    found = by_function('''
        class Raises(Function):
            @staticmethod
            def forward(ctx, x):
                return x.round(), x.floor(), x.ceil()

            @staticmethod
            def backward(ctx, grad):
                raise ValueError("not differentiable")

        class Prefetch(Function):
            @staticmethod
            def forward(ctx, x, *, prefetch=2):
                return x * prefetch

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def run(x):
            return Prefetch.apply(x)

        class Required(Function):
            @staticmethod
            def forward(ctx, x, *, dim):
                return x.sum(dim)

            @staticmethod
            def backward(ctx, grad):
                return grad

        class NoCallSeen(Function):
            @staticmethod
            def forward(ctx, x, *, prefetch=2):
                return x * prefetch

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        class PassedByPosition(Function):
            @staticmethod
            def forward(ctx, x, *, out=None):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def run_into(x, out):
            return PassedByPosition.apply(x, out)  # one positional too many: TypeError
    ''')
    assert "Raises" not in found and "Prefetch" not in found
    assert found["Required"] == ["AGF112"] and found["NoCallSeen"] == ["AGF112"]
    assert found["PassedByPosition"] == ["AGF112"]
