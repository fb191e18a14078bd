"""A run stopped by SIGTERM or SIGKILL leaves no worker process behind.

`timeout`, CI cancellation and the out-of-memory killer stop a run at any
moment, often while its workers scan or analyse the tree. SIGTERM: the run
stops its workers and dies by the signal. SIGKILL cannot be caught: the
workers notice that their parent died and exit by themselves. Each test runs
the command on the installed torch tree (large enough for worker processes),
waits until the run has started its k-th worker (the first for the byte
scan, later ones for the relevance judgement and the analysis), stops the
run's parent process alone and looks for the workers it had.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import leaky_function, torch_source_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or
                                not os.path.isdir("/proc/self"),
                                reason="reads the process table from /proc (Linux)")

# Seconds: to wait for the workers to appear, and for them to go.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
_Worker = tuple[int, int]  # (pid, start time): a pid may be reused


def _stat(pid: int) -> tuple[str, int, int] | None:
    """A process's state, parent pid and start time; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the name may hold spaces
    return fields[0], int(fields[1]), int(fields[19])


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        found: list[int] = []
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        return found
    except FileNotFoundError:  # a kernel without the children files: scan all
        pass
    except OSError:
        return []
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[1] == pid:
                children.append(int(entry))
    return children


def _descendants(pid: int) -> set[_Worker]:
    found: set[_Worker] = set()
    pending = _children(pid)
    while pending:
        child = pending.pop()
        stat = _stat(child)
        if stat is not None:
            found.add((child, stat[2]))
            pending += _children(child)
    return found


def _alive(worker: _Worker) -> bool:
    """Whether the process still runs (a zombie waits only to be reaped)."""
    stat = _stat(worker[0])
    return stat is not None and stat[2] == worker[1] and stat[0] not in ("Z", "X")


def _kill(worker: _Worker) -> None:
    if _alive(worker):
        try:
            os.kill(worker[0], signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture(scope="module")
def tree() -> Path:
    root = torch_source_tree()
    if root is None:
        pytest.skip("needs the torch package's sources")
    return root


# The command with no prctl to be had: the workers poll for a new parent.
POLLING = """\
import sys
from autograd_lint import cli
from autograd_lint.engine import lint as engine
engine._load_prctl = lambda: None
sys.exit(cli.main(sys.argv[1:]))
"""


def _stop_at_worker(tree: Path, k: int, signum: int, errors: Path, polling: bool = False
                    ) -> tuple[subprocess.Popen[bytes], set[_Worker]]:
    """Run a check of the tree (its stderr to `errors`: workers left behind
    would hold a pipe open), send `signum` to its parent process once its
    k-th worker exists; the run and every worker it had until then."""
    start = ["-c", POLLING] if polling else ["-m", "autograd_lint"]
    with open(errors, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, *start, "check", str(tree), "--no-cache", "--jobs", "2"],
            stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    seen: set[_Worker] = set()
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while len(seen) < k:
            if process.poll() is not None:
                pytest.fail(f"the run ended (status {process.returncode}) after "
                            f"{len(seen)} workers, before worker {k}:\n"
                            f"{errors.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {k}th worker within {START_TIMEOUT} s")
            seen |= _descendants(process.pid)
            time.sleep(0.002)
        os.kill(process.pid, signum)
        # The workers that started between the last look and the signal.
        seen |= _descendants(process.pid)
    except BaseException:
        _clean_up(process, seen)
        raise
    return process, seen


def _clean_up(process: subprocess.Popen[bytes], workers: set[_Worker]) -> None:
    """Leave nothing behind, whatever the test found."""
    for worker in workers:
        _kill(worker)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait()


def _left_behind(workers: set[_Worker]) -> set[_Worker]:
    """The workers still running once they had a few seconds to go."""
    deadline = time.monotonic() + STOP_TIMEOUT
    while (alive := {w for w in workers if _alive(w)}) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


# The 1st worker scans bytes; with two jobs, the 3rd judges relevance and the
# 5th analyses a part of the tree.
WORKERS = pytest.mark.parametrize("k", [1, 3, 5], ids=["scan", "relevance", "analysis"])


@WORKERS
def test_sigterm_stops_the_workers(tree: Path, k: int, tmp_path: Path) -> None:
    errors = tmp_path / "stderr"
    process, workers = _stop_at_worker(tree, k, signal.SIGTERM, errors)
    try:
        try:
            status = process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail("the run did not stop on SIGTERM")
        assert _left_behind(workers) == set()
        assert status == -signal.SIGTERM  # it died by the signal
        assert errors.read_text().endswith("autograd-lint: terminated\n")
    finally:
        _clean_up(process, workers)


@WORKERS
@pytest.mark.parametrize("polling", [False, True], ids=["prctl", "polling"])
def test_sigkill_of_the_parent_stops_the_workers(tree: Path, k: int, polling: bool,
                                                 tmp_path: Path) -> None:
    process, workers = _stop_at_worker(tree, k, signal.SIGKILL, tmp_path / "stderr", polling)
    try:
        assert process.wait(timeout=STOP_TIMEOUT) == -signal.SIGKILL
        assert workers, "no worker seen"
        assert _left_behind(workers) == set()
    finally:
        _clean_up(process, workers)


# SIGTERM arrives while the cache is being written: the command unwinds (the
# half-written temporary file is removed) and still dies by the signal.
TERMINATED_WHILE_WRITING = """\
import os
import signal
import sys

from autograd_lint import cli

replace = os.replace


def terminated_first(source, destination):
    if str(source).endswith(".tmp"):
        os.kill(os.getpid(), signal.SIGTERM)
    return replace(source, destination)


os.replace = terminated_first
sys.argv = ["autograd-lint", "check", sys.argv[1], "--cache-dir", sys.argv[2]]
cli.run()
"""


def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ops.py").write_text("import torch\n\n\n" + leaky_function())
    cache = tmp_path / "cache"
    run = subprocess.run([sys.executable, "-c", TERMINATED_WHILE_WRITING,
                          str(tmp_path / "src"), str(cache)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == -signal.SIGTERM, run.stderr
    assert run.stderr.endswith("autograd-lint: terminated\n")
    assert list(tmp_path.rglob("*.tmp")) == []


def test_nothing_is_said_after_terminated(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """SIGTERM inside a library's constructor leaves a half-built object that
    fails again when collected ("Exception ignored in ..."): after
    "autograd-lint: terminated" that is noise, and it is not printed."""
    import gc

    from autograd_lint.cli import entry as cli

    class HalfBuilt:
        def __del__(self) -> None:
            raise AttributeError("'Finalize' object has no attribute '_key'")

    def terminated(*args: object) -> int:
        raise cli.Terminated

    # Python's own hook (pytest's would turn the report into a warning).
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    monkeypatch.setattr(cli, "run_check", terminated)
    assert cli.main(["check", "--isolated", "--no-cache", "."]) == cli.EXIT_TERMINATED
    HalfBuilt()  # collected as the run unwinds: its __del__ raises
    gc.collect()
    assert capsys.readouterr().err == "autograd-lint: terminated\n"
