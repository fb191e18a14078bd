"""The one-process group that stands in for a Function's process group: what
synthesis passes a `group` parameter, and what a recorded `ProcessGroup`
argument is rebuilt as (`inputs.py` and `recording.py` both use it; neither
imports the other for it)."""
from __future__ import annotations

from typing import Any

import torch

from .errors import Unsynthesizable


def single_process_group() -> Any:
    """The default group of a world of one process (gloo, an in-memory store):
    what a tensor-parallel Function sees at TP=1, where collectives are the
    identity. Made once per worker; the worker is this check's own process."""
    import torch.distributed as dist

    if not dist.is_available():
        raise Unsynthesizable("a process group is needed and torch.distributed is not built")
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    return dist.group.WORLD


def is_process_group(value: Any) -> bool:
    group_type = getattr(getattr(torch, "distributed", None), "ProcessGroup", None)
    return group_type is not None and isinstance(value, group_type)
