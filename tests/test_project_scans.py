"""Project scans: AGF301 (no gradcheck) and AGF105 across files and packages."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from autograd_lint.cli.entry import main

from .helpers import lint_tree, unchecked, write

LIBRARY = textwrap.dedent('''\
    import torch


    def _fn(name):
        class _F(torch.autograd.Function):
            pass
        return _F


    class {name}(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.scale = 2  # a forward that uses ctx: forward(None, x) raises
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.scale
    ''')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A package `ops` with one Function per way a test can exercise it."""
    for name in ("Direct", "ViaLambda", "ViaLocalWrapper", "ViaAlias", "ViaHelper",
                 "ViaParametrize", "ViaLoop", "ViaModule", "ViaGradgrad", "ViaOpcheck",
                 "Untested"):
        write(tmp_path, f"src/ops/{name.lower()}.py", LIBRARY.format(name=name))
    write(tmp_path, "src/ops/__init__.py", '''
        from .viaalias import ViaAlias
        from .viahelper import ViaHelper

        via_alias = ViaAlias.apply


        def via_helper(x):
            return ViaHelper.apply(x)
        ''')
    write(tmp_path, "src/ops/layers.py", '''
        import torch
        from .viamodule import ViaModule


        class Doubler(torch.nn.Module):
            def forward(self, x):
                return ViaModule.apply(x)
        ''')
    write(tmp_path, "tests/test_grads.py", '''
        import pytest
        import torch
        from torch.autograd import gradcheck, gradgradcheck
        from torch.library import opcheck

        from ops import via_alias, via_helper
        from ops.direct import Direct
        from ops.layers import Doubler
        from ops.vialambda import ViaLambda
        from ops.vialocalwrapper import ViaLocalWrapper
        from ops.vialoop import ViaLoop
        from ops.viaparametrize import ViaParametrize
        import ops.viagradgrad as gg
        from ops.viaopcheck import ViaOpcheck

        X = (torch.randn(3, dtype=torch.double, requires_grad=True),)


        def test_direct():
            assert gradcheck(Direct.apply, X)


        def test_lambda():
            assert torch.autograd.gradcheck(lambda t: ViaLambda.apply(t) * 1.0, X)


        def test_local_wrapper():
            def run(t):
                return ViaLocalWrapper.apply(t)

            assert gradcheck(run, X)


        def test_alias_and_helper():
            assert gradcheck(via_alias, X)
            assert gradcheck(via_helper, X)


        @pytest.mark.parametrize("fn", [ViaParametrize.apply])
        def test_parametrized(fn):
            assert gradcheck(fn, X)


        def test_loop():
            for fn in [ViaLoop.apply]:
                assert gradcheck(fn, X)


        def test_module():
            assert gradcheck(Doubler(), X)


        def test_gradgrad():
            assert gradgradcheck(gg.ViaGradgrad.apply, X)


        def test_opcheck():
            opcheck(ViaOpcheck, X)
        ''')
    return tmp_path


def test_every_way_of_exercising_a_function_counts(project: Path) -> None:
    assert unchecked(project) == {"Untested"}


def test_agf301_points_at_the_class_line(project: Path) -> None:
    [finding] = [f for f in lint_tree(project, {"AGF301"})]
    assert Path(finding.path).name == "untested.py"
    assert finding.line == 10 and finding.column == 0
    assert "torch.autograd.gradcheck(Untested.apply, inputs)" in finding.message


def test_without_the_tests_directory_nothing_is_said_of_what_tests_check(project: Path) -> None:
    # A project scanned without any of its tests (a wheel, `check src`) cannot
    # say which Functions its tests check (RULES.md, Precision first).
    assert unchecked(project / "src") == set()
    assert len(unchecked(project)) == 1  # with them: only `Untested`


def test_agf301_needs_a_tree_scan(project: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(project)
    main(["check", "src/ops/untested.py", "--select", "AGF301", "--format", "json"])
    assert json.loads(capsys.readouterr().out) == []  # single files: cannot be known
    main(["check", "src", "tests", "--select", "AGF301", "--format", "json"])
    assert [f["function"] for f in json.loads(capsys.readouterr().out)] == ["Untested"]


def test_marker_classes_and_bases_are_not_reported(tmp_path: Path) -> None:
    write(tmp_path, "lib.py", '''
        import torch


        class Base(torch.autograd.Function):
            @staticmethod
            def backward(ctx, grad):
                return grad * 2


        class Child(Base):
            @staticmethod
            def forward(ctx, x):
                return x.exp()


        class ForwardOnly(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.round()
        ''')
    write(tmp_path, "test_lib.py", "def test_imports():\n    pass\n")
    assert unchecked(tmp_path) == {"Child"}


def test_agf105_follows_imports_across_modules(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "from .ops import Scale\n")
    write(tmp_path, "pkg/ops.py", LIBRARY.format(name="Scale"))
    write(tmp_path, "app/run.py", '''
        import torch
        import pkg
        from pkg.ops import Scale as S


        def legacy(x):
            return pkg.Scale()(x)


        def bypass(x):
            return S.forward(None, x)


        def fine(x):
            with torch.no_grad():
                return S.forward(None, x)
        ''')
    findings = [f for f in lint_tree(tmp_path, {"AGF105"})]
    assert [(Path(f.path).name, f.line, f.function) for f in findings] == [
        ("run.py", 8, "Scale"), ("run.py", 12, "Scale")]


@pytest.mark.parametrize("importing", [
    "from src.ops.cube import Cube",  # the project root on sys.path (a test runner's rootdir)
    "from ops.cube import Cube",  # `src/` on sys.path (a src layout)
    "import src.ops.cube as cube_module\nCube = cube_module.Cube",
])
@pytest.mark.parametrize("prefilter", [True, False])
def test_agf301_follows_imports_through_folders_without_init(
        tmp_path: Path, importing: str, prefilter: bool) -> None:
    """No `__init__.py` anywhere: the folders are namespace packages."""
    write(tmp_path, "src/ops/cube.py", LIBRARY.format(name="Cube"))
    write(tmp_path, "src/ops/square.py", LIBRARY.format(name="Square"))
    write(tmp_path, "tests/test_cube.py", importing + textwrap.dedent('''
        import torch


        def test_cube():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert torch.autograd.gradcheck(Cube.apply, (x,))
        '''))
    found = {f.function for f in lint_tree(tmp_path, {"AGF301"}, prefilter=prefilter)
             if f.code == "AGF301"}
    assert found == {"Square"}  # Cube is exercised; Square still is not


def test_a_dotted_name_reaches_only_the_folders_it_spells(tmp_path: Path) -> None:
    write(tmp_path, "lib/ops/cube.py", LIBRARY.format(name="Cube"))
    write(tmp_path, "tests/test_cube.py", '''
        import torch
        from other.ops.cube import Cube  # not this project's folders


        def test_cube():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert torch.autograd.gradcheck(Cube.apply, (x,))
        ''')
    assert unchecked(tmp_path) == {"Cube"}


@pytest.mark.parametrize("prefilter", [True, False])
def test_in_place_writes_of_imported_helpers_are_seen(tmp_path: Path, prefilter: bool) -> None:
    """A helper module with no Function in it (the prefilter skips it) that
    launches a kernel storing into its argument, imported by a Function."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/kernels.py", '''
        import triton
        import triton.language as tl


        @triton.jit
        def _negate(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, -tl.load(x_ptr + offsets), mask=offsets < n)


        def negate_(x):
            _negate[(1,)](x, x.numel(), BLOCK=16)
            return x
        ''')
    write(tmp_path, "pkg/ops.py", '''
        import torch

        from pkg.kernels import negate_
        from .kernels import negate_ as negate_relative


        class Negate(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                negate_(x)
                negate_relative(y)
                return x + y

            @staticmethod
            def backward(ctx, grad):
                return -grad, -grad
        ''')
    found = [(f.line, f.code) for f in lint_tree(tmp_path, {"AGF007"}, prefilter=prefilter)]
    assert found == [(11, "AGF007"), (12, "AGF007")]  # the two calls


@pytest.mark.parametrize("prefilter", [True, False])
def test_imported_helpers_that_leave_autograd_are_seen(tmp_path: Path, prefilter: bool) -> None:
    """AGF204 through a helper of another module (no Function in it): only
    the call that passes the gradient, and a custom op's declared mutation."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/scaling.py", '''
        import torch


        def by_norm(t):
            return t / t.norm().item()


        @torch.library.custom_op("pkg::zero_into", mutates_args=("out",))
        def zero_into(out: torch.Tensor) -> None:
            out.zero_()
        ''')
    write(tmp_path, "pkg/ops.py", '''
        import torch

        from pkg.scaling import by_norm, zero_into


        class Normed(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(w)
                return x * w

            @staticmethod
            def backward(ctx, grad):
                (w,) = ctx.saved_tensors
                zero_into(grad)
                return by_norm(grad), by_norm(torch.ones(3))
        ''')
    found = [(f.line, f.code) for f in lint_tree(tmp_path, {"AGF204", "AGF006"},
                                                 prefilter=prefilter)]
    assert found == [(16, "AGF006"), (17, "AGF204")]
