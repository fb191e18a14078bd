"""Custom operators (torch.library): AGF401-AGF409 and AGF001 in a registered
setup_context, each on its defect and silent on the correct twin; ops defined
through an alias, a registration wrapper of another module and
`Library.define` schemas."""
from __future__ import annotations

import textwrap
from pathlib import Path

from .helpers import lint, lint_tree

OPS = "AGF001,AGF401,AGF402,AGF403,AGF404,AGF405,AGF406,AGF407,AGF408,AGF409".split(",")
HEAD = "import torch\nfrom torch import Tensor\n"


def found(source: str, codes: list[str] = OPS) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in lint(HEAD + textwrap.dedent(source), codes=codes)}


def tree(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEAD + textwrap.dedent(text))
    return {(Path(f.path).name, f.line, f.code) for f in lint_tree(tmp_path, OPS)}


def test_a_fake_must_take_the_ops_parameters() -> None:
    assert found('''
        @torch.library.custom_op("t::f", mutates_args=())
        def f(x: Tensor, n: int, *, scale: float = 1.0) -> Tensor:
            return x * n * scale

        @f.register_fake
        def _(n, x, *, scale=1.0):
            return torch.empty_like(x)

        @torch.library.register_fake("t::f")
        def _(x, *rest):
            return torch.empty_like(x)

        @torch.library.impl_abstract("t::f")
        def _(x):
            return torch.empty_like(x)
    ''') == {(9, "AGF401"), (13, "AGF401"), (17, "AGF401")}
    # Positional parameters renamed take the op's arguments by position all
    # the same; (*args, **kwargs) takes anything.
    assert found('''
        @torch.library.custom_op("t::f", mutates_args=())
        def f(x: Tensor, n: int, *, scale: float = 1.0) -> Tensor:
            return x * n * scale

        @f.register_fake
        def _(x, n, *, scale=1.0):
            return torch.empty_like(x)

        @torch.library.register_fake("t::f")
        def _(inp, count, **kwargs):
            return torch.empty_like(inp)

        @torch.library.impl_abstract("t::f")
        def _(*args, **kwargs):
            return torch.empty_like(args[0])
    ''') == set()


def test_mutates_args_must_name_tensor_parameters() -> None:
    assert found('''
        @torch.library.custom_op("t::f", mutates_args=("y", "n"))
        def f(x: Tensor, n: int) -> Tensor:
            return x * n

        @torch.library.custom_op("t::g", mutates_args="unknown")
        def g(x: Tensor) -> Tensor:
            return x * 2
    ''') == {(4, "AGF402")}


def test_an_undeclared_write_through_an_alias_and_a_view_is_reported() -> None:
    source = '''
        register_op = torch.library.custom_op

        @register_op("t::f", mutates_args=DECLARED)
        def f(x: Tensor, out: Tensor) -> None:
            out.view(-1).copy_(x.view(-1))

        @register_op("t::g", mutates_args=())
        def g(x: Tensor) -> Tensor:
            y = torch.empty_like(x)
            y.copy_(x)
            return y
    '''
    assert found(source.replace("DECLARED", "()")) == {(8, "AGF403")}
    assert found(source.replace("DECLARED", '["out"]')) == set()


def test_a_triton_store_hidden_in_a_helper_is_an_undeclared_write() -> None:
    source = '''
        import triton
        import triton.language as tl

        @triton.jit
        def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)

        def _launch(src, dst):
            _copy_kernel[(1,)](src, dst, src.numel(), BLOCK=1024)

        @torch.library.triton_op("t::copy", mutates_args=DECLARED)
        def copy(x: Tensor, out: Tensor) -> None:
            _launch(x, out)
    '''
    assert found(source.replace("DECLARED", "()")) == {(17, "AGF403")}
    assert found(source.replace("DECLARED", '{"out"}')) == set()


def test_schemas_declare_writes_with_a_bang(tmp_path: Path) -> None:
    source = '''
        lib = torch.library.Library("t", "FRAGMENT")
        lib.define("scale_(Tensor(a!) x, float f) -> ()")
        lib.define("fill(Tensor x, Tensor out) -> ()")

        def scale_(x, f):
            x.mul_(f)

        def fill(x, out):
            out.copy_(x)

        lib.impl("scale_", scale_, "CPU")
        lib.impl("fill", fill, "CPU")
    '''
    assert found(source) == {(12, "AGF403")}


# vLLM's registration wrapper, in a module of its own.
REGISTRATION_WRAPPER = '''
    vendor_lib = torch.library.Library("vendor", "FRAGMENT")

    def direct_register_custom_op(op_name, op_func, mutates_args=None, fake_impl=None):
        schema = torch.library.infer_schema(op_func, mutates_args=mutates_args)
        vendor_lib.define(op_name + schema)
        vendor_lib.impl(op_name, op_func, "CUDA")
        if fake_impl is not None:
            vendor_lib._register_fake(op_name, fake_impl)
'''


def test_a_registration_wrapper_of_another_module_defines_ops(tmp_path: Path) -> None:
    ops = '''
        from pkg.utils import direct_register_custom_op

        def rms_norm(out: Tensor, x: Tensor, eps: float) -> None:
            out.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

        def rms_norm_fake(out, x):
            return None

        direct_register_custom_op("rms_norm", rms_norm, mutates_args=MUTATES,
                                  fake_impl=rms_norm_fake)
    '''
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    assert tree(tmp_path, {"pkg/utils.py": REGISTRATION_WRAPPER,
                           "pkg/ops.py": ops.replace("MUTATES", "[]")}) == {
        ("ops.py", 7, "AGF403"), ("ops.py", 9, "AGF401")}
    assert tree(tmp_path, {"pkg/ops.py": ops.replace("MUTATES", '["out"]').replace(
        "def rms_norm_fake(out, x)", "def rms_norm_fake(out, x, eps)")}) == set()


def test_a_backward_must_return_one_gradient_per_input_and_a_list_for_a_list() -> None:
    source = '''
        @torch.library.custom_op("t::cat", mutates_args=())
        def cat(xs: list[Tensor], w: Tensor) -> Tensor:
            return torch.cat(xs) * w

        def _setup(ctx, inputs, output):
            ctx.sizes = [x.shape[0] for x in inputs[0]]

        def _backward(ctx, grad):
            return RETURN

        cat.register_autograd(_backward, setup_context=_setup)

        @cat.register_fake
        def _(xs, w):
            return torch.cat(xs).new_empty(sum(x.shape[0] for x in xs))
    '''
    assert found(source.replace("RETURN", "grad")) == {(12, "AGF406")}
    assert found(source.replace("RETURN", "grad * 2, grad")) == {(12, "AGF406")}
    assert found(source.replace("RETURN", "list(grad.split(ctx.sizes)), grad")) == set()
    # A trailing extra `None`: torch 2.13 drops it, 2.14 raises (the default target).
    assert found(source.replace("RETURN", "list(grad.split(ctx.sizes)), grad, None")) == \
        {(12, "AGF406")}


def test_setup_context_signature_and_tensors_kept_on_ctx() -> None:
    source = '''
        @torch.library.custom_op("t::sq", mutates_args=())
        def sq(x: Tensor, n: int) -> Tensor:
            return x * x

        def _setup(SIGNATURE):
            x, n = inputs
            KEEP

        def _backward(ctx, grad):
            return grad, None

        sq.register_autograd(_backward, setup_context=_setup)

        @sq.register_fake
        def _(x, n):
            return torch.empty_like(x)
    '''
    assert found(source.replace("SIGNATURE", "ctx, inputs, output").replace(
        "KEEP", "ctx.x = x")) == {(10, "AGF001")}
    assert found(source.replace("SIGNATURE", "ctx, inputs, out").replace(
        "KEEP", "ctx.n = n")) == {(8, "AGF407")}
    assert found(source.replace("SIGNATURE", "ctx, inputs, output").replace(
        "KEEP", "ctx.save_for_backward(x)\n    ctx.n = n")) == set()


def test_needs_input_grad_of_a_parameter_with_a_default() -> None:
    source = '''
        @torch.library.custom_op("t::affine", mutates_args=())
        def affine(x: Tensor, b: Tensor | None = None) -> Tensor:
            return x if b is None else x + b

        def _setup(ctx, inputs, output):
            pass

        def _backward(ctx, grad):
            GUARD
            return grad, grad if ctx.needs_input_grad[1] else None

        affine.register_autograd(_backward, setup_context=_setup)

        @affine.register_fake
        def _(x, b=None):
            return torch.empty_like(x)
    '''
    assert found(source.replace("GUARD", "pass")) == {(13, "AGF408")}
    assert found(source.replace("GUARD", "assert len(ctx.needs_input_grad) == 2")) == set()


def test_a_fake_that_returns_its_input() -> None:
    source = '''
        @torch.library.custom_op("t::relu", mutates_args=())
        def relu(x: Tensor) -> Tensor:
            return x.clamp_min(0)

        @relu.register_fake
        def _(x):
            return RESULT
    '''
    assert found(source.replace("RESULT", "x.view(-1).view_as(x)")) == {(10, "AGF409")}
    assert found(source.replace("RESULT", "x.new_empty(x.shape)")) == set()


def test_declared_but_never_written_is_opt_in_info() -> None:
    source = '''
        @torch.library.custom_op("t::f", mutates_args=("x",))
        def f(x: Tensor) -> Tensor:
            return x * 2

        @torch.library.custom_op("t::g", mutates_args=("x",))
        def g(x: Tensor) -> Tensor:
            return torch.ops.vendor.kernel(x)
    '''
    assert found(source) == {(4, "AGF404")}
    assert found(source, [c for c in OPS if c != "AGF404"]) == set()


def test_a_missing_fake_is_a_finding_of_tree_scans_only(tmp_path: Path) -> None:
    ops = '''
        @torch.library.custom_op("t::a", mutates_args=())
        def a(x: Tensor) -> Tensor:
            return x * 2

        @torch.library.custom_op("t::b", mutates_args=())
        def b(x: Tensor) -> Tensor:
            return x * 3

        @torch.library.custom_op("t::c", mutates_args=("x",))
        def c(x: Tensor) -> None:
            x.mul_(2)
    '''
    fakes = '''
        @torch.library.register_fake("t::b")
        def _(x):
            return torch.empty_like(x)
    '''
    assert tree(tmp_path, {"ops.py": ops, "fakes.py": fakes}) == {("ops.py", 5, "AGF405")}
    assert found(ops) == set()  # one file: the fake may be elsewhere


def test_what_torch_itself_does_right_stays_silent() -> None:
    """Patterns from torch's own ops, each correct: an output the schema
    declares aliasing its input; a parameter rebound to a new tensor before
    it is returned; a composite implementation, which is no fake; a fake
    taking a keyword-only argument of the op by its name."""
    assert found('''
        lib = torch.library.Library("t", "DEF")
        lib.define("wait(Tensor(a) x, Tensor? keep=None) -> Tensor(a)")
        lib.define("quant(Tensor input, float scale) -> Tensor")
        lib.define("cat(Tensor[] xs, int dim, *, Tensor(a!) out) -> ()")

        @torch.library.impl("t::wait", "CompositeExplicitAutograd")
        def _wait(x, keep=None):
            return x

        @torch.library.register_fake("t::wait")
        def _wait_fake(x, keep=None):
            return x

        @torch.library.impl(lib, "quant", "Meta")
        def _quant_meta(input, scale):
            input = input.mul(scale).round()
            return input

        @torch.library.impl(lib, "cat", "Meta")
        @torch.library.impl(lib, "cat", "CPU")
        def _cat(xs, dim, out):
            torch.cat(xs, dim, out=out)
    ''') == set()


def test_projects_side_by_side_register_their_own_fakes(tmp_path: Path) -> None:
    """A fake registered under a run-time name turns AGF405 off for its own
    project only; another project scanned beside it keeps the finding."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    (tmp_path / "b" / "pyproject.toml").write_text("[project]\nname = 'b'\n")
    found = tree(tmp_path, {
        "a/registry.py": '''
            def register(name):
                return torch.library.register_fake(name)
        ''',
        "b/ops.py": '''
            @torch.library.custom_op("b::double", mutates_args=())
            def double(x: Tensor) -> Tensor:
                return x * 2
        '''})
    assert found == {("ops.py", 5, "AGF405")}


CALLBACK_RULES = ["AGF002", "AGF003", "AGF005", "AGF006", "AGF205", "AGF206", "AGF210"]


def test_registered_setup_context_and_backward_get_the_function_rules() -> None:
    """The ctx and backward rules run on an op's registered callbacks, with
    the op's parameters (their annotations) as forward's inputs."""
    source = '''
        @torch.library.custom_op("t::scale", mutates_args=())
        def scale(x: Tensor, w: Tensor, eps: float) -> Tensor:
            return x * w + eps

        def _setup(ctx, inputs, output):
            x, w, eps = inputs
            SAVE
            ctx.eps = eps

        def _backward(ctx, grad):
            x, w = ctx.saved_tensors
            SCALE
            return grad * w, grad * x, None

        scale.register_autograd(_backward, setup_context=_setup)

        @scale.register_fake
        def _(x, w, eps):
            return torch.empty_like(x)
    '''
    defects = source.replace("SAVE", "ctx.save_for_backward(x, w, eps)").replace(
        "SCALE", "grad.mul_(2)")
    assert found(defects, CALLBACK_RULES) == {(10, "AGF002"), (15, "AGF006")}
    right = source.replace("SAVE", "ctx.save_for_backward(x, w)").replace(
        "SCALE", "grad = grad * 2")
    assert found(right, CALLBACK_RULES) == set()


def test_registered_callbacks_read_saved_tensors_once_and_compute_in_backward() -> None:
    assert found('''
        @torch.library.custom_op("t::exp2", mutates_args=())
        def exp2(x: Tensor) -> Tensor:
            return x.exp() * 2

        def _setup(ctx, inputs, output):
            (x,) = inputs
            y = x.exp()
            ctx.save_for_backward(y)
            n = len(ctx.saved_tensors)

        def _backward(ctx, grad):
            (y,) = ctx.saved_tensors
            (again,) = ctx.saved_tensors
            return grad * y * 2

        torch.library.register_autograd("t::exp2", _backward, setup_context=_setup)
    ''', CALLBACK_RULES) == {(10, "AGF206"), (12, "AGF003"), (16, "AGF210")}


def test_a_wrappers_fake_is_its_own_ops_not_another_of_that_name(tmp_path: Path) -> None:
    """`direct_register_custom_op("quant", impl, fake_impl=fake)` registers
    `fake` for the op it defines (its namespace not known statically), not
    for another project's `other::quant` scanned beside it."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "__init__.py").write_text("")
    assert tree(tmp_path, {
        "pkg/utils.py": REGISTRATION_WRAPPER,
        "pkg/ops.py": '''
            from pkg.utils import direct_register_custom_op

            def quant(x: Tensor) -> Tensor:
                return x.round()

            def quant_fake(x):
                return torch.empty_like(x)

            direct_register_custom_op("quant", quant, mutates_args=[], fake_impl=quant_fake)
        ''',
        "other/kernels.py": '''
            @torch.library.custom_op("other::quant", mutates_args=())
            def quant(x: Tensor, scale: float, rows: bool) -> Tensor:
                return (x * scale).round()

            @quant.register_fake
            def _(x, scale, rows):
                return torch.empty_like(x)
        '''}) == set()
