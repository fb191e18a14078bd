"""Verdicts the dynamic mode must get right on code it was not tuned on: the
precision a backward computes in, AGD004's input, `confirmed` when a probe
could not say, AGD012 only when the None is the cause, and what a run says
about its own scale."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import ROOT
from .test_dynamic import DYNAMIC, by_function, dynamic

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def upcast() -> tuple[dict[str, set[str]], dict[str, str]]:
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu",
                             str(DYNAMIC / "upcast_cases.py"))
    return by_function(findings), {f["function"]: f["message"] for f in findings}


UPCAST = {
    "UpcastBackwardNorm": set(), "UpcastNorm": set(), "UpcastNormDeclaredBFloat16": set(),
    "UpcastDetachedBackward": {"AGD002"}, "UpcastBackwardWrong": {"AGD001"},
    "Float32Only": set(),
}


@pytest.mark.parametrize("name", sorted(UPCAST))
def test_a_backward_that_upcasts_is_judged_in_float32(name: str, upcast) -> None:
    """A backward computing in float32 from float64 inputs (the usual bf16
    kernel's upcast) is not held to float64's second derivatives; a double
    backward that is truly wrong, or a gradient 10% off, still is."""
    reported, _ = upcast
    assert reported.get(name, set()) == UPCAST[name]


def test_the_precision_a_backward_computes_in_is_named(upcast) -> None:
    _, messages = upcast
    for name in ("UpcastDetachedBackward", "UpcastBackwardWrong"):
        assert "in float32 (backward computes in float32 on float64 inputs)" in messages[name]


def test_declared_narrow_inputs_keep_their_dtype(upcast, tmp_path: Path) -> None:
    """A kernel whose launcher refuses float64 (an interpreter gap reads as
    the machine's) is checked with the float32 its declared inputs have:
    clean when right, AGD001 in float32 when wrong."""
    reported, _ = upcast
    assert "Float32Only" not in reported
    source = (DYNAMIC / "upcast_cases.py").read_text()
    wrong = source.replace("return grad * weight, (grad * x).sum(0)",
                           "return grad * weight * 1.5, (grad * x).sum(0)")
    assert wrong != source
    (tmp_path / "ops.py").write_text(wrong)
    _, findings, _ = dynamic("--select", "AGD001", "--device", "cpu", "ops.py", cwd=tmp_path)
    message, = [f["message"] for f in findings if f["function"] == "Float32Only"]
    assert "in float32 (the declared inputs are float32)" in message


def test_agd004_names_the_input_autograd_means() -> None:
    """autograd's "invalid gradient at index 1" counts tensor inputs: with
    `dim` before `weight`, index 1 is `weight`; and a guessed input that is
    too large is corrected even behind a number."""
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu",
                             str(DYNAMIC / "index_cases.py"))
    reported = by_function(findings)
    assert reported == {"WrongWeightGradient": {"AGD004"}}
    message, = [f["message"] for f in findings]
    assert "input 2 (`weight`)" in message


def test_confirmed_is_null_where_the_probe_could_not_say() -> None:
    _, findings, _ = dynamic("--extend-select", "AGF001,AGF006", "--device", "cpu",
                             str(DYNAMIC / "confirm_cases.py"))
    confirmed = {(f["function"], f["code"]): f["confirmed"] for f in findings
                 if f["code"].startswith("AGF")}
    assert confirmed[("Leaky", "AGF001")] is True
    assert confirmed[("Leaky", "AGF006")] is None  # its branch never ran
    assert confirmed[("ScalesTheGradientInPlace", "AGF006")] is True
    assert confirmed[("BackwardRaisesFirst", "AGF006")] is None  # backward raised first
    assert confirmed[("ReleasedBeforeBackward", "AGF001")] is False  # ran, reached, saw none


def test_agd012_only_when_the_none_is_the_cause() -> None:
    _, findings, _ = dynamic("--select", "AGD", "--device", "cpu",
                             str(DYNAMIC / "optional_cause.py"))
    assert by_function(findings) == {"DecayScanStateRequired": {"AGD012"}}
    message, = [f["message"] for f in findings]
    assert "NoneType" in message


def test_a_large_run_says_how_to_spread_it(tmp_path: Path) -> None:
    """More Functions than the jobs check within the timeout: the run says
    how to spread them (pytest-xdist), and still runs them."""
    (tmp_path / "ops.py").write_text((DYNAMIC / "agd_cases.py").read_text())
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                           "--no-cache", "--dynamic", "--device", "cpu", "--jobs", "1",
                           "--timeout", "1801", "--select", "AGD001", "ops.py", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stderr
    assert "pytest --autograd-gradcheck -n auto" in proc.stderr
    assert "can take up to" in proc.stderr


def test_the_scale_note_counts_rounds_of_jobs() -> None:
    from autograd_lint.dynamic.runner import DynamicOptions, scale_note

    assert scale_note(30, DynamicOptions(timeout=60, jobs=1)) is None  # 30 minutes
    assert scale_note(31, DynamicOptions(timeout=60, jobs=1)) is not None
    assert scale_note(60, DynamicOptions(timeout=60, jobs=2)) is None
    assert "121 Functions on 4 jobs can take up to 31 minutes" in \
        scale_note(121, DynamicOptions(timeout=60, jobs=4))


def test_each_xdist_worker_takes_its_own_gpu() -> None:
    from autograd_lint.dynamic.worker import worker_gpu

    assert [worker_gpu(f"gw{n}", 4) for n in range(6)] == [0, 1, 2, 3, 0, 1]
    assert worker_gpu(None, 4) == 0 and worker_gpu("gw3", 1) == 0
    assert worker_gpu("master", 4) == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_one_usage_error_everywhere(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text((DYNAMIC / "agd_cases.py").read_text())
    plugin = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                             "--autograd-gradcheck", "--autograd-gradcheck-device", "cuda",
                             "ops.py"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert plugin.returncode == 4, plugin.stdout + plugin.stderr
    assert "--autograd-gradcheck-device cuda, but torch finds no CUDA device" in plugin.stderr
    assert "skipped" not in plugin.stdout
    coverage = subprocess.run([sys.executable, "-m", "autograd_lint", "coverage", "--isolated",
                               "ops.py", "--write-tests", "written_test.py", "--device",
                               "cuda"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600)
    assert coverage.returncode == 2 and coverage.stdout == ""  # before any report
    assert coverage.stderr.count("\n") == 1 and "no CUDA device" in coverage.stderr
    assert not (tmp_path / "written_test.py").exists()


def test_an_xdist_run_of_the_gradcheck_items_matches_a_serial_one(tmp_path: Path) -> None:
    """The way to check a large library on many cores: the same verdicts."""
    pytest.importorskip("xdist")
    (tmp_path / "ops.py").write_text((DYNAMIC / "upcast_cases.py").read_text())
    outcomes = []
    for extra in ([], ["-n", "2"]):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                               "-rA", "--autograd-gradcheck", "--autograd-gradcheck-device",
                               "cpu", "ops.py", *extra], cwd=tmp_path, capture_output=True,
                              text=True, timeout=900)
        outcomes.append(sorted(line.split(" ")[0] + " " + line.split("::")[-1].split(" ")[0]
                               for line in proc.stdout.splitlines()
                               if line.startswith(("PASSED", "FAILED", "SKIPPED"))))
    assert outcomes[0] == outcomes[1] and len(outcomes[0]) == len(UPCAST)
    assert "FAILED gradcheck[UpcastBackwardWrong]" in outcomes[0]
    assert "PASSED gradcheck[UpcastBackwardNorm]" in outcomes[0]


def test_the_readme_documents_xdist_for_large_libraries() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pytest --autograd-gradcheck src/ -n auto --autograd-gradcheck-device cuda" in readme
    assert "each worker takes its own" in readme


def test_a_shape_error_no_longer_stands_when_backward_took_another_guess(monkeypatch) -> None:
    """attorch's BatchNorm: a candidate with the right weight shape passes
    backward but leaves memory unwritten; one with a guessed-short weight
    fails backward's shape check. The short guess is not a finding (AGD004):
    the run says what kept it from a verdict."""
    from autograd_lint.dynamic import input_choice
    from autograd_lint.dynamic.errors import NotChecked
    from autograd_lint.dynamic.target import Target

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight):
            return x * weight

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    script = iter([
        (None, f"{input_choice.UNWRITTEN} (memory a kernel leaves unwritten?)"),
        ("fallback", "RuntimeError: ... invalid gradient at index 1 - got [4] but expected "
                     "shape compatible with [3]"),
    ])

    def accept(target, candidate, synthesis=None):
        accepted, error = next(script, (None, "ValueError: no more"))
        return (candidate if accepted else None), error

    monkeypatch.setattr(input_choice, "_accept", accept)
    target = Target(Scale, False, False, False, torch.device("cpu"))
    with pytest.raises(NotChecked, match="identical calls give different results"):
        input_choice.synthesize(target)
