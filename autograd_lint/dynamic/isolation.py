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
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return
        os.close(reader)
        _child(target, probe, before, writer)
    os.close(writer)
    try:
        data, finished = _collect(pid, reader, seconds)
    finally:
        os.close(reader)
    if not finished:
        return False
    try:
        target.findings.extend(json.loads(data.decode("utf-8")))
    except ValueError:
        return False
    return True


def _child(target: Target, probe: Callable[[], None], before: int, writer: int) -> None:
    status = 1
    try:
        import torch

        torch.set_num_threads(1)  # the parent's thread pool did not come across the fork
        probe()
        payload = json.dumps(target.findings[before:]).encode("utf-8")
        with os.fdopen(writer, "wb") as handle:
            handle.write(payload)
        status = 0
    finally:
        os._exit(status)


def _collect(pid: int, reader: int, seconds: float) -> tuple[bytes, bool]:
    """What the child wrote, and whether it exited normally in time."""
    deadline = time.monotonic() + seconds
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return b"", False
        ready, _, _ = select.select([reader], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(reader, 65536)
            if not chunk:
                break  # the child closed the pipe: it is exiting
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks), os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
