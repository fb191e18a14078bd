"""Recorded calls: the format, the recorder, and recorded inputs end to end
(`autograd-lint record -- CMD`, `pytest --autograd-record`, `check --dynamic
--recorded FILE`, a committed recording read back)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograd_lint.dynamic.recording import (
    Recorder,
    calls_for,
    describe,
    merge_entry,
    read_recording,
    rebuild,
    signature,
)

from .helpers import FIXTURES

torch = pytest.importorskip("torch")

RECORDED = FIXTURES / "dynamic" / "recorded"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("AUTOGRAD_LINT_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-m", "autograd_lint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def dynamic_codes(path: str, *args: str, cwd: Path) -> tuple[dict[str, set[str]], list[dict]]:
    proc = cli("check", "--isolated", "--dynamic", "--select", "AGD", "--format", "json",
               *args, path, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    findings = json.loads(proc.stdout)
    codes: dict[str, set[str]] = {}
    for finding in findings:
        codes.setdefault(finding["function"], set()).add(finding["code"])
    return codes, findings


# -- the format ------------------------------------------------------------------------
def test_a_call_is_described_and_rebuilt_with_fresh_values() -> None:
    x = torch.randn(4, 6).t()  # non-contiguous
    rows = torch.tensor([0, 2, 3])
    spec = [describe(x.requires_grad_()), describe(rows), describe(2.5), describe(torch.float16),
            describe([torch.ones(2), torch.zeros(3)]), describe(object())]
    assert spec[0]["tensor"]["shape"] == [6, 4] and spec[0]["tensor"]["stride"] == [1, 6]
    assert spec[1]["tensor"]["values"] == [0, 2, 3] and "range" not in spec[1]["tensor"]
    assert spec[2] == {"value": 2.5} and spec[3] == {"dtype": "float16"}
    assert len(spec[4]["list"]) == 2 and spec[5] == {"opaque": "object"}
    args, frozen = rebuild({"args": spec[:5]}, torch.device("cpu"))
    rebuilt = args[0]
    assert rebuilt.shape == (6, 4) and rebuilt.stride() == (1, 6) and rebuilt.is_leaf
    assert rebuilt.dtype == torch.float64 and rebuilt.requires_grad
    low, high = spec[0]["tensor"]["range"]
    assert low <= float(rebuilt.detach().min()) and float(rebuilt.detach().max()) <= high
    assert not torch.equal(rebuilt.float(), x.detach())  # fresh values, not the recorded ones
    assert args[1].tolist() == [0, 2, 3] and args[2] == 2.5 and args[3] is torch.float16
    assert frozen == frozenset()
    with pytest.raises(ValueError):
        rebuild({"args": spec}, torch.device("cpu"))  # the opaque object


def test_a_recorded_process_group_is_rebuilt_as_a_one_process_group() -> None:
    import torch.distributed as dist

    from autograd_lint.dynamic.inputs import single_process_group

    spec = describe(single_process_group())
    assert spec == {"opaque": "ProcessGroup"}
    (group,), _ = rebuild({"args": [spec]}, torch.device("cpu"))
    assert dist.get_world_size(group) == 1


def test_a_tensor_the_caller_does_not_differentiate_stays_frozen() -> None:
    table = describe(torch.rand(3, 4))  # requires_grad False, as a cos/sin table
    args, frozen = rebuild({"args": [describe(torch.rand(3, 4).requires_grad_()), table]},
                           torch.device("cpu"))
    assert frozen == {1} and not args[1].requires_grad


def test_calls_with_the_same_signature_are_kept_once() -> None:
    first = [describe(torch.rand(3, 4)), describe(1)]
    again = [describe(torch.rand(3, 4) * 7), describe(1)]  # other values, same signature
    other = [describe(torch.rand(5, 4)), describe(1)]
    assert signature(first) == signature(again) != signature(other)
    stored: list[dict] = []
    merge_entry(stored, {"file": "a.py", "line": 3, "calls": [{"args": first}]})
    merge_entry(stored, {"file": "a.py", "line": 3, "calls": [{"args": again},
                                                              {"args": other}]})
    assert len(stored) == 1 and len(stored[0]["calls"]) == 2


def test_same_named_classes_get_their_own_calls() -> None:
    recording = {"functions": {"m:F": [{"line": 5, "calls": [{"args": [{"value": 1}]}]},
                                       {"line": 20, "calls": [{"args": [{"value": 2}]}]}]}}
    assert calls_for(recording, "m", "F", 3, 10) == [{"args": [{"value": 1}]}]
    assert calls_for(recording, "m", "F", 18, 30) == [{"args": [{"value": 2}]}]
    assert calls_for(recording, "m", "G", 1, 99) == []


def test_the_recorder_observes_apply_and_changes_nothing(tmp_path: Path) -> None:
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    recorder = Recorder(tmp_path / "calls.json")
    recorder.install()
    try:
        x = torch.rand(2, 3, requires_grad=True)
        assert torch.equal(Double.apply(x, 2), x * 2)
        Double.apply(torch.rand(5), 2)
        Double.apply(torch.rand(2, 3), 2)  # the first signature again, not requiring grad
    finally:
        recorder.uninstall()
    recorder.save()
    data = read_recording(tmp_path / "calls.json")
    (entry,) = data["functions"][f"{Double.__module__}:{Double.__qualname__}"]
    assert [c["args"][0]["tensor"]["shape"] for c in entry["calls"]] == [[2, 3], [5], [2, 3]]
    assert entry["calls"][0]["args"][1] == {"value": 2}
    assert torch.autograd.Function.apply.__func__ is not None  # uninstalled cleanly


def test_a_bad_recording_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{}")
    for name in ("bad.json", "missing.json"):
        proc = cli("check", "--dynamic", "--recorded", name, str(RECORDED / "mix.py"),
                   cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "autograd-lint: error:" in proc.stderr


# -- end to end ------------------------------------------------------------------------
TEST_FILE = textwrap.dedent('''\
    import torch

    from mix import PairwiseMix


    def test_mix():
        x = torch.randn(5, 6, requires_grad=True)
        mix = torch.randn(6, 6, requires_grad=True)
        rows = torch.tensor([0, 2, 4])
        PairwiseMix.apply(x, mix, rows).sum().backward()
    ''')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mix.py").write_text((RECORDED / "mix.py").read_text())
    (tmp_path / "test_mix.py").write_text(TEST_FILE)
    return tmp_path


def test_without_recorded_calls_synthesis_cannot_check_it(project: Path) -> None:
    codes, findings = dynamic_codes("mix.py", "--no-cache", cwd=project)
    assert codes == {"PairwiseMix": {"AGD900"}}
    assert "pytest --autograd-record" in findings[0]["message"]


def test_record_command_then_check(project: Path) -> None:
    proc = cli("record", "--output", "calls.json", "--", sys.executable, "-m", "pytest", "-q",
               "-p", "no:cacheprovider", "test_mix.py", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 new call recorded (1 calls of 1 Functions" in proc.stderr
    codes, findings = dynamic_codes("mix.py", "--recorded", "calls.json", cwd=project)
    assert codes == {"PairwiseMix": {"AGD001"}}
    message = findings[0]["message"]
    assert "input 1 (`mix`)" in message and "recorded inputs x=float64[5, 6]" in message


def test_pytest_option_records_into_the_cache_and_check_reads_it(project: Path) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("AUTOGRAD_LINT_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--autograd-record", "test_mix.py"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / ".autograd_lint_cache" / "recorded-calls.json").is_file()
    codes, _ = dynamic_codes("mix.py", cwd=project)  # no option: the default file
    assert codes == {"PairwiseMix": {"AGD001"}}


def test_record_passes_on_the_command_status(project: Path) -> None:
    (project / "test_fails.py").write_text("def test_no():\n    assert False\n")
    proc = cli("record", "--output", "calls.json", "--", sys.executable, "-m", "pytest", "-q",
               "-p", "no:cacheprovider", "test_fails.py", cwd=project)
    assert proc.returncode == 1
    # It wrote nothing: no file is named as if it held the calls.
    assert "calls.json" not in proc.stderr and "nothing recorded; the command exited with " \
        "status 1" in proc.stderr
    assert not (project / "calls.json").exists()
    assert cli("record", cwd=project).returncode == 2


def test_a_committed_recording_is_read_back() -> None:
    """A team commits recorded-calls.json: recorded on a GPU in float32, the
    call is rebuilt here (CPU, float64, the recorded row indices)."""
    codes, findings = dynamic_codes(str(RECORDED / "mix.py"), "--no-cache", "--recorded",
                                    str(RECORDED / "recorded-calls.json"), "--device", "cpu",
                                    cwd=RECORDED)
    assert codes == {"PairwiseMix": {"AGD001"}}
    assert "recorded inputs x=float64[5, 6], mix=float64[6, 6], rows=int64[3]" in \
        findings[0]["message"]
