"""Dynamic mode (`check --dynamic`): each AGD rule positive and negative, the
isolation of user code (hang, crash, exit, import error, memory), input
declaration and synthesis, confirmation of static findings, PyTorch's own
reference Functions, and the pytest plugin."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograd_lint.dynamic.runner import _Progress

from .helpers import FIXTURES, ROOT

torch = pytest.importorskip("torch")

DYNAMIC = FIXTURES / "dynamic"


def dynamic(*args: str, cwd: Path = ROOT, timeout: int = 600) -> tuple[int, list[dict], str]:
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                           "--no-cache", "--dynamic", "--format", "json", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


# AGF001 and AGF006, confirmed or not by a run, are pedantic (off by default).
PEDANTIC = ("--extend-select", "AGF001,AGF006")


def by_function(findings: list[dict]) -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for finding in findings:
        result.setdefault(finding["function"], set()).add(finding["code"])
    return result


# -- every rule, positive and negative ----------------------------------------------
EXPECTED = {
    "WrongGradient": {"AGD001"},
    "DetachedBackward": {"AGD002"},
    "TooFewGradients": {"AGD003"},
    "ScalarGradient": {"AGD004"},
    "SinglePrecisionGradient": {"AGD004"},
    "ChangesIncomingGradient": {"AGD005"},
    "TensorOnCtx": {"AGD006"},
    "ChangesSavedOutput": {"AGD007"},
    "WrongTangent": {"AGD008"},
    "WrongVmapRule": {"AGD009"},
    "NoneGradientUnhandled": {"AGD010"},
    "ChangesInput": {"AGD011"},
    "BiasRequired": {"AGD012"},
    "SwappedNeedsInputGrad": {"AGD013"},
    "ContiguousOnly": {"AGD014"},
    "ForgetsWeight": {"AGD015"},
    "undeclared_write": {"AGD016"},
    "CompiledPathGradient": {"AGD017"},
    # Negatives: the same shapes done right.
    "Clean": set(),
    "DetachedOnceDifferentiable": set(),
    "InPlaceMarkedDirty": set(),
    "BiasOptional": set(),
    "UnusedTable": set(),
    "CompiledPathSameGradient": set(),
}


@pytest.fixture(scope="module")
def agd_cases() -> tuple[dict[str, set[str]], list[dict]]:
    _, findings, _ = dynamic("--select", "AGD,AGD015", str(DYNAMIC / "agd_cases.py"))
    return by_function(findings), findings


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_rule_fires_on_its_bug_and_only_there(name: str, agd_cases) -> None:
    reported, _ = agd_cases
    assert reported.get(name, set()) == EXPECTED[name]


def test_deliberate_custom_gradients_are_not_held_to_finite_differences() -> None:
    # Gradient reversal, clipping and a straight-through estimator differ from
    # the derivative on purpose; a wrong backward is still AGD001.
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu",
                             str(DYNAMIC / "deliberate_gradients.py"))
    reported = by_function(findings)
    assert all("AGD001" not in reported.get(name, set())
               for name in ("GradientReversal", "ClippedGradient", "StraightThroughRound"))
    assert reported["WrongSquare"] == {"AGD001"}


def test_every_dynamic_rule_is_exercised() -> None:
    from autograd_lint.core.registry import DYNAMIC_CODES

    assert set().union(*EXPECTED.values()) == DYNAMIC_CODES - {"AGD900"}


def test_a_compiled_gradient_that_differs_says_what_and_how_much(agd_cases) -> None:
    _, findings = agd_cases
    message = next(f["message"] for f in findings if f["function"] == "CompiledPathGradient")
    assert "the gradients differ from eager (gradient 0: max abs difference" in message
    assert "in float64" in message


def test_messages_name_the_input_and_the_size_of_the_error(agd_cases) -> None:
    _, findings = agd_cases
    message = {f["function"]: f["message"] for f in findings}
    assert "input 0 (`x`), max abs error 3.19" in message["WrongGradient"]
    assert "synthesized inputs x=float64[3, 4]" in message["WrongGradient"]
    assert "has dtype torch.float32, but the input has dtype torch.float64" in \
        message["SinglePrecisionGradient"]
    assert "input 0 (`x`)" in message["ChangesInput"] and "max change 1" in \
        message["ChangesInput"]
    assert "`bias` left as None, forward raises" in message["BiasRequired"]
    assert "incorrect number of gradients (expected 2, got 1)" in message["TooFewGradients"]
    line = {f["function"]: f["line"] for f in findings}
    source = (DYNAMIC / "agd_cases.py").read_text().splitlines()
    assert source[line["WrongGradient"] - 1].startswith("class WrongGradient(")


# -- isolation -------------------------------------------------------------------------
def test_hangs_crashes_exits_import_errors_and_memory_are_reported(tmp_path: Path) -> None:
    code, findings, _ = dynamic("--select", "AGD", "--timeout", "10", "--memory-limit", "3000",
                                "--jobs", "2", "--device", "cpu", str(DYNAMIC / "isolation"))
    reasons = {Path(f["path"]).stem: f["message"] for f in findings}
    assert all(f["code"] == "AGD900" for f in findings) and code == 1
    assert "timed out after 10 s" in reasons["hangs"]
    assert "killed by SIGSEGV" in reasons["crashes"]
    assert "called sys.exit(3)" in reasons["exits"]
    assert "exited with status 4" in reasons["hard_exits"]
    assert "No module named 'a_module_that_does_not_exist'" in reasons["import_error"]
    assert "ran out of memory" in reasons["eats_memory"]
    assert "healthy" not in reasons  # the run went on and checked it


def test_nothing_runs_without_dynamic(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    (tmp_path / "ops.py").write_text(textwrap.dedent(f'''\
        import pathlib
        import torch
        pathlib.Path({str(marker)!r}).write_text("imported")


        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2
        '''))
    plain = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                            "--no-cache", "ops.py"], cwd=tmp_path, capture_output=True)
    assert plain.returncode == 0 and not marker.exists()
    code, findings, _ = dynamic("ops.py", cwd=tmp_path)
    assert code == 0 and findings == [] and marker.exists()


# -- inputs -----------------------------------------------------------------------------
RESHAPER = textwrap.dedent('''\
    import torch
    {imports}

    {decorator}
    class RowSums(torch.autograd.Function):
        @staticmethod
        def forward(ctx, flat, rows):
            ctx.shape = flat.shape
            return flat.reshape(rows, -1).sum(dim=1)

        @staticmethod
        def backward(ctx, grad):
            return grad.repeat_interleave(ctx.shape[0] // grad.shape[0]), None
    {extra}
    ''')


def test_undeclared_inputs_that_cannot_be_synthesized_are_agd900(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(RESHAPER.format(imports="", decorator="", extra=""))
    _, findings, _ = dynamic("ops.py", cwd=tmp_path)
    [finding] = findings
    assert finding["code"] == "AGD900" and "could not build inputs" in finding["message"]
    assert "@example_inputs" in finding["message"]


@pytest.mark.parametrize("style", ["decorator", "staticmethod"])
def test_declared_inputs_are_used(tmp_path: Path, style: str) -> None:
    if style == "decorator":
        source = RESHAPER.format(
            imports="from autograd_lint.dynamic import example_inputs\n",
            decorator="@example_inputs(lambda: (torch.rand(6), 3))", extra="")
    else:
        source = RESHAPER.format(imports="", decorator="", extra=textwrap.indent(
            "\n@staticmethod\ndef gradcheck_inputs():\n    return [(torch.rand(6), 2)]\n",
            "    "))
    (tmp_path / "ops.py").write_text(source)
    code, findings, _ = dynamic("ops.py", cwd=tmp_path)
    assert code == 0 and findings == []
    # A wrong backward is now caught, with the declared inputs.
    (tmp_path / "ops.py").write_text(source.replace("return grad.repeat_interleave",
                                                    "return 2 * grad.repeat_interleave"))
    _, findings, _ = dynamic("ops.py", cwd=tmp_path)
    assert [f["code"] for f in findings] == ["AGD001"]
    assert "declared inputs" in findings[0]["message"]


def test_synthesis_uses_names_defaults_and_index_tensors(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Gather(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, indices, dim, eps=1e-3):
                ctx.save_for_backward(indices)
                ctx.dim = dim
                return x.index_select(dim, indices) * (1 + eps)

            @staticmethod
            def backward(ctx, grad):
                (indices,) = ctx.saved_tensors
                out = torch.zeros_like(grad).index_add_(ctx.dim, indices, grad)
                return out * (1 + 1e-3), None, None, None
        '''))
    code, findings, _ = dynamic("ops.py", cwd=tmp_path)
    assert code == 0 and findings == []


# -- confirmation of static findings ----------------------------------------------------
def test_static_findings_are_confirmed_or_not(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Leaky(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.x = x
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                if grad.dim() > 6:  # never on the checked inputs
                    grad.mul_(2)
                return grad * 2
        '''))
    _, findings, _ = dynamic("ops.py", *PEDANTIC, cwd=tmp_path)
    confirmed = {f["code"]: f["confirmed"] for f in findings}
    # AGF006's branch never runs on the checked inputs: the probe cannot say
    # (test_dynamic_verdicts.py has a false one).
    assert confirmed == {"AGF001": True, "AGD006": None, "AGF006": None}


# -- precision, honest verdicts, flags ------------------------------------------------------
PRECISION = {
    "Float32Wave": set(), "Float32WaveWrong": {"AGD001"},
    "OnlyFloat32": set(), "OnlyFloat32Wrong": {"AGD001"},
    "OnlyBFloat16": {"AGD900"}, "OnlyBFloat16WithReference": set(),
    "OnlyBFloat16WrongDeclared": {"AGD001"}, "BuggyWhenFused": {"AGD001"},
    "LegacyScale": {"AGD003"}, "ReadsUnsetCtxAttribute": {"AGD003"}, "NoBackward": {"AGD900"},
    "BrokenBackwardDeclared": {"AGD003"}, "LossWithTarget": set(),
}


@pytest.fixture(scope="module")
def precision_cases() -> tuple[dict[str, set[str]], dict[str, str]]:
    _, findings, _ = dynamic("--select", "AGD", str(DYNAMIC / "precision_cases.py"))
    return by_function(findings), {f["function"]: f["message"] for f in findings}


@pytest.mark.parametrize("name", sorted(PRECISION))
def test_each_precision_and_verdict_case(name: str, precision_cases) -> None:
    reported, _ = precision_cases
    assert reported.get(name, set()) == PRECISION[name]


def test_float32_kernels_are_checked_in_float32_and_the_message_says_so(
        precision_cases) -> None:
    """A float64 gradcheck fails on the correct Float32Wave (its float32
    rounding): the dynamic mode checks it in float32 instead, and still catches
    the wrong one, naming the precision."""
    from torch.autograd.gradcheck import GradcheckError

    sys.path.insert(0, str(DYNAMIC))
    try:
        import precision_cases as cases
    finally:
        sys.path.pop(0)
    x = (torch.rand(3, 4, dtype=torch.float64) + 0.5).requires_grad_()
    with pytest.raises(GradcheckError):
        torch.autograd.gradcheck(cases.Float32Wave.apply, (x,))
    _, messages = precision_cases
    assert "in float32 (computes in float32 on float64 inputs" in messages["Float32WaveWrong"]
    assert "in float32 (it does not run in float64)" in messages["OnlyFloat32Wrong"]
    assert "x=float32[" in messages["OnlyFloat32Wrong"]
    assert "in bfloat16, against the declared reference" in \
        messages["OnlyBFloat16WrongDeclared"]
    assert "computes only in bfloat16" in messages["OnlyBFloat16"] and \
        "`reference` staticmethod" in messages["OnlyBFloat16"]


def test_honest_verdicts_name_their_cause(precision_cases) -> None:
    _, messages = precision_cases
    assert "(with `use_fused=True`)" in messages["BuggyWhenFused"]
    assert "Legacy autograd function with non-static forward method" in messages["LegacyScale"]
    assert "no attribute 'factor'" in messages["ReadsUnsetCtxAttribute"]
    assert "neither backward nor vjp" in messages["NoBackward"]
    assert "backward raised on valid inputs: AttributeError" in \
        messages["BrokenBackwardDeclared"]
    assert "declare" not in messages["BrokenBackwardDeclared"]


def test_a_none_gradient_by_design_leaves_the_other_inputs_checked(agd_cases) -> None:
    """ForgetsWeight: x is still gradchecked (no AGD001) and the dropped
    weight gradient is AGD015; UnusedTable's table does not move the output."""
    reported, findings = agd_cases
    message = next(f["message"] for f in findings if f["function"] == "ForgetsWeight")
    assert "input 1 (`weight`)" in message and "silently zero" in message


def test_triton_kernels_run_on_the_cpu_through_the_interpreter() -> None:
    """Nothing set by hand: the worker runs Triton's interpreter on a CPU, with
    float scalar arguments and libdevice functions as compiled Triton has them."""
    pytest.importorskip("triton")
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu",
                             str(DYNAMIC / "triton_kernels.py"))
    codes = by_function(findings)
    assert codes == {"TritonTripleWrong": {"AGD001"}, "TritonTripleTwice": {"AGD002"}}
    message = next(f["message"] for f in findings if f["code"] == "AGD001")
    assert "in float32 (computes in float32 on float64 inputs" in message


def test_the_triton_interpreter_can_be_turned_off() -> None:
    pytest.importorskip("triton")
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu", "--no-triton-interpreter",
                             str(DYNAMIC / "triton_kernels.py"))
    assert {f["code"] for f in findings} == {"AGD900"}


# -- identity: files and classes that share a name ----------------------------------------
SCALE = """\
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * {factor}
"""


def test_same_named_modules_are_each_checked_from_their_own_file(tmp_path: Path) -> None:
    for project, factor in (("a", 3), ("b", 2)):  # a's gradient is wrong, b's right
        (tmp_path / project).mkdir()
        (tmp_path / project / "ops.py").write_text(SCALE.format(factor=factor))
    _, findings, _ = dynamic(".", "--ignore", "AGF301", *PEDANTIC, cwd=tmp_path)
    codes = {(f["path"], f["code"]) for f in findings}
    assert ("a/ops.py", "AGD001") in codes and ("b/ops.py", "AGD001") not in codes
    assert {f["path"] for f in findings if f["code"] == "AGF001"} == {"a/ops.py", "b/ops.py"}


def test_a_class_whose_name_is_bound_again_is_not_checked_in_its_place(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(SCALE.format(factor=3) + textwrap.dedent("""\


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                if grad.dim() > 6:  # never on the checked inputs
                    grad.mul_(2)
                return grad * 2
        """))
    _, findings, _ = dynamic("ops.py", *PEDANTIC, cwd=tmp_path)
    by_code = {f["code"]: f for f in findings}
    assert by_code["AGD900"]["line"] == 4 and "bound again at line 15" in \
        by_code["AGD900"]["message"]
    assert "AGD001" not in by_code  # the second Scale is right; the first was not run
    # The first class's AGF001 was not checked; the second's AGF006 was, but its
    # branch never ran on the checked inputs: neither can be said either way.
    assert by_code["AGF001"]["line"] == 7 and by_code["AGF001"]["confirmed"] is None
    assert by_code["AGF006"]["line"] == 23 and by_code["AGF006"]["confirmed"] is None


def test_a_module_named_like_the_standard_library_is_loaded_from_its_file(
        tmp_path: Path) -> None:
    (tmp_path / "types.py").write_text(SCALE.format(factor=3))
    _, findings, _ = dynamic("--select", "AGD", "types.py", cwd=tmp_path)
    assert sorted(f["code"] for f in findings) == ["AGD001", "AGD006"], findings


# -- devices -----------------------------------------------------------------------------
def test_device_choice(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        code, findings, _ = dynamic("--device", "cuda", "--select", "AGD",
                                    str(DYNAMIC / "isolation" / "healthy.py"))
        assert code == 0 and findings == []
    else:  # one error line for the run, exit 2 (test_dynamic_containment.py)
        proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                               "--no-cache", "--dynamic", "--device", "cuda",
                               str(DYNAMIC / "isolation" / "healthy.py")],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2 and "no CUDA device" in proc.stderr, proc.stderr
    code, findings, _ = dynamic("--device", "cpu", "--select", "AGD",
                                str(DYNAMIC / "isolation" / "healthy.py"))
    assert code == 0 and findings == []


@pytest.mark.parametrize("flag, value", [("--timeout", "0"), ("--timeout", "soon"),
                                         ("--memory-limit", "-1"), ("--device", "tpu")])
def test_bad_dynamic_options_are_one_line_errors(flag: str, value: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--dynamic", flag,
                           value, "."], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in \
        proc.stderr


def test_progress_line_rewrites_itself() -> None:
    stream = io.StringIO()
    progress = _Progress(2, stream)
    progress.step("a.py")
    progress.step("b.py")
    progress.done()
    assert stream.getvalue() == "\r\x1b[2K[1/2] a.py\r\x1b[2K[2/2] b.py\r\x1b[2K"
    silent = _Progress(2, None)
    silent.step("a.py")  # no stream: nothing to write to, nothing raised


# -- PyTorch's reference Functions ----------------------------------------------------
# Functions of torch.testing._internal.autograd_function_db whose gradients are
# wrong by construction: that module feeds torch.func consistency tests (vmap,
# jvp against vjp), which never compare with finite differences.
KNOWN_WRONG_IN_TORCH_DB = {
    # backward returns `grad_output * dinput + 6 * dinput`: ignores the second
    # output's gradient and adds a constant.
    "CubeGenVmap": {"AGD001"},
    # backward returns 3 * x**2 without multiplying by the incoming gradient.
    "NumpyCubeNotComposable": {"AGD001"},
    # The next three return their input unchanged: an identity forward whose
    # backward differs from the derivative is a deliberate custom gradient
    # (RULES.md), not compared with finite differences; their tangents still are.
    # forward returns x unsorted (only the indices are sorted) but backward and
    # jvp permute the gradient as if it were sorted.
    "NumpySort": {"AGD008"},
    # "scale = 3.14": gradient and tangent deliberately scaled.
    "ScaleGradGenVmap": {"AGD008"},
    # "Intentionally too-large gradient": zeros for an identity.
    "ZeroGradientsGenVmap": {"AGD008"},
}


def test_torch_reference_functions_raise_no_false_alarm() -> None:
    pytest.importorskip("expecttest")  # the db module imports it
    import torch.testing._internal.autograd_function_db as db

    _, findings, _ = dynamic("--select", "AGD", db.__file__)
    reported = by_function(findings)
    assert reported == KNOWN_WRONG_IN_TORCH_DB
    # Every Function of the module was checked: none is AGD900.
    assert len({f.__name__ for f in vars(db).values() if isinstance(f, type) and
                issubclass(f, torch.autograd.Function) and f.__module__ == db.__name__}) == 15


# -- pytest plugin ---------------------------------------------------------------------
def test_pytest_plugin_collects_one_item_per_function(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text((DYNAMIC / "agd_cases.py").read_text())
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-n", "2", "--autograd-gradcheck", "ops.py", "-k",
                           "Clean or WrongGradient or BiasOptional"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "1 failed" in proc.stdout
    assert "FAILED ops.py::gradcheck[WrongGradient]" in proc.stdout
    assert "AGD001 [gradcheck-failed]" in proc.stdout


def test_pytest_plugin_names_two_classes_of_one_name_apart(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(SCALE.format(factor=2) + "\n\n" +
                                     SCALE.format(factor=2).split("\n\n\n", 1)[1])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--collect-only", "-q", "--autograd-gradcheck", "ops.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    ids = [line for line in proc.stdout.splitlines() if "gradcheck[" in line]
    assert ids == ["ops.py::gradcheck[Scale@4]", "ops.py::gradcheck[Scale@15]"], proc.stdout


def test_pytest_plugin_paths_and_skips(tmp_path: Path) -> None:
    """`--autograd-gradcheck` is a flag: the path after it stays pytest's own
    argument, and `--autograd-gradcheck-path` chooses others. A Function that
    could not be checked is skipped with the reason, not failed."""
    (tmp_path / "cases.py").write_text((DYNAMIC / "precision_cases.py").read_text())
    (tmp_path / "test_nothing.py").write_text("def test_plain():\n    pass\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-rfs", "--autograd-gradcheck", "--autograd-gradcheck-path",
                           "cases.py", "test_nothing.py", "-k",
                           "plain or NoBackward or OnlyBFloat16] or Float32WaveWrong"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert "1 failed, 1 passed, 2 skipped" in proc.stdout, proc.stdout + proc.stderr
    assert "FAILED cases.py::gradcheck[Float32WaveWrong]" in proc.stdout
    assert "neither backward nor vjp" in proc.stdout and "computes only in bfloat16" in \
        proc.stdout


def test_guesses_never_become_findings() -> None:
    """Callables cannot be synthesized; an error inside backward with guessed
    inputs is "not checked", not AGD003; integer tensors on ctx are not AGD006;
    and a project `copy.py` beside the module does not break the worker."""
    _, findings, _ = dynamic("--select", "AGD", str(DYNAMIC / "shadowing"))
    message = {f["function"]: f["message"] for f in findings}
    assert {f["code"] for f in findings} == {"AGD900"}
    assert "`run_function` looks like a callable" in message["Recompute"]
    assert "with synthesized inputs" in message["NeedsProcessGroup"]
    assert "KeepsIndices" not in message


def test_declared_inputs_trust_errors_inside_backward(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(textwrap.dedent('''\
        import torch


        class Transposed(torch.autograd.Function):
            @staticmethod
            def gradcheck_inputs():
                return (torch.rand(3, 4), torch.rand(4, 5))

            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a @ b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad @ b, a.t() @ grad  # first one needs b.t()
        '''))
    _, findings, _ = dynamic("ops.py", cwd=tmp_path)
    [finding] = findings
    assert finding["code"] == "AGD003" and "mat1 and mat2 shapes cannot be multiplied" in \
        finding["message"]


def test_an_error_inside_backward_with_guessed_inputs_is_not_a_finding() -> None:
    """backward raises for the value synthesis guessed: AGD900 names where."""
    _, findings, _ = dynamic("--select", "AGD", str(DYNAMIC / "guess_sensitive.py"))
    assert [f["code"] for f in findings] == ["AGD900"]
    message = findings[0]["message"]
    assert "backward raised KeyError: 1 in backward (guess_sensitive.py:" in message
    assert "with synthesized inputs" in message and "--autograd-record" in message


def test_torch_legacy_cross_map_lrn_backward_disagrees_with_its_forward() -> None:
    """torch.nn's CrossMapLRN2d: its backward differs from the derivative of
    its forward by about 1e-4 whatever the finite-difference step (1e-4 to
    1e-7 give the same), and it keeps `scale` on ctx: both true findings.
    SyncBatchNorm needs a process group: not checked, and says why."""
    import torch.nn.modules._functions as legacy

    _, findings, _ = dynamic("--select", "AGD", legacy.__file__)
    codes = by_function(findings)
    assert codes["CrossMapLRN2d"] == {"AGD001", "AGD006"}
    assert codes["SyncBatchNorm"] == {"AGD900"}
    message = next(f["message"] for f in findings if f["code"] == "AGD001")
    assert "in float64" in message and "max abs error 0.000" in message


def test_the_clean_example_is_clean_dynamically_too() -> None:
    """examples/clean_reference.py says autograd-lint reports nothing there,
    `--dynamic` included (double backward too; an all-reduce with the
    default `group=None`), and its own gradchecks pass."""
    code, findings, err = dynamic("--device", "cpu", "examples/clean_reference.py")
    assert (code, findings) == (0, []), err[-2000:]
    proc = subprocess.run([sys.executable, "examples/clean_reference.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "gradcheck and gradgradcheck pass" in proc.stdout, \
        proc.stderr[-2000:]


def test_pytest_plugin_ids_are_relative_and_an_empty_folder_is_said(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ops.py").write_text(SCALE.format(factor=2))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_nothing.py").write_text("def test_plain():\n    pass\n")
    no_path = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                              "--collect-only", "-q", "--autograd-gradcheck"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
    ids = [line for line in no_path.stdout.splitlines() if "gradcheck[" in line]
    assert ids == ["pkg/ops.py::gradcheck[Scale]"], no_path.stdout
    only_tests = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                 "--collect-only", "-q", "--autograd-gradcheck", "tests"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "no custom autograd Function in tests" in only_tests.stdout, only_tests.stdout
