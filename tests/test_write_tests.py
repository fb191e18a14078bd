"""`coverage --write-tests` (dynamic/written_tests.py): the pytest file it
writes passes on correct Functions and ops (float64, a float32 Triton
kernel, bfloat16 against a reference, recorded inputs), fails on the same
code with a planted wrong backward, and skips, saying why, what it could
not build inputs for."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from autograd_lint.core.registry import DYNAMIC_CODES
from autograd_lint.dynamic.written_tests import WrittenTests, write_tests
from autograd_lint.engine.lint import SourceInput, lint_inputs

from .helpers import FIXTURES

torch = pytest.importorskip("torch")

FIXTURE = FIXTURES / "dynamic" / "write_tests"
HAS_TRITON = importlib.util.find_spec("triton") is not None
# A wrong backward planted in each checked Function and op (the written
# tests are not written again: the same tests, the code changed).
PLANTED = {
    "functions.py": [("return grad * 2.0", "return grad * 3.0"),  # Double
                     ("grad * x * ctx.alpha", "grad * weight * ctx.alpha"),  # Blend
                     ("return grad * 3\n", "return grad * 2\n"),  # HalfTriple
                     ("grad * 3.0 * x ** 2", "grad * 2.0 * x ** 2")],  # write_tests::cube
    "triton_scale.py": [("return _scale(grad, 3.0)", "return _scale(grad, 2.0)")],
}
CHECKED = ["test_Double", "test_Blend", "test_HalfTriple", "test_op_write_tests_cube"] + \
    (["test_TritonTriple"] if HAS_TRITON else [])
# Blend as the project's tests call it (recording.py's format).
RECORDING = {"tool": "autograd-lint", "format": 1, "functions": {"functions:Blend": [
    {"file": "functions.py", "line": 19, "calls": [{"args": [
        {"tensor": {"shape": [5, 6], "dtype": "float64", "device": "cpu",
                    "requires_grad": True, "range": [-2.0, 2.0]}},
        {"tensor": {"shape": [5, 6], "dtype": "float64", "device": "cpu",
                    "requires_grad": True, "range": [0.5, 3.0]}},
        {"value": 0.5}]}]}]}}


def targets_in(*paths: Path) -> list:
    result = lint_inputs([SourceInput(str(p), p.name, DYNAMIC_CODES, explicit=True)
                          for p in paths], functions=True)
    return sorted(result.functions, key=lambda t: (t.display, t.line))


def run_tests(root: Path) -> tuple[dict[str, str], str]:
    """pytest on the written file: each test's outcome, and the output."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-rs", "-p", "no:cacheprovider",
                           "tests/test_gradients.py"], cwd=root, capture_output=True, text=True,
                          timeout=300, env={**_environment(), "PYTHONDONTWRITEBYTECODE": "1"})
    outcomes = dict(re.findall(r"::(test_\w+) (PASSED|FAILED|SKIPPED|ERROR)", proc.stdout))
    return outcomes, proc.stdout + proc.stderr


def _environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, WrittenTests, str]:
    root = tmp_path_factory.mktemp("project")
    (root / "src").mkdir()
    for name in PLANTED:
        if name != "triton_scale.py" or HAS_TRITON:
            shutil.copy(FIXTURE / name, root / "src" / name)
    destination = root / "tests" / "test_gradients.py"
    result = write_tests(targets_in(*sorted((root / "src").glob("*.py"))), str(destination),
                         recording=RECORDING, jobs=2)
    return root, result, destination.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def correct_run(written: tuple[Path, WrittenTests, str]) -> tuple[dict[str, str], str]:
    return run_tests(written[0])


def test_each_written_test_passes_on_the_correct_code(correct_run) -> None:
    outcomes, output = correct_run
    assert {name: outcomes.get(name) for name in CHECKED} == dict.fromkeys(CHECKED, "PASSED"), \
        output


def test_each_written_test_fails_on_a_planted_wrong_backward(
        written: tuple[Path, WrittenTests, str], tmp_path: Path) -> None:
    project = tmp_path / "planted"
    shutil.copytree(written[0], project)
    for name, changes in PLANTED.items():
        path = project / "src" / name
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for before, after in changes:
            assert text.count(before) == 1, (name, before)
            text = text.replace(before, after)
        path.write_text(text, encoding="utf-8")
    outcomes, output = run_tests(project)
    assert {name: outcomes.get(name) for name in CHECKED} == dict.fromkeys(CHECKED, "FAILED"), \
        output
    assert "Jacobian mismatch" in output and "differs from the reference's" in output


def test_a_function_without_inputs_gets_a_skipped_test_that_says_why(
        written: tuple[Path, WrittenTests, str], correct_run) -> None:
    _, result, text = written
    outcomes, output = correct_run
    assert outcomes["test_WithCallback"] == "SKIPPED"
    assert "autograd-lint could not build inputs for WithCallback: cannot synthesize " \
           "inputs: `fn` looks like a callable" in " ".join(output.split())
    assert list(result.reasons) == ["WithCallback"]
    assert "`fn` looks like a callable" in result.reasons["WithCallback"]
    assert (result.written, result.skipped) == (len(CHECKED), 1)


def test_the_written_file_builds_inputs_with_plain_torch(
        written: tuple[Path, WrittenTests, str]) -> None:
    root, result, text = written
    assert result.path == str(root / "tests" / "test_gradients.py")
    assert 'for _root in ("../src",):' in text  # relative to the test file
    assert "from functions import Double" in text
    # Recorded calls first: Blend's shapes, value ranges and number as recorded.
    blend = text[text.index("def test_Blend"):text.index("def test_WithCallback")]
    assert "recorded inputs" in blend
    assert re.search(r"_floats\(\(5, 6\), -[12]\.\d+, [12]\.\d+, seed=0\),  # x", blend)
    assert "0.5,  # alpha" in blend
    assert "_gradcheck(Blend.apply, inputs, eps=1e-06, atol=1e-05" in blend
    # bfloat16 only: against the declared reference, in float64.
    half = text[text.index("def test_HalfTriple"):text.index("def test_op_write_tests_cube")]
    assert "outputs = _floating(HalfTriple.apply(*inputs), requiring_grad=True)" in half
    assert "expected = _floating(HalfTriple.reference(*wide))" in half
    assert '_assert_near(got, want, 0.03, "gradient")' in half
    # An op: its gradients, then opcheck.
    assert "_gradcheck(torch.ops.write_tests.cube.default, inputs" in text
    assert "torch.library.opcheck(torch.ops.write_tests.cube.default, inputs)" in text
    if HAS_TRITON:  # float32 kernel: float32's step and tolerances
        triton = text[text.index("def test_TritonTriple"):]
        assert "eps=0.001" in triton and "rtol=0.01" in triton
        assert 'os.environ.setdefault("TRITON_INTERPRET", "1")' in text
    compile(text, "test_gradients.py", "exec")


def test_the_written_tests_count_as_gradient_checks(
        written: tuple[Path, WrittenTests, str]) -> None:
    """AGF301's search (and the coverage report) sees each written test as
    its Function's check: only the skipped one is still unchecked."""
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                           "--no-cache", "--select", "AGF301", "--format", "json",
                           str(written[0])], capture_output=True, text=True, timeout=120)
    assert {f["function"] for f in json.loads(proc.stdout)} == {"WithCallback"}, proc.stderr


def test_a_module_that_does_not_import_gets_a_skipped_test(tmp_path: Path) -> None:
    module = tmp_path / "broken.py"
    module.write_text((FIXTURE / "functions.py").read_text(encoding="utf-8").split(
        "class Blend")[0] + "\nraise RuntimeError('needs a GPU')\n", encoding="utf-8")
    destination = tmp_path / "test_broken.py"
    targets = targets_in(module)
    static = replace(targets[0], qualname="NoBackward", line=1,
                     skip_reason="it defines neither backward nor vjp (AGF106)")
    result = write_tests([*targets, static], str(destination), recording=None)
    assert result.written == 0 and result.skipped == 2
    assert result.reasons == {
        "Double": "importing the module raised RuntimeError: needs a GPU (at broken.py:18)",
        "NoBackward": "it defines neither backward nor vjp (AGF106)"}
    text = destination.read_text(encoding="utf-8")
    assert "'autograd-lint could not build inputs for Double: importing the module " in text
    assert "'autograd-lint wrote no gradient test for NoBackward: it defines neither " in text
    compile(text, "test_broken.py", "exec")
