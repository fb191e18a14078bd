"""Effect summaries: what calling a function does, as its call sites see it.

A summary says which parameters the callee changes in place (and on which
paths through the tests of its parameters), which parameters its result may
be or view, and which parameters' values leave autograd on the way to the
result. effects.py computes them, once per function; the interpreter applies
them where the function is called (callees.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from .guards import UNCONDITIONAL, Path


@dataclass(frozen=True)
class Write:
    """A parameter the callee changes in place."""

    position: int | None  # None: keyword-only
    name: str
    certain: bool  # the change only exists on tensors (`.add_()`, a kernel store)
    # The paths (tests of the callee's parameters) on which the change happens:
    # a call whose literal arguments refute all of them (`inplace=False`,
    # `mode="copy"`) does not write.
    when: tuple[Path, ...] = UNCONDITIONAL
    collective: bool = False  # every change is an in-place torch.distributed collective


@dataclass(frozen=True)
class Result:
    """The parameters a function's result may be (or be a view of)."""

    whole: frozenset[str] = frozenset()
    # Per position, when every return is a tuple display of one length.
    elements: tuple[frozenset[str], ...] | None = None
    detached: bool = False  # every aliasing value returned is a `.detach()` of it


@dataclass(frozen=True)
class Leave:
    """A parameter whose value leaves autograd on the way to the result
    (`.item()`, `.numpy()`, `np.*`, a no_grad block; `.detach()` / `.data`
    when `on_gradient`: those matter only for the incoming gradient itself)."""

    name: str
    how: str
    on_gradient: bool = False


@dataclass(frozen=True)
class Effect:
    writes: tuple[Write, ...] = ()
    result: Result = Result()
    leaves: tuple[Leave, ...] = ()


@dataclass(frozen=True)
class Summary:
    callee: str  # as written at the call site, for messages
    kernel: bool
    writes: tuple[Write, ...]
    result: Result = Result()
    parameters: tuple[tuple[str, int | None], ...] = ()  # (name, position): binding args
    leaves: tuple[Leave, ...] = ()
