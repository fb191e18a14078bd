"""The guardian of one worker: whatever the checked code starts ends with it.

    python -m autograd_lint.dynamic.guardian LINTER_PID STATUS.json -- WORKER COMMAND...

The linter starts this process in a session of its own; it forks a *shield*,
which starts the worker and waits for it:

    linter -> guardian (subreaper) -> shield (the worker's parent) -> worker -> ...

- The guardian is a child subreaper (Linux, `PR_SET_CHILD_SUBREAPER`): a
  process the checked code forks, setsid daemons included, is re-parented to
  it when its own parent exits; once the shield has ended it kills every
  descendant it has left (read from /proc), and the shield's process group
  everywhere else.
- Each dies with its parent (`PR_SET_PDEATHSIG`, checked against the parent
  pid to close the race): the guardian with the linter (`kill -9`, the
  out-of-memory killer), by SIGTERM, which it handles by killing the tree;
  the shield with the guardian and the worker with the shield, by SIGKILL.
- The checked code's `os.getppid()` is the shield's pid: signals it sends
  there are ignored (the catchable ones) or end the shield alone (SIGKILL),
  which the guardian reports; the linter is out of reach of that call.

STATUS.json gets `{"worker": exit code}` from the shield, or
`{"shield": exit code}` from the guardian when the shield died before the
worker's end was known. Without prctl (not Linux) processes do not die
with their parent and orphans are not gathered: the shield's process group
is killed at the end, as far as the containment then goes. Nothing here
imports torch, or anything of the package beyond this module and libc's
prctl as the engine's workers load it (`engine_workers`, a module of the
standard library's imports only).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from ..engine.workers import libc_prctl

PARENT_VARIABLE = "AUTOGRAD_LINT_WORKER_PARENT"  # the shield's pid, for the worker

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PR_SET_CHILD_SUBREAPER = 36
_STOPS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
# What the checked code may send its parent (the shield) and change nothing.
_SHRUGGED = (*_STOPS, "SIGUSR1", "SIGUSR2", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGALRM")
_KILL_SECONDS = 10.0


def die_with_parent(parent: int, signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel for `signum` when the parent dies; False when it has
    died already (re-parented before the request: nothing would come)."""
    prctl = libc_prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    return os.getppid() == parent


def _become_subreaper() -> bool:
    prctl = libc_prctl()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _signals(names: tuple[str, ...]) -> list[signal.Signals]:
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


def _descendants(root: int) -> list[int] | None:
    """Every running descendant of `root` (None: no /proc to read them from)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:
            continue  # gone meanwhile
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def _reap() -> None:
    """Collect every child that has ended (orphans are ours to reap)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree(group: int | None, gathered: bool) -> None:
    """Kill every descendant of this process, again until none is left (a
    dying process's children come to us); without orphans gathered here
    (`gathered`: a subreaper) or a /proc to read, the shield's process group."""
    if group is not None and (not gathered or _descendants(os.getpid()) is None):
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass  # gone already
    deadline = time.monotonic() + _KILL_SECONDS
    while time.monotonic() < deadline:
        left = _descendants(os.getpid())
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        time.sleep(0.01)
    _reap()


def _write(path: str, data: dict[str, int]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def _shield(command: list[str], guardian: int, status_path: str) -> None:
    """The worker's parent: start it, wait, say how it ended. Never returns."""
    code = 1
    try:
        for signum in _signals(_SHRUGGED):
            # A handler, not SIG_IGN: the worker starts with the defaults.
            signal.signal(signum, lambda *_: None)
        if not die_with_parent(guardian):
            os._exit(1)
        os.setpgid(0, 0)  # the worker's group: killed whole at the end
        import subprocess

        worker = subprocess.Popen(command, env={**os.environ,
                                                PARENT_VARIABLE: str(os.getpid())})
        _write(status_path, {"worker": worker.wait()})
        code = 0
    finally:
        os._exit(code)


class _Stop(Exception):
    """The linter asks the guardian to end the check (or died)."""


class _Guardian:
    def __init__(self, command: list[str], status_path: str) -> None:
        self.command = command
        self.status_path = status_path
        self.gathers = False  # orphans re-parent to this process (a subreaper)
        self.stopping = False
        self.shield: int | None = None

    def on_stop(self, signum: int, frame: object) -> None:
        if not self.stopping:  # raised once: the clean-up is never interrupted
            self.stopping = True
            raise _Stop(signum)

    def run(self) -> int:
        code = 128 + signal.SIGTERM
        try:
            code = self._supervise()
            self.stopping = True  # from here on, a stop changes nothing
        except _Stop:
            pass
        kill_tree(self.shield, self.gathers)
        if code != 0 and not os.path.exists(self.status_path):
            _write(self.status_path, {"shield": code})
        return 0 if code == 0 else 1

    def _supervise(self) -> int:
        """Fork the shield and wait for it, reaping orphans meanwhile; its
        exit code (negative: the signal that ended it)."""
        guardian = os.getpid()
        pid = os.fork()
        if pid == 0:
            _shield(self.command, guardian, self.status_path)
        self.shield = pid
        while True:
            try:
                ended, status = os.waitpid(-1, os.WUNTRACED)
            except ChildProcessError:
                return 1
            if ended != pid:
                continue  # an orphan of the checked code, reaped
            if os.WIFSTOPPED(status):
                os.kill(pid, signal.SIGCONT)  # the checked code stopped its parent
                continue
            return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: guardian LINTER_PID STATUS.json -- COMMAND...\n")
        return 2
    linter, status_path, _, *command = argv
    guardian = _Guardian(command, status_path)
    for signum in _signals(_STOPS):
        signal.signal(signum, guardian.on_stop)
    # SIGTERM, not SIGKILL: the guardian clears the tree before it goes.
    if not die_with_parent(int(linter), signal.SIGTERM):
        return 1
    guardian.gathers = _become_subreaper()
    return guardian.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
