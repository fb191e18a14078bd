"""Worker lifetime: processes forked during a run stop with the run.

The fork hooks that arm each worker to die with the process that forked it
(prctl's PR_SET_PDEATHSIG on Linux, a thread polling for a new parent
elsewhere), the SIGTERM handler that kills a run's workers before the run dies
by the signal, and `forking()` for the signal handlers of the command. The
workers of engine_parts and of scan.py's and relevance.py's pools are
covered without those modules knowing it, and
nothing here knows what the workers do.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# Worker processes stop with their run. Workers are forked while a run is in
# progress (the analysis parts of engine_parts, the pools of `scan_all` and
# `dotted_references`); a worker forked then is armed to die
# with the process that forked it: on Linux the kernel kills it when that
# process dies (PR_SET_PDEATHSIG: a SIGKILL of the run cannot be caught),
# elsewhere a thread of the worker polls for a new parent. A run stopped by
# SIGTERM kills its workers itself, then dies by the signal.
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PARENT_POLL_SECONDS = 0.2


class _Workers:
    """What the fork hooks and the SIGTERM handler need (module state: a
    forked child has its own copy)."""

    runs = 0  # runs in progress in this process (a forked child inherits them)
    owner = 0  # the process whose run installed `_terminated`
    before: frozenset[int] = frozenset()  # the owner's children from before its run
    forking = 0  # the process that is forking (set just before the fork)
    from_main = True  # whether its main thread forks
    prctl: Any = None  # libc's prctl where there is one
    # What finds prctl, until the first fork of a run asks it (a run that
    # forks nothing, a warm one, loads no ctypes).
    load_prctl: Callable[[], Any] | None = None
    hooked = False  # the fork hooks are registered


@contextmanager
def _workers_stop_with_run(jobs: int | None,
                           load_prctl: Callable[[], Any] | None = None) -> Iterator[None]:
    """Within it, forked workers die with their parent and SIGTERM kills them
    before the run dies by it (when this is the main thread and SIGTERM has
    no handler); a run ending with an exception kills those still running.
    `load_prctl` finds libc's prctl (default `libc_prctl`): the first run
    that forks asks it, and without a prctl workers poll for their parent."""
    if jobs == 1 or not hasattr(os, "register_at_fork"):
        yield  # one process (or no fork: spawned workers are not armed)
        return
    import signal
    import threading

    _hook_forks(load_prctl or libc_prctl)
    before = _children()
    installed = _Workers.runs == 0 and \
        threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if installed:
        _Workers.owner, _Workers.before = os.getpid(), before
        signal.signal(signal.SIGTERM, _terminated)
    _Workers.runs += 1
    try:
        yield
    except BaseException:
        _stop_workers(before)
        raise
    finally:
        _Workers.runs -= 1
        if installed and signal.getsignal(signal.SIGTERM) is _terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _Workers.owner = 0


def _children() -> frozenset[int]:
    """The pids of this process's running multiprocessing children."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:  # none started, then
        return frozenset()
    return frozenset(child.pid for child in multiprocessing.active_children()
                     if child.pid is not None)


def _stop_workers(before: frozenset[int]) -> None:
    """Kill this process's multiprocessing children but those in `before`."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return
    workers = [child for child in multiprocessing.active_children()
               if child.pid not in before]
    for worker in workers:
        try:
            worker.kill()
        except (OSError, ValueError):  # gone, or closed
            pass
    for worker in workers:
        try:
            worker.join(1.0)
        except (OSError, ValueError, AssertionError):
            pass


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM during a run: kill the workers, then die by the signal."""
    import signal

    if os.getpid() != _Workers.owner:  # a worker, forked before it reset this
        os._exit(128 + signum)
    _stop_workers(_Workers.before)
    try:
        sys.stderr.write("autograd-lint: terminated\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    os._exit(128 + signum)  # not reached: the signal ends the process


def _hook_forks(load_prctl: Callable[[], Any]) -> None:
    if _Workers.hooked:
        return
    _Workers.hooked = True
    _Workers.load_prctl = load_prctl
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def libc_prctl() -> Any:
    """libc's prctl on Linux; None elsewhere, or where it cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        prctl.restype = ctypes.c_int
        return prctl
    except (ImportError, OSError, AttributeError):
        return None


def _before_fork() -> None:
    import threading

    if _Workers.load_prctl is not None and _Workers.runs:
        _Workers.prctl, _Workers.load_prctl = _Workers.load_prctl(), None
    _Workers.forking = os.getpid()
    _Workers.from_main = threading.current_thread() is threading.main_thread()


def _after_fork_in_parent() -> None:
    _Workers.forking = 0


def forking() -> bool:
    """Whether this process is between the two halves of a fork: a signal
    handler that raises there is ignored (at-fork callbacks swallow it)."""
    return _Workers.forking == os.getpid()


def _after_fork_in_child() -> None:
    """In every child forked during a run: die with the parent."""
    if _Workers.runs == 0:
        return  # forked outside a run: none of ours
    import signal

    try:
        if callable(signal.getsignal(signal.SIGTERM)):  # ours, or the command's
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker just dies
    except ValueError:  # not the main thread: `_terminated` exits a worker too
        pass
    _Workers.owner = 0
    parent = _Workers.forking or os.getppid()
    armed = False
    # The kernel sends the signal when the forking *thread* ends: armed only
    # for a child of the main thread (that of a shorter-lived thread polls).
    if _Workers.prctl is not None and _Workers.from_main:
        try:
            armed = _Workers.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except Exception:  # then poll instead
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        import threading

        threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                         name="autograd-lint-parent-watch").start()


def _watch_parent(parent: int) -> None:
    """In a worker without PR_SET_PDEATHSIG: exit once the parent is gone
    (whatever the worker waits for, it waits for a process that died)."""
    import time

    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)
