"""The dynamic mode contains what it runs: processes the checked code starts
end with the check (plain forks and setsid daemons), workers die with the
linter (kill -9) and with Ctrl-C, the checked code cannot signal the linter
through its parent pid, running out of memory is "not checked", the checked
code runs in a scratch folder, `--device cuda` without CUDA is a usage error,
and the pytest plugin's items are counted as collected."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import FIXTURES, ROOT
from .test_adoption import interruptible

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or
                                not os.path.isdir("/proc/self"),
                                reason="reads the process table from /proc (Linux)")

HEALTHY = FIXTURES / "dynamic" / "isolation" / "healthy.py"
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
GONE_WITHIN = 30.0  # seconds: generous, the point is "not left running"

# A Function whose forward starts a plain child and a setsid daemon (once per
# process: the checks call forward many times), each noting its pid.
FORKS = '''\
import os
import time

import torch

PIDS = {pids!r}
_FORKED = set()


def _note(pid):
    handle = os.open(PIDS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(handle, f"{{pid}}\\n".encode())
    os.close(handle)


def _spawn(daemon):
    pid = os.fork()
    if pid == 0:
        try:
            if daemon:
                os.setsid()
                if os.fork() != 0:
                    os._exit(0)
            _note(os.getpid())
            time.sleep(600)
        finally:
            os._exit(0)
    if daemon:
        os.waitpid(pid, 0)


class Forks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if os.getpid() not in _FORKED:
            _FORKED.add(os.getpid())
            _spawn(daemon=False)
            _spawn(daemon=True)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''

# forward notes the worker's pid, then never returns.
SLEEPS = '''\
import os
import time

import torch


class Sleeps(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with open({pids!r}, "a") as handle:
            handle.write(f"{{os.getpid()}}\\n")
        time.sleep(600)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()
    except OSError:
        return None


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def _pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except (OSError, ValueError):
        return []


def _left_running(pids: list[int], within: float = GONE_WITHIN) -> list[int]:
    deadline = time.monotonic() + within
    while True:
        alive = [pid for pid in pids if _running(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        if _running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _lint(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """The linter, Ctrl-C-able whatever the test run's own SIGINT disposition
    (see test_adoption.interruptible)."""
    return subprocess.Popen([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                             "--no-cache", "--dynamic", "--select", "AGD", "--format", "json",
                             *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV, start_new_session=True,
                            preexec_fn=interruptible)


def _stop(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.communicate()


def _run(*args: str, cwd: Path, timeout: float = 600) -> tuple[int, list[dict], str]:
    process = _lint(*args, cwd=cwd)
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        _stop(process)
    assert process.returncode in (0, 1), (process.returncode, err[-3000:])
    return process.returncode, json.loads(out), err


@pytest.fixture
def pids_file(tmp_path: Path) -> Iterator[Path]:
    """Where the checked code notes the pids it starts; they are killed
    afterwards whatever the test found."""
    path = tmp_path / "pids.txt"
    try:
        yield path
    finally:
        _kill_all(_pids(path))


def _wait_for_pid(path: Path, process: subprocess.Popen[str], within: float = 300) -> int:
    deadline = time.monotonic() + within
    while not _pids(path):
        if process.poll() is not None:
            pytest.fail(f"the run ended first: {process.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail("forward never started")
        time.sleep(0.2)
    return _pids(path)[0]


# -- 1. what a check starts ends with it ---------------------------------------------
def test_forks_and_daemons_of_the_checked_code_end_with_the_run(tmp_path: Path,
                                                                 pids_file: Path) -> None:
    (tmp_path / "ops.py").write_text(FORKS.format(pids=str(pids_file)))
    _run("--device", "cpu", "ops.py", cwd=tmp_path)
    started = _pids(pids_file)
    assert len(started) >= 2  # a plain child and a daemon, at least
    assert _left_running(started) == []


def test_forks_of_an_item_of_the_pytest_plugin_end_with_it(tmp_path: Path,
                                                           pids_file: Path) -> None:
    (tmp_path / "ops.py").write_text(FORKS.format(pids=str(pids_file)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--autograd-gradcheck", "--autograd-gradcheck-device", "cpu",
                           "ops.py"], cwd=tmp_path, capture_output=True, text=True, env=ENV,
                          timeout=600)
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr
    started = _pids(pids_file)
    assert len(started) >= 2
    assert _left_running(started) == []


# -- 2. kill -9 of the linter --------------------------------------------------------
def test_workers_die_with_a_killed_linter(tmp_path: Path, pids_file: Path) -> None:
    (tmp_path / "ops.py").write_text(SLEEPS.format(pids=str(pids_file)))
    process = _lint("--device", "cpu", "--timeout", "900", "ops.py", cwd=tmp_path)
    try:
        worker = _wait_for_pid(pids_file, process)
        os.kill(process.pid, signal.SIGKILL)  # as the out-of-memory killer does
        process.wait()
        assert _left_running([worker]) == []
    finally:
        _stop(process)


# -- 3. Ctrl-C -----------------------------------------------------------------------
def test_ctrl_c_stops_the_workers_and_exits_130(tmp_path: Path, pids_file: Path) -> None:
    (tmp_path / "ops.py").write_text(SLEEPS.format(pids=str(pids_file)))
    process = _lint("--device", "cpu", "--timeout", "900", "ops.py", cwd=tmp_path)
    try:
        worker = _wait_for_pid(pids_file, process)
        os.kill(process.pid, signal.SIGINT)
        try:
            _, err = process.communicate(timeout=GONE_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {GONE_WITHIN:g} s after Ctrl-C")
        assert process.returncode == 130, err[-3000:]
        assert "interrupted" in err
        assert _left_running([worker]) == []
    finally:
        _stop(process)


# -- 4. the checked code signals its parent ------------------------------------------
KILLS_PARENT = '''\
import os
import signal

import torch


class KillsParent(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        os.kill(os.getppid(), signal.{signal})
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


@pytest.mark.parametrize("name", ["SIGKILL", "SIGTERM"])
def test_the_checked_code_cannot_kill_the_linter_through_its_parent(tmp_path: Path,
                                                                    name: str) -> None:
    """The linter survives and reports. On a CPU a Function's checks run in
    a fork of the worker, so its parent is the worker: killed, that is the
    Function's "not checked" (a probe's forked child signalling the worker
    is too)."""
    (tmp_path / "ops.py").write_text(KILLS_PARENT.format(signal=name))
    _, findings, _ = _run("--device", "cpu", "ops.py", cwd=tmp_path)
    assert {f["code"] for f in findings} <= {"AGD900"}, findings
    if name == "SIGKILL":  # the worker died: reported, the run went on
        assert len(findings) == 1 and "killed by SIGKILL" in findings[0]["message"]


# -- 5. out of memory is "not checked" -----------------------------------------------
OUT_OF_MEMORY = '''\
import torch


def _huge():
    torch.empty(2**62, dtype=torch.uint8)  # more than any address space holds


class HugeAllocation(torch.autograd.Function):
    @staticmethod
    def gradcheck_inputs():
        return (torch.randn(3),)

    @staticmethod
    def forward(ctx, x):
        _huge()
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class DeviceOutOfMemory(torch.autograd.Function):
    @staticmethod
    def gradcheck_inputs():
        return (torch.randn(3),)

    @staticmethod
    def forward(ctx, x):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 30.00 GiB")

    @staticmethod
    def backward(ctx, grad):
        return grad


class HugeOnGuessedInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        _huge()
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def test_torch_allocation_failures_are_not_checked_not_findings(tmp_path: Path) -> None:
    """As a MemoryError is: AGD900, whether the inputs are declared (forward
    raising on them would be AGD003) or synthesized."""
    (tmp_path / "ops.py").write_text(OUT_OF_MEMORY)
    _, findings, _ = _run("--device", "cpu", "ops.py", cwd=tmp_path)
    by_function = {f["function"]: f for f in findings}
    assert sorted(by_function) == ["DeviceOutOfMemory", "HugeAllocation",
                                   "HugeOnGuessedInputs"], findings
    for finding in findings:
        assert finding["code"] == "AGD900", finding
        assert "out of memory" in finding["message"], finding


# -- 6. a scratch working directory --------------------------------------------------
SCRATCH = '''\
import os

import torch

from helper import FACTOR  # the project's own modules still import


class Tidies(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with open({record!r}, "a") as handle:
            handle.write(os.getcwd() + "\\n")
        if os.path.exists("victim.txt"):
            os.remove("victim.txt")
        return x * FACTOR

    @staticmethod
    def backward(ctx, grad):
        return grad * FACTOR
'''


def test_the_checked_code_runs_in_a_scratch_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    record = tmp_path / "cwd.txt"
    (project / "helper.py").write_text("FACTOR = 2\n")
    (project / "victim.txt").write_text("keep me\n")
    (project / "ops.py").write_text(SCRATCH.format(record=str(record)))
    _, findings, _ = _run("--device", "cpu", "ops.py", cwd=project)
    assert findings == []  # imported (helper found) and checked
    assert (project / "victim.txt").read_text() == "keep me\n"
    folders = set(record.read_text().split())
    assert folders and str(project) not in folders
    assert not any(os.path.exists(folder) for folder in folders)  # removed afterwards


# -- 7. --device cuda without CUDA ---------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_device_cuda_without_cuda_is_one_error_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "autograd_lint", "check", "--isolated",
                           "--no-cache", "--dynamic", "--device", "cuda", str(HEALTHY)],
                          cwd=ROOT, capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "CUDA" in proc.stderr and proc.stdout == ""


# -- 8. the plugin's items are counted -----------------------------------------------
THREE = '''\
import torch


class {name}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def test_the_plugin_items_are_counted_as_collected(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text("\n\n".join(THREE.format(name=n)
                                                  for n in ("Alpha", "Beta", "Gamma")))

    def collect(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                               "--co", "--autograd-gradcheck", "ops.py", *args],
                              cwd=tmp_path, capture_output=True, text=True, env=ENV,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    assert "3 tests collected" in collect("-q")
    selected = collect("-k", "Beta")
    assert "collected 3 items / 2 deselected / 1 selected" in selected, selected
    assert "1/3 tests collected (2 deselected)" in selected, selected
