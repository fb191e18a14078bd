"""The Function under check: how it is called, and the findings it collects."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .errors import out_of_memory
from .precision import FLOAT64, Precision

Finding = dict[str, Any]


@dataclass
class Target:
    cls: type
    once_differentiable: bool
    has_jvp: bool
    has_vmap: bool
    device: torch.device
    legacy: bool = False
    tensor_hints: frozenset[str] = frozenset()
    precision: Precision = FLOAT64
    findings: list[Finding] = field(default_factory=list)
    note: str = ""  # which path a finding is on: "with `flag=True`"
    # forward is slow (an interpreted kernel): gradchecks use random
    # projections of the Jacobian (a few calls per input, not per element).
    fast: bool = False
    # An in-place Function (mark_dirty) cannot take a leaf that requires grad:
    # it gets a differentiable copy of each input, as a caller would pass.
    copy_leaves: bool = False
    # Why backward differs from the derivative on purpose ("identity",
    # "piecewise-constant"): finite differences were not compared.
    deliberate: str | None = None
    # When the probes beyond the basic checks (the edges, recorded flags
    # flipped, optional inputs given) stop: their time must never cost the
    # Function its verdict (time.monotonic(); None: no limit).
    extras_until: float | None = None
    # The codes whose probes ran far enough to see their defect: a static
    # finding one of them would confirm is "not confirmed" only then.
    probed: set[str] = field(default_factory=set)
    # The file and lines of its static findings that a probe would confirm,
    # and those of them the checks reached (reach.py).
    watch: tuple[str, frozenset[int]] = ("", frozenset())
    reached: set[int] = field(default_factory=set)
    # Whether the run so far leaned on the worker's CPU stand-ins (Triton's
    # interpreter, answered CUDA queries): what torch.compile then traces is
    # not what users compile.
    emulated: Callable[[], bool] = field(default=lambda: False)

    def time_for_extras(self) -> float:
        """Seconds left for the extra probes (inf without a limit)."""
        if self.extras_until is None:
            return float("inf")
        import time

        return self.extras_until - time.monotonic()

    def report(self, code: str, **fields: Any) -> None:
        if any(isinstance(v, str) and out_of_memory(v) for v in fields.values()):
            raise MemoryError  # the machine's limit, not the code: not checked (AGD900)
        if self.note:
            if any(f["code"] == code for f in self.findings):
                return  # the same defect, seen on the default path already
            fields["note"] = self.note
        if code in ("AGD001", "AGD002"):
            fields.setdefault("precision", self.precision.describe())
        self.findings.append({"code": code, **fields})

    def apply(self, *args: Any) -> Any:
        if self.copy_leaves:  # every tensor: the caller's must never change
            args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
        return self.cls.apply(*args)

    def tensor_outputs(self, *args: Any) -> Any:
        """`apply` with non-tensor outputs dropped (gradcheck takes tensors only)."""
        output = self.apply(*args)
        if isinstance(output, (tuple, list)):
            return tuple(t for t in output if isinstance(t, torch.Tensor))
        return output
