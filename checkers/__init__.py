"""Rule families, one module each (installed as ``autograd_lint.checkers``)."""
from __future__ import annotations

from .arity import ArityChecker
from .base import Checker, Reporter
from .ctx_state import CtxStateChecker
from .inplace import InplaceChecker

CHECKERS: tuple[type[Checker], ...] = (CtxStateChecker, InplaceChecker, ArityChecker)

__all__ = ["CHECKERS", "Checker", "Reporter"]
