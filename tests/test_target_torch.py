"""The target torch version (RULES.md, "Target torch version") and the rules
of torch 2.13/2.14 that read it or that it brought: boxed gradients, tagged
ops, exact gradient counts of registered backwards, registrations made twice
(issue 38)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main
from autograd_lint.core.config import ConfigError, parse_table, parse_torch_version
from autograd_lint.engine.lint import lint_source

from .helpers import lint_tree

BOXED = textwrap.dedent('''\
    import torch


    class Boxed(torch.autograd.Function):
        boxed_grads_call = True

        @staticmethod
        def forward(ctx, x, y):
            return x * 2, y * 3

        @staticmethod
        def backward(ctx, grads):
            gx, gy = grads
            return gx * 2, gy * 3
    ''')
TRAILING = textwrap.dedent('''\
    import torch


    @torch.library.custom_op("tt::scale", mutates_args=())
    def scale(x: torch.Tensor, s: float = 1.0) -> torch.Tensor:
        return x * s


    def setup(ctx, inputs, output):
        ctx.s = inputs[1]


    def backward(ctx, grad):
        return grad * ctx.s, None, None


    scale.register_autograd(backward, setup_context=setup)
    ''')


def messages(source: str, code: str, target: tuple[int, int] | None = None) -> list[str]:
    return [f.message for f in lint_source(source, "m.py", codes={code}, target_torch=target)
            if f.code == code]


# -- the setting ------------------------------------------------------------------
def test_versions_are_read_as_ruff_reads_target_version(tmp_path: Path) -> None:
    assert parse_torch_version("2.13", "x") == (2, 13)
    assert parse_torch_version("2.13.1", "x") == (2, 13)
    for bad in ("3.1", "2", "latest", "1.13"):
        with pytest.raises(ConfigError, match="unknown torch version"):
            parse_torch_version(bad, "x")
    config = parse_table({"target-torch": "2.12"}, tmp_path / "pyproject.toml")
    assert config.target_torch == (2, 12)
    with pytest.raises(ConfigError, match="expected a version string"):
        parse_table({"target-torch": 2.13}, tmp_path / "pyproject.toml")


def test_the_command_line_and_the_configuration_set_it(tmp_path: Path, capsys,
                                                       monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "boxed.py").write_text(BOXED)
    assert main(["check", "--no-cache", "boxed.py"]) == 0
    (tmp_path / "pyproject.toml").write_text('[tool.autograd-lint]\ntarget-torch = "2.12"\n')
    assert main(["check", "--no-cache", "boxed.py"]) == 1
    assert "ignores `boxed_grads_call`" in capsys.readouterr().out
    assert main(["check", "--no-cache", "--target-torch", "2.13", "boxed.py"]) == 0
    assert main(["check", "--show-settings", "boxed.py"]) == 0
    assert "target-torch: 2.12\n" in capsys.readouterr().out
    assert main(["check", "--target-torch", "9.9", "boxed.py"]) == 2
    assert capsys.readouterr().err == \
        "autograd-lint: error: --target-torch: unknown torch version '9.9' (known: 2.0 to 2.14)\n"


def test_the_cache_keeps_findings_per_target(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "boxed.py").write_text(BOXED)
    for _ in range(2):  # the second pair reads the cache
        assert main(["check", "--target-torch", "2.12", "boxed.py"]) == 1
        assert main(["check", "--target-torch", "2.14", "boxed.py"]) == 0
    capsys.readouterr()


# -- rules that read it -----------------------------------------------------------
def test_boxed_gradients_are_legal_from_torch_2_13() -> None:
    assert messages(BOXED, "AGF102") == []
    assert messages(BOXED, "AGF102", (2, 13)) == []
    [message] = messages(BOXED, "AGF102", (2, 12))
    assert "on torch 2.12, which ignores `boxed_grads_call` (honoured from 2.13)" in message


def test_extra_gradients_of_a_registered_backward_break_from_torch_2_14() -> None:
    [newest] = messages(TRAILING, "AGF406")
    assert "returns 3 gradient(s), but the op takes 2 inputs" in newest
    assert 'from torch 2.14 every backward raises ("expected 2, got 3")' in newest
    [older] = messages(TRAILING, "AGF406", (2, 13))
    assert "where torch 2.13 still drops the extras" in older
    exact = TRAILING.replace("return grad * ctx.s, None, None", "return grad * ctx.s, None")
    assert messages(exact, "AGF406") == []


def test_a_fake_of_an_inplace_tagged_op_returns_its_mutated_argument() -> None:
    source = textwrap.dedent('''\
        import torch


        @torch.library.custom_op("tt::scale_", mutates_args={"x"}, tags=TAGS)
        def scale_(x: torch.Tensor, s: float) -> torch.Tensor:
            x.mul_(s)
            return x


        @scale_.register_fake
        def _(x, s):
            return x
        ''')
    for tags, expected in (("torch.Tag.inplace", 0), ("(torch.Tag.inplace,)", 0),
                           ("torch.Tag.pointwise", 1)):
        assert len(messages(source.replace("TAGS", tags), "AGF409")) == expected, tags


# -- registrations made twice -----------------------------------------------------
TWICE = textwrap.dedent('''\
    import torch


    @torch.library.custom_op("tt::f", mutates_args=())
    def f(x: torch.Tensor) -> torch.Tensor:
        return x * 2


    @f.register_fake
    def _(x):
        return torch.empty_like(x)


    @f.register_fake
    def _(x):
        return x.new_empty(x.shape)


    def backward(ctx, grad):
        return grad * 2


    f.register_autograd(backward)
    f.register_autograd(backward)

    if torch.__version__ >= "2.13":
        @torch.library.custom_op("tt::g", mutates_args=())
        def g(x: torch.Tensor) -> torch.Tensor:
            return x * 2
    else:
        @torch.library.custom_op("tt::g", mutates_args=())
        def g(x: torch.Tensor) -> torch.Tensor:
            return x * 3

    try:
        @g.register_fake
        def _(x):
            return torch.empty_like(x)
    except RuntimeError:
        @g.register_fake
        def _(x):
            return torch.empty_like(x)
    ''')


OVERLOADS = textwrap.dedent('''\

    lib = torch.library.Library("tq", "DEF")
    lib.define("quantize(Tensor x, float s) -> Tensor")
    lib.define("quantize.tensor(Tensor x, Tensor s) -> Tensor")
    ''')


def test_registrations_made_twice_on_import_are_reported_at_the_later(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(TWICE + OVERLOADS)  # overloads are other ops
    (tmp_path / "other.py").write_text(TWICE.split("@f.register_fake")[0])  # a second module
    findings = [f for f in lint_tree(tmp_path, {"AGF411"}) if f.code == "AGF411"]
    assert [(Path(f.path).name, f.line) for f in findings] == [("ops.py", 14), ("ops.py", 24)]
    assert findings[0].message.startswith("A fake for op `tt::f` is registered again "
                                          "(first at line 9 of")
    assert "An autograd registration" in findings[1].message


# -- ops registered through a project's decorator factory ---------------------------
def test_ops_of_a_decorator_factory_are_checked_as_custom_ops() -> None:
    source = textwrap.dedent('''\
        import torch


        def cute_op(name, *, mutates_args, **kwargs):
            def wrap(fn):
                return torch.library.custom_op(name, fn, mutates_args=mutates_args, **kwargs)
            return wrap


        def not_a_factory(name, *, mutates_args):
            def wrap(fn):
                return fn
            return wrap


        @cute_op("cute::add_one", mutates_args=())
        def add_one(x: torch.Tensor) -> torch.Tensor:
            x.add_(1)
            return x.clone()


        @cute_op("cute::declared", mutates_args=("x",))
        def declared(x: torch.Tensor) -> None:
            x.add_(1)


        @not_a_factory("cute::plain", mutates_args=())
        def plain(x: torch.Tensor) -> torch.Tensor:
            x.add_(1)
            return x.clone()
        ''')
    findings = lint_source(source, "m.py", codes={"AGF403"})
    assert [(f.line, f.code) for f in findings] == [(18, "AGF403")]
    assert "op `cute::add_one`" in findings[0].message


def test_set_output_grad_dtype_is_a_ctx_method_not_state() -> None:
    """torch 2.14's `ctx.set_output_grad_dtype(...)`: a call, no tensor kept."""
    source = textwrap.dedent('''\
        import torch


        class Cast(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_output_grad_dtype(torch.float32)
                ctx.save_for_backward(x)
                return x.to(torch.bfloat16)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad.to(x.dtype)
        ''')
    from autograd_lint.core.registry import RULES

    codes = {code for code, rule in RULES.items() if rule.family not in ("dynamic", "engine")}
    assert [f.code for f in lint_source(source, "m.py", codes=codes)
            if f.code not in ("AGF303", "AGF202")] == []
