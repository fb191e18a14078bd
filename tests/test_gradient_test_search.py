"""AGF301's search for gradient tests (issue 39): where a project checks a
Function's gradients, and how (`gradient_checks`), found the ways real test
suites write them."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .helpers import lint_tree, lint_tree_result, unchecked, write

# A Function with a real derivative, and a plain function calling it.
SWISH = '''\
import torch


class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * (s + x * s * (1 - s))


def {helper}(x):
    return {name}.apply(x)
'''

# A reference test's body: the Function's gradient against autograd's, `{run}`
# the call that runs the Function, `{compare}` the comparison.
REFERENCE_BODY = '''\
    x = torch.randn(8, dtype=torch.double, requires_grad=True)
    ref = x.detach().clone().requires_grad_()
    {run}.sum().backward()
    (ref * torch.sigmoid(ref)).sum().backward()
    {compare}
'''


def reference_test(name: str, run: str, compare: str = "assert torch.allclose(x.grad, ref.grad)",
                   header: str = "") -> str:
    return header + f"\n\ndef {name}():\n" + REFERENCE_BODY.format(run=run, compare=compare)


# -- 1. namespace packages and star re-exports ---------------------------------
@pytest.mark.parametrize("importing, run", [
    ("from src.ops.act import swish", "swish(x)"),
    ("from ops.act import swish", "swish(x)"),
    ("import src.ops.act as act", "act.swish(x)"),
    ("from src.ops import act", "act.swish(x)"),
])
def test_tests_reach_functions_through_namespace_packages(
        tmp_path: Path, importing: str, run: str) -> None:
    """Miss 7: no `__init__.py` anywhere, the test reaches the Function
    through a plain function of its module and compares `.grad`."""
    write(tmp_path, "src/ops/act.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "src/ops/other.py", SWISH.format(name="Other", helper="other"))
    write(tmp_path, "tests/test_act.py",
          reference_test("test_swish", run, header=f"import torch\n{importing}"))
    assert unchecked(tmp_path) == {"Other"}


@pytest.mark.parametrize("importing, run", [
    ("from nets import swish", "swish(x)"),
    ("from nets import Swish", "Swish.apply(x)"),
    ("import nets", "nets.swish(x)"),
])
def test_tests_reach_functions_through_star_reexports(
        tmp_path: Path, importing: str, run: str) -> None:
    write(tmp_path, "nets/__init__.py", "from .activation import *\nfrom .other import Other\n")
    write(tmp_path, "nets/activation.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "nets/other.py", SWISH.format(name="Other", helper="other"))
    write(tmp_path, "tests/test_nets.py",
          reference_test("test_swish", run, header=f"import torch\n{importing}"))
    assert unchecked(tmp_path) == {"Other"}


def test_star_reexports_honour_all(tmp_path: Path) -> None:
    """`__all__` limits what a star import brings: a name left out of it is
    not re-exported, so a test importing it from the package reaches nothing."""
    write(tmp_path, "nets/__init__.py", "from .activation import *\n")
    write(tmp_path, "nets/activation.py",
          "__all__ = ['other']\n" + SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "tests/test_nets.py", '''
        import torch
        from torch.autograd import gradcheck
        from nets import swish


        def test_swish():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert gradcheck(swish, (x,))
        ''')
    assert unchecked(tmp_path) == {"Swish"}


# -- 2. plain asserts and the project's own assert helpers --------------------
@pytest.mark.parametrize("compare", [
    "assert (x.grad - ref.grad).abs().max() < 1e-6",
    "assert torch.max(torch.abs(x.grad - ref.grad)) <= 1e-6",
    "ok = torch.allclose(x.grad, ref.grad)\n    assert ok",
    "assert (x.grad == ref.grad).all()",
])
def test_plain_asserts_compare(tmp_path: Path, compare: str) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "test_ops.py",
          reference_test("test_swish", "swish(x)", compare, "import torch\nfrom ops import swish"))
    assert unchecked(tmp_path) == set()


@pytest.mark.parametrize("helper", [
    "def check(a, b):\n    torch.testing.assert_close(a, b)\n",
    "def check(a, b, tol=1e-6):\n    assert (a - b).abs().max() < tol\n",
    "def check(a, b):\n    diff = (a - b).abs().max()\n    assert diff < 1e-6, diff\n",
    "def check(a, b):\n    verify(a, b)\n\n\ndef verify(x, y):\n    assert torch.allclose(x, y)\n",
])
def test_project_assert_helpers_compare(tmp_path: Path, helper: str) -> None:
    """Functions of the project, whatever their name, whose body compares
    their arguments (in the test file or a utility module of the tests)."""
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "tests/utils.py", "import torch\n\n\n" + helper)
    write(tmp_path, "tests/test_ops.py", reference_test(
        "test_swish", "swish(x)", "check(x.grad, ref.grad)",
        "import torch\nfrom ops import swish\nfrom tests.utils import check"))
    assert unchecked(tmp_path) == set()


@pytest.mark.parametrize("helper", [
    "def check(a, b):\n    print(a, b)\n",  # compares nothing
    "def check(a, b):\n    assert torch.allclose(torch.ones(1), torch.ones(1))\n",  # not them
    "def check(a, b):\n    assert a is not None\n",  # no comparison of values
])
def test_helpers_that_compare_nothing_of_their_arguments_are_no_check(
        tmp_path: Path, helper: str) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "test_ops.py", "import torch\nfrom ops import swish\n\n\n" + helper +
          reference_test("test_swish", "swish(x)", "check(x.grad, ref.grad)"))
    assert unchecked(tmp_path) == {"Swish"}


# -- 3. checks inside library modules ------------------------------------------
@pytest.mark.parametrize("check", [
    "def _test_swish():\n" + REFERENCE_BODY.format(
        run="Swish.apply(x)", compare="assert torch.allclose(x.grad, ref.grad)"),
    'if __name__ == "__main__":\n' + REFERENCE_BODY.format(
        run="Swish.apply(x)", compare="print(torch.allclose(x.grad, ref.grad))"),
    'if __name__ == "__main__":\n'
    "    x = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
    "    print(torch.autograd.gradcheck(Swish.apply, (x,)))\n",
])
def test_in_module_checks_count(tmp_path: Path, check: str) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish") + "\n\n" + check)
    write(tmp_path, "ops_other.py", SWISH.format(name="Other", helper="other"))
    write(tmp_path, "test_smoke.py", "def test_nothing():\n    pass\n")
    assert unchecked(tmp_path) == {"Other"}


def test_library_code_that_differentiates_is_no_check(tmp_path: Path) -> None:
    """A training step in a library module differentiates and compares
    (a loss against a threshold): no test of the Function's gradients."""
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish") + '''

def train_step(x, opt):
    loss = Swish.apply(x).sum()
    loss.backward()
    if torch.allclose(x.grad, torch.zeros_like(x.grad)):
        print("vanishing")
    opt.step()
''')
    write(tmp_path, "test_smoke.py", "def test_nothing():\n    pass\n")
    assert unchecked(tmp_path) == {"Swish"}


# -- 4. `Fn.apply` handed to a project helper that gradchecks ------------------
@pytest.mark.parametrize("helper", [
    "def check_grads(fn, inputs):\n    assert gradcheck(fn, inputs)\n",
    "def check_grads(fn, inputs, **kw):\n    ok = torch.autograd.gradcheck(fn, inputs, **kw)\n"
    "    assert ok\n",
    "def check_grads(fn, inputs):\n    run_check(fn, inputs)\n\n\n"
    "def run_check(f, xs):\n    assert gradcheck(lambda *a: f(*a), xs)\n",
])
def test_apply_handed_to_a_gradchecking_helper(tmp_path: Path, helper: str) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish") +
          SWISH.format(name="Other", helper="other").replace("import torch\n", ""))
    write(tmp_path, "tests/helpers.py",
          "import torch\nfrom torch.autograd import gradcheck\n\n\n" + helper)
    write(tmp_path, "tests/test_ops.py", '''
        import torch
        from ops import Swish
        from tests.helpers import check_grads


        def test_swish():
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            check_grads(Swish.apply, (x,))
        ''')
    assert unchecked(tmp_path) == {"Other"}


# -- 5. modules, parametrised classes, monkeypatched entry points --------------
def test_module_calls_reach_the_function(tmp_path: Path) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish") + '''

class SwishLayer(torch.nn.Module):
    def forward(self, x):
        return Swish.apply(x)
''')
    write(tmp_path, "tests/test_layer.py", reference_test(
        "test_layer", "layer(x)", header="import torch\nfrom ops import SwishLayer",
    ).replace("    x = torch", "    layer = SwishLayer()\n    x = torch", 1))
    assert unchecked(tmp_path) == set()


def test_modules_built_by_fixtures(tmp_path: Path) -> None:
    """The test's parameter is a fixture of its module that builds the module."""
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish") + '''

class SwishLayer(torch.nn.Module):
    def forward(self, x):
        return Swish.apply(x)
''')
    write(tmp_path, "tests/test_layer.py", '''
        import pytest
        import torch
        from ops import SwishLayer


        @pytest.fixture
        def layer():
            return SwishLayer()


        def test_layer(layer):
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            ref = x.detach().clone().requires_grad_()
            layer(x).sum().backward()
            (ref * torch.sigmoid(ref)).sum().backward()
            torch.testing.assert_close(x.grad, ref.grad)
        ''')
    assert unchecked(tmp_path) == set()


def test_parametrised_test_classes(tmp_path: Path) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "tests/test_ops.py", '''
        import pytest
        import torch
        from ops import Swish


        @pytest.mark.parametrize("fn", [Swish.apply])
        class TestGradients:
            def test_grad(self, fn):
                x = torch.randn(3, dtype=torch.double, requires_grad=True)
                ref = x.detach().clone().requires_grad_()
                fn(x).sum().backward()
                (ref * torch.sigmoid(ref)).sum().backward()
                torch.testing.assert_close(x.grad, ref.grad)
        ''')
    assert unchecked(tmp_path) == set()


def test_monkeypatched_entry_points(tmp_path: Path) -> None:
    """The test swaps the Function in for the entry point it calls."""
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, "model.py", '''
        import torch


        def activation(x):
            return torch.nn.functional.silu(x)


        def block(x):
            return activation(x) * 2
        ''')
    write(tmp_path, "tests/test_model.py", '''
        import torch
        import model
        from ops import swish


        def test_block_with_the_kernel(monkeypatch):
            monkeypatch.setattr(model, "activation", swish)
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            ref = x.detach().clone().requires_grad_()
            model.block(x).sum().backward()
            (torch.nn.functional.silu(ref) * 2).sum().backward()
            torch.testing.assert_close(x.grad, ref.grad)
        ''')
    assert unchecked(tmp_path) == set()


# -- 6. straight-through estimators --------------------------------------------
STE = '''\
import torch


class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale=0.1):
        {body}

    @staticmethod
    def backward(ctx, grad):
        return grad{clone}, None
'''


@pytest.mark.parametrize("body", [
    "return torch.round(x / scale) * scale",
    "return x.sign()",
    "return torch.floor(x)",
    "return torch.clamp(torch.round(x / scale), -128, 127) * scale",
    "return x.div(scale).round().mul(scale)",
    "return torch.where(x >= 0, 1.0, -1.0)",
    "return torch.where(x > 0, torch.ones_like(x), -torch.ones_like(x))",
    "return (x > 0).float()",
    "return torch.fake_quantize_per_tensor_affine(x, scale, 0, -128, 127)",
    "q = torch.round(x / scale).clamp(-8, 7)\n        return q * scale",
    "return quantize(x, scale)",
])
@pytest.mark.parametrize("clone", ["", ".clone()"])
def test_straight_through_estimators_are_not_untested(
        tmp_path: Path, body: str, clone: str) -> None:
    helper = "\n\ndef quantize(t, s):\n    return torch.round(t / s) * s\n"
    write(tmp_path, "quant.py", STE.format(name="Ste", body=body, clone=clone) + helper)
    write(tmp_path, "test_quant.py", "def test_nothing():\n    pass\n")
    assert unchecked(tmp_path) == set()


# -- gradient_checks: how each Function is checked -----------------------------
def checks_of(root: Path) -> dict[tuple[str, str], tuple[str, str, int]]:
    """gradient_checks of a project scan: (file name, class key) ->
    (kind, file name, line)."""
    from autograd_lint.checkers.usage import gradchecked, gradient_checks

    keep: list[object] = []
    lint_tree_result(root, {"AGF301"}, keep=keep)
    project = keep[0].project  # type: ignore[attr-defined]
    found = gradient_checks(project)
    assert set(found) == gradchecked(project)  # AGF301's answer: the same Functions
    return {(Path(path).name, key): (check.kind, Path(check.path).name, check.line)
            for (path, key), check in found.items()}


def test_gradient_checks_say_how_and_where(tmp_path: Path) -> None:
    names = ["ByGradcheck", "ByGradgrad", "ByOpcheck", "ByReference", "ByHelper", "InModule",
             "Both", "Untested"]
    write(tmp_path, "ops.py", "\n\n".join(
        SWISH.format(name=name, helper=name.lower()).replace("import torch\n", "")
        for name in names).join(("import torch\n", '''

if __name__ == "__main__":
    x = torch.randn(3, dtype=torch.double, requires_grad=True)
    torch.autograd.gradcheck(InModule.apply, (x,))
    torch.autograd.gradcheck(Both.apply, (x,))
''')))
    write(tmp_path, "tests/helpers.py", '''
        from torch.autograd import gradcheck


        def check_grads(fn, inputs):
            assert gradcheck(fn, inputs)
        ''')
    write(tmp_path, "tests/test_ops.py", '''
        import torch
        from torch.autograd import gradcheck, gradgradcheck
        from torch.library import opcheck

        from ops import ByGradcheck, ByGradgrad, ByHelper, ByOpcheck, Both, byreference
        from tests.helpers import check_grads

        X = (torch.randn(3, dtype=torch.double, requires_grad=True),)


        def test_checks():
            assert gradcheck(ByGradcheck.apply, X)
            assert gradgradcheck(ByGradgrad.apply, X)
            opcheck(ByOpcheck, X)
            check_grads(ByHelper.apply, X)


        def test_reference():
            x = torch.randn(8, dtype=torch.double, requires_grad=True)
            ref = x.detach().clone().requires_grad_()
            byreference(x).sum().backward()
            (ref * torch.sigmoid(ref)).sum().backward()
            assert (x.grad - ref.grad).abs().max() < 1e-6


        def test_later():
            assert gradcheck(Both.apply, X)
        ''')
    assert checks_of(tmp_path) == {
        ("ops.py", "ops.ByGradcheck"): ("gradcheck", "test_ops.py", 13),
        ("ops.py", "ops.ByGradgrad"): ("gradgradcheck", "test_ops.py", 14),
        ("ops.py", "ops.ByOpcheck"): ("opcheck", "test_ops.py", 15),
        ("ops.py", "ops.ByHelper"): ("gradcheck", "test_ops.py", 16),
        ("ops.py", "ops.ByReference"): ("reference test", "test_ops.py", 19),
        ("ops.py", "ops.InModule"): ("in-module check", "ops.py", 156),
        ("ops.py", "ops.Both"): ("gradcheck", "test_ops.py", 28),  # a test's, before ops.py's
    }
    assert unchecked(tmp_path) == {"Untested"}


def test_the_first_check_by_path_and_line_is_kept(tmp_path: Path) -> None:
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="swish"))
    for name in ("test_b.py", "test_a.py"):
        write(tmp_path, name, '''
            import torch
            from ops import Swish


            def test_grads():
                x = torch.randn(3, dtype=torch.double, requires_grad=True)
                assert torch.autograd.gradcheck(Swish.apply, (x,))
                assert torch.autograd.gradgradcheck(Swish.apply, (x,))
            ''')
    assert checks_of(tmp_path) == {("ops.py", "ops.Swish"): ("gradcheck", "test_a.py", 8)}


# -- every way of running finds the same checks --------------------------------
def write_every_form(root: Path) -> None:
    """One project with a Function per form the search had missed."""
    write(root, "src/ops/act.py", SWISH.format(name="Swish", helper="swish"))
    write(root, "src/ops/star.py", SWISH.format(name="Star", helper="star"))
    write(root, "src/ops/__init__.py", "from .star import *\n")
    write(root, "src/ops/plain.py", SWISH.format(name="Plain", helper="plain"))
    write(root, "src/ops/inmodule.py", SWISH.format(name="InModule", helper="inmodule") +
          "\n\ndef _test_grad():\n" + REFERENCE_BODY.format(
              run="InModule.apply(x)", compare="assert torch.allclose(x.grad, ref.grad)"))
    write(root, "src/ops/handed.py", SWISH.format(name="Handed", helper="handed"))
    write(root, "src/ops/untested.py", SWISH.format(name="Untested", helper="untested"))
    write(root, "tests/utils.py", '''
        import torch
        from torch.autograd import gradcheck


        def close(a, b):
            assert (a - b).abs().max() < 1e-6


        def check_grads(fn, inputs):
            assert gradcheck(fn, inputs)
        ''')
    write(root, "tests/test_act.py", reference_test(
        "test_swish", "swish(x)", header="import torch\nfrom src.ops.act import swish"))
    write(root, "tests/test_star.py", reference_test(
        "test_star", "Star.apply(x)", "close(x.grad, ref.grad)",
        header="import torch\nfrom src.ops import Star\nfrom tests.utils import close"))
    write(root, "tests/test_plain.py", reference_test(
        "test_plain", "plain(x)", "assert (x.grad - ref.grad).abs().max() < 1e-6",
        header="import torch\nfrom src.ops.plain import plain"))
    write(root, "src/ops/registry.py", REGISTRY)
    write(root, "src/ops/keyed.py", SWISH.format(name="Keyed", helper="keyed") + '''

from src.ops.registry import register_op


@register_op("keyed")
def keyed_entry(x):
    return Keyed.apply(x)
''')
    write(root, "tests/test_keyed.py", reference_test(
        "test_keyed", 'dispatch("keyed", x)',
        header="import torch\nfrom src.ops.registry import dispatch"))
    write(root, "hopper/__init__.py", "")
    write(root, "hopper/iface.py", SWISH.format(name="Beside", helper="beside"))
    write(root, "hopper/test_iface.py", reference_test(
        "test_beside", "beside(x)", header="import torch\nfrom iface import beside"))
    write(root, "tests/test_handed.py", '''
        import torch
        from src.ops.handed import Handed
        from tests.utils import check_grads


        def test_handed():
            check_grads(Handed.apply, (torch.randn(3, dtype=torch.double, requires_grad=True),))
        ''')


@pytest.mark.parametrize("options", [{"prefilter": False}, {"jobs": 2}])
def test_every_way_of_running_finds_the_same_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict) -> None:
    from autograd_lint.engine import lint as engine

    monkeypatch.setattr(engine, "_PARALLEL_MIN_FILES", 2)  # parts even for a small tree
    write_every_form(tmp_path)
    assert unchecked(tmp_path) == {"Untested"}
    found = {f.function for f in lint_tree(tmp_path, {"AGF301"}, **options)}
    assert found == {"Untested"}


def test_incremental_runs_see_a_helper_stop_comparing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    """The comparing helper lives in a file that checks nothing itself: the
    answer read it, so editing it makes the answer stale."""
    import json

    from autograd_lint.cli.entry import main

    write_every_form(tmp_path)
    write(tmp_path, "tests/compare.py", "def close(a, b):\n    assert (a - b).abs().max() < 1e-6\n")
    star_test = tmp_path / "tests/test_star.py"
    star_test.write_text(star_test.read_text().replace("tests.utils", "tests.compare"))
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> set[str]:
        main(["check", ".", "--isolated", "--select", "AGF301", "--format", "json", *args])
        return {f["function"] for f in json.loads(capsys.readouterr().out)}

    assert run() == {"Untested"}
    (tmp_path / "tests/compare.py").write_text("def close(a, b):\n    print(a, b)\n")
    assert run() == {"Untested", "Star"} == run("--no-cache")


@pytest.mark.parametrize("body", [
    "return torch.mul(x, (x > 0).type_as(x))",  # a ReLU: a mask times its input
    "mask = (x > 0).float()\n        return x * mask",
    "return x.mul((x > 0).float())",
])
def test_masks_times_a_variable_are_no_staircase(tmp_path: Path, body: str) -> None:
    # (a backward that computes: one passing the gradient through is deliberate anyway)
    mask = " * (ctx.saved_tensors[0] > 0)"
    write(tmp_path, "quant.py", STE.format(name="Masked", body=body, clone=mask))
    write(tmp_path, "test_quant.py", "def test_nothing():\n    pass\n")
    assert unchecked(tmp_path) == {"Masked"}


def test_a_helper_first_met_at_the_end_of_a_long_chain_is_followed_again(
        tmp_path: Path) -> None:
    """test_a reaches `direct` through more helpers than the search follows;
    test_b calls it directly: that call still finds the Function."""
    chain = "\n\n".join(f"def f{i}(x):\n    return f{i + 1}(x)" for i in range(1, 7))
    write(tmp_path, "ops.py", SWISH.format(name="Swish", helper="direct") + "\n\n" +
          chain.replace("f7(x)", "direct(x)") + "\n")
    for name, fn in (("test_a.py", "f1"), ("test_b.py", "direct")):
        write(tmp_path, name, f'''
            import torch
            from ops import {fn}


            def test_grads():
                x = torch.randn(3, dtype=torch.double, requires_grad=True)
                assert torch.autograd.gradcheck({fn}, (x,))
            ''')
    assert unchecked(tmp_path) == set()


def test_dispatch_tables_are_no_proof_a_function_runs(tmp_path: Path) -> None:
    """A module-level list is run whole by the tests that iterate it; a dict
    is looked up by a key known at run time: which entry runs is not known."""
    write(tmp_path, "ops.py", "\n\n".join(
        SWISH.format(name=name, helper=name.lower()).replace("import torch\n", "")
        for name in ("Listed", "Tabled")).join(("import torch\n", '''

FUNCS = [Listed.apply]
TABLE = {"tabled": Tabled.apply}
''')))
    write(tmp_path, "test_ops.py", '''
        import pytest
        import torch
        from ops import FUNCS, TABLE


        @pytest.mark.parametrize("fn", FUNCS)
        def test_listed(fn):
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert torch.autograd.gradcheck(fn, (x,))


        def test_tabled(name):
            x = torch.randn(3, dtype=torch.double, requires_grad=True)
            assert torch.autograd.gradcheck(TABLE[name], (x,))
        ''')
    assert unchecked(tmp_path) == {"Tabled"}


@pytest.mark.parametrize("body", ["res = x.new(x)\n        return res", "return x.new(x)"])
def test_an_identity_forward_copying_with_new_is_deliberate(tmp_path: Path, body: str) -> None:
    """fairseq's GradMultiply: `x.new(x)` copies x, backward scales the gradient."""
    write(tmp_path, "grad.py", STE.format(name="GradMultiply", body=body, clone=" * 0.5"))
    write(tmp_path, "test_grad.py", "def test_nothing():\n    pass\n")
    assert unchecked(tmp_path) == set()


# -- string-keyed registries, pass-through backwards, files beside a test -------
REGISTRY = '''\
_IMPLS = {}


def register_op(name, impl_name="default"):
    def decorate(fn):
        _IMPLS[name, impl_name] = fn
        return fn
    return decorate


def dispatch(name, *args, impl="default"):
    return _IMPLS[name, impl](*args)
'''


@pytest.mark.parametrize("run", [
    'dispatch("swish", x)',
    'dispatch("swish", x, impl="fast")',
    'run_op("swish", x)',
])
def test_string_keyed_registries_reach_what_a_test_names(tmp_path: Path, run: str) -> None:
    """Liger's backends: `@register_op("swish", impl_name=...)` registers a
    wrapper that applies the Function; a test that runs `dispatch("swish",
    ...)` (or a helper of its own that does) checks every entry registered
    as "swish", and none of the others."""
    write(tmp_path, "lib/__init__.py", "")
    write(tmp_path, "lib/registry.py", REGISTRY)
    for name in ("Swish", "Other"):
        write(tmp_path, f"lib/{name.lower()}.py", SWISH.format(name=name, helper="helper") + f'''

from lib.registry import register_op


@register_op("{name.lower()}", impl_name="fast")
def {name.lower()}_fast(x):
    return {name}.apply(x)
''')
    write(tmp_path, "tests/test_ops.py", reference_test("test_swish", run, header='''\
import torch
from lib.registry import dispatch


def run_op(op, *args):
    return dispatch(op, *args)
'''))
    assert unchecked(tmp_path) == {"Other"}


OPAQUE_FORWARD = '''\
import torch
from kernels import cast_fp8


class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dtype):
        return cast_fp8(x, dtype)

    @staticmethod
    def backward(ctx, grad):
{backward}
'''


@pytest.mark.parametrize("backward, deliberate", [
    ("return grad, None", True),
    ("return grad.to(torch.float32).contiguous(), None", True),
    ("g = grad_w = None\nif ctx.needs_input_grad[0]:\n    g = grad\nreturn g, grad_w", True),
    ("return grad * 2, None", False),
    ("grad.mul_(2)\nreturn grad, None", False),
    ("torch.distributed.all_reduce(grad)\nreturn grad, None", False),
    ("g = grad.clone()\ng[g < 0] = 0\nreturn g, None", False),
    ("return None, None", False),
])
def test_a_backward_passing_the_gradient_through_is_straight_through(
        tmp_path: Path, backward: str, deliberate: bool) -> None:
    """torchao's casts to float8 and optimum-quanto's dequantizers: whatever
    forward computes, backward hands the input the output's gradient
    unchanged (a straight-through estimator): nothing to gradcheck. A
    gradient scaled, changed in place or handed to a collective is computed."""
    body = textwrap.indent(backward, " " * 8)
    write(tmp_path, "cast.py", OPAQUE_FORWARD.format(name="ToFp8", backward=body))
    write(tmp_path, "test_cast.py", "def test_nothing():\n    pass\n")
    found = lint_tree(tmp_path, {"AGF301", "AGF000"})
    assert {f.function for f in found} == (set() if deliberate else {"ToFp8"})
    assert all(f.code == "AGF301" for f in found)


@pytest.mark.parametrize("test_file, reached", [
    ("hopper/test_iface.py", True),
    ("tests/test_iface.py", False),
])
def test_a_top_level_import_reaches_the_file_beside_the_importing_one(
        tmp_path: Path, test_file: str, reached: bool) -> None:
    """flash-attn's hopper/: `from flash_attn_interface import ...` in a test
    beside `flash_attn_interface.py` (its `setup.py` installs the file as a
    top-level module; a script's folder is its `sys.path[0]`), though the
    folder is a package. From another folder the name leads nowhere."""
    write(tmp_path, "hopper/__init__.py", "")
    write(tmp_path, "hopper/iface.py", SWISH.format(name="Swish", helper="swish"))
    write(tmp_path, test_file,
          reference_test("test_swish", "swish(x)", header="import torch\nfrom iface import swish"))
    assert unchecked(tmp_path) == (set() if reached else {"Swish"})
