"""Rule families, one module each (installed as ``autograd_lint.checkers``)."""
from __future__ import annotations

from .arity import ArityChecker
from .base import Checker, Reporter
from .ctx_state import CtxStateChecker
from .custom_ops import CustomOpsChecker
from .differentiability import DifferentiabilityChecker
from .inplace import InplaceChecker
from .kernels import KernelsChecker
from .structure import StructureChecker
from .usage import UsageChecker

CHECKERS: tuple[type[Checker], ...] = (
    CtxStateChecker, InplaceChecker, ArityChecker, StructureChecker, DifferentiabilityChecker,
    UsageChecker, CustomOpsChecker, KernelsChecker,
)

__all__ = ["CHECKERS", "Checker", "Reporter"]
