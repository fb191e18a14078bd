"""How checking a Function fails, and how an exception reads in a message.

NotChecked: the Function could not be checked (AGD900). CodeError: forward or
backward fails whatever the inputs (AGD003). Unsynthesizable: no guess fits a
parameter (input synthesis, and the one-process group a recorded call may
need). `first_line` is the one line an exception is reported as;
`environmental` tells an error of the machine from one of the code, and
`out_of_memory` an allocation that failed.
"""
from __future__ import annotations

import re
from typing import Any


class NotChecked(Exception):
    """The Function could not be checked (AGD900); the message says why."""


class CodeError(Exception):
    """forward or backward failed whatever the inputs: a finding (AGD003)."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(detail)
        self.where = where
        self.detail = detail


class Unsynthesizable(Exception):
    """A parameter no guess fits (a callable, a module)."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if not text and isinstance(exc, AssertionError):
        return f"AssertionError: {_failed_assertion(exc)}"
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


class Raised(str):
    """An exception's `first_line`, with where it was raised (" (at
    FILE:LINE)", or ""): a blocker no guess of the inputs moves is named
    with its place."""

    where: str = ""
    # How far into a function the call got before it raised: the function's
    # line the error left it from, then how many calls deeper it was raised
    # ((0, 0): not inside the function).
    reach: tuple[int, int] = (0, 0)


def raised(exc: BaseException, within: Any = None) -> Raised:
    """The error, where it was raised and (with `within`, a function) how
    far into that function the call got."""
    text = Raised(first_line(exc))
    text.where = raised_at(exc)
    if within is not None:
        text.reach = reach_in(exc, within)
    return text


def reach_in(exc: BaseException, function: Any) -> tuple[int, int]:
    """(line, depth): the line of `function` the traceback left it from and
    the frames below that; (0, 0) when the traceback never entered it."""
    import inspect

    code = getattr(inspect.unwrap(function), "__code__", None)
    reach = (0, 0)
    traceback = exc.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code is code:
            reach = (traceback.tb_lineno, 0)
        elif reach != (0, 0):
            reach = (reach[0], reach[1] + 1)
        traceback = traceback.tb_next
    return reach


def raised_at(exc: BaseException, root: str = "") -> str:
    """" (at FILE:LINE)": where an error was raised, the innermost frame of
    the checked code's own files (not the import machinery, this package or
    an installed library, unless no other frame is there), looking through
    the errors it was raised from (Triton's interpreter wraps the error of a
    kernel's line); a file under `root` is shown relative to it; "" when
    there is none."""
    import os

    frames = _frames(exc)
    if not frames and isinstance(exc, SyntaxError) and exc.filename:
        frames = [(exc.filename, exc.lineno or 0)]  # the file that does not parse
    own = [f for f in frames if not _library(f[0])]
    if not (own or frames):
        return ""
    name, line = (own or frames)[-1]
    if root and os.path.abspath(name).startswith(os.path.abspath(root) + os.sep):
        name = os.path.relpath(os.path.abspath(name), root)
    return f" (at {name}:{line})"


def _frames(exc: BaseException) -> list[tuple[str, int]]:
    """The traceback's frames outside the import machinery and this package,
    outermost first, those of the errors it was raised from after its own."""
    import os

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames: list[tuple[str, int]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frame = current.__traceback__
        while frame is not None:
            name = frame.tb_frame.f_code.co_filename
            if not name.startswith("<") and not os.path.abspath(name).startswith(here):
                frames.append((name, frame.tb_lineno))
            frame = frame.tb_next
        current = current.__cause__
    return frames


def _library(path: str) -> bool:
    """Whether a file is the standard library's or an installed package's."""
    import os
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "purelib", "platlib")
             if k in paths}
    return any(os.path.abspath(path).startswith(r) for r in roots)


def _failed_assertion(exc: BaseException) -> str:
    """`assert x.is_cuda` (mlp.py:652): a bare assertion says nothing; its line does."""
    import linecache
    import os

    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None:
        return "(no message)"
    code = frame.tb_frame.f_code
    line = linecache.getline(code.co_filename, frame.tb_lineno).strip()
    return f"`{line}` ({os.path.basename(code.co_filename)}:{frame.tb_lineno})"


# How running out of memory reads: Python's MemoryError, torch's
# OutOfMemoryError (CUDA, MPS, XPU) and its CPU allocator's RuntimeError.
_OUT_OF_MEMORY = re.compile(
    r"^(MemoryError|OutOfMemoryError)\b|DefaultCPUAllocator: (can't allocate memory|not enough "
    r"memory)|\b(CUDA|MPS backend|XPU) out of memory\b")


def out_of_memory(error: BaseException | str) -> bool:
    """Whether an error (or the `first_line` of one) is an allocation that
    failed: the machine's limit, not the code's defect (AGD900)."""
    if isinstance(error, BaseException):
        if isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError":
            return True
        error = first_line(error)
    return bool(_OUT_OF_MEMORY.search(error))


def raise_if_code_error(exc: BaseException, where: str) -> None:
    """Errors no choice of inputs causes: reading a ctx attribute nothing set
    (state kept on the instance by legacy code)."""
    if isinstance(exc, AttributeError) and re.search(r"'\w+Backward' object has no attribute",
                                                     str(exc)):
        raise CodeError(where, first_line(exc)) from None


# What a machine lacks, not what the code gets wrong: a GPU, a driver, a
# compiled extension, a feature Triton's interpreter does not have.
_ENVIRONMENT = re.compile(
    r"not compiled with CUDA|CUDA driver|no CUDA GPUs|NVIDIA driver|libcuda|CUDA is not "
    r"available|cudaGetDevice|0 active drivers|device-side assert|NVML|No module named|"
    r"interpreter|TRITON_INTERPRET|not supported on (the )?CPU|not implemented for 'CPU'|"
    r"\bis_cuda\b|\bufunc\b|"
    r"Could not run '[^']+' with arguments from the 'CPU' backend|"
    r"(only|requires?|needs?|expected|runs?)\b.{0,40}\b(cuda|gpu)s?\b|"
    r"\b(cuda|gpu)\b.{0,40}\b(only|required|needed)\b|on device \W?cpu\b", re.I)


# A feature the installed library (Triton) has dropped: no machine has it.
_REMOVED = re.compile(r"\bhave been removed\b|\bremoved in favou?r of\b|"
                      r"\bis no longer supported\b", re.I)
# Triton's interpreter wraps what a kernel's line raised: a gap of the
# interpreter says so inside; a type error there is about the inputs.
_INTERPRETER_WRAPPER = re.compile(r"\bInterpreterError\b")


def environmental(message: str, guessed: bool = False) -> bool:
    """Whether an error is about the machine the check runs on, or the
    libraries installed there. With `guessed` inputs, an error Triton's
    interpreter wraps counts only when it is the interpreter's own gap (a
    type error on a kernel's line is the guess's); with the project's own
    inputs, any error the interpreter raises is its gap."""
    if guessed:
        message = _INTERPRETER_WRAPPER.sub("", message)
    return bool(_ENVIRONMENT.search(message)) or removed_feature(message)


def removed_feature(message: str) -> bool:
    """Whether an error says the installed library dropped what the code
    uses (`tl.make_block_ptr` in Triton 3.9): another machine would not help."""
    return bool(_REMOVED.search(message))


def installed_version(module: str) -> str:
    """"Triton 3.9.0": a module the checked code has imported, with its
    version, for a message ("the installed Triton"); "libraries" when the
    code has not imported it."""
    import sys

    if module not in sys.modules:
        return "libraries"
    version = getattr(sys.modules[module], "__version__", "")
    return f"{module.capitalize()} {version}".strip()
