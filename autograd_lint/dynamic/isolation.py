"""Probes that may crash the process, run in a forked child of the worker.

The boundary probes hand a kernel inputs it was never called with (a size
cut to 1, an odd size where a kernel splits a dimension in two). A kernel
that reads out of bounds there can abort the process (Triton's interpreter
does), and a worker that dies loses the verdicts of every Function of its
module. On a CPU such a probe runs in a forked child: its findings come back
through a pipe; a child that dies or overstays is no verdict on that probe.
On CUDA (a CUDA context does not survive a fork) the probe runs in place.
"""
from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Callable

from .target import Target

PROBE_SECONDS = 60.0


def run_isolated(target: Target, probe: Callable[[], None],
                 seconds: float = PROBE_SECONDS) -> bool:
    """Run `probe` (which reports into `target`); True when it finished."""
    if target.device.type != "cpu" or not hasattr(os, "fork"):
        probe()
        return True
    before = len(target.findings)

    def work() -> bytes:
        probe()
        return json.dumps(target.findings[before:]).encode("utf-8")

    data, status = run_forked(work, seconds)
    if not exited_cleanly(status):
        return False
    try:
        target.findings.extend(json.loads(data.decode("utf-8")))
    except ValueError:
        return False
    return True


def run_forked(work: Callable[[], bytes], seconds: float | None = None
               ) -> tuple[bytes, int | None]:
    """Run `work` in a forked child that dies with this process; what it
    returned, and its wait status (None: killed at the deadline)."""
    reader, writer = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return
        os.close(reader)
        _child(work, writer, parent)
    os.close(writer)
    try:
        return _collect(pid, reader, seconds)
    finally:
        os.close(reader)


def exited_cleanly(status: int | None) -> bool:
    return status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _child(work: Callable[[], bytes], writer: int, parent: int) -> None:
    status = 1
    try:
        import torch

        from .guardian import die_with_parent

        die_with_parent(parent)
        torch.set_num_threads(1)  # the parent's thread pool did not come across the fork
        payload = work()
        with os.fdopen(writer, "wb") as handle:
            handle.write(payload)
        status = 0
    finally:
        os._exit(status)


def _collect(pid: int, reader: int, seconds: float | None) -> tuple[bytes, int | None]:
    """What the child wrote, and its wait status once it exits (None: killed
    at the deadline). Read until the child exits, not to the end of the
    pipe: processes the checked code forked hold its write end open."""
    deadline = None if seconds is None else time.monotonic() + seconds
    chunks = []
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return b"", None
        ready, _, _ = select.select([reader], [], [], 0.05)
        if ready:
            chunk = os.read(reader, 65536)
            if chunk:
                chunks.append(chunk)
                continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    os.set_blocking(reader, False)
    while True:  # what the child wrote just before it exited
        try:
            chunk = os.read(reader, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks), status
