"""Triton kernels on the CPU: Triton's interpreter, and two gaps in it filled.

Without a GPU, a `@triton.jit` kernel cannot be compiled; Triton's own
interpreter (`TRITON_INTERPRET=1`) runs it on CPU tensors with numpy instead.
The dynamic mode switches it on in CPU workers (`--no-triton-interpreter`
turns that off). Two things that compiled kernels do are missing from the
interpreter, and common in real kernels; they are filled in here, the way
compiled Triton behaves:

- a Python `float` kernel argument is a 32-bit float scalar (the interpreter
  passes the bare float, so `scale.to(tl.float32)` fails);
- `triton.language.extra.libdevice` functions (`tanh`, `rsqrt`, ...) are
  dispatch stubs that only a compiler backend fills in; in the interpreter
  they return None. The elementwise ones get numpy implementations.
- `@triton.autotune` times each config through the GPU driver, which a CPU
  has none of; timing means nothing in the interpreter, so the first config
  runs (every config computes the same result).

Nothing here imports triton: `install()` sets the environment variable and an
import hook that patches the modules when (if) the checked code imports them.
Runs in the worker process only.
"""
from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from ._hooks import after_import

INTERPRETER = "triton.runtime.interpreter"
AUTOTUNER = "triton.runtime.autotuner"
LIBDEVICE = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice")


def install() -> None:
    """Run Triton kernels through the interpreter, gaps filled."""
    os.environ["TRITON_INTERPRET"] = "1"
    after_import({INTERPRETER: _patch_scalars, AUTOTUNER: _patch_autotuner,
                  **{name: _patch_libdevice for name in LIBDEVICE}})


def _patch_scalars(interpreter: ModuleType) -> None:
    import numpy as np
    import triton.language as tl

    original = interpreter._implicit_cvt
    if getattr(original, "_autograd_lint", False):
        return

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return original(arg)

    implicit_cvt._autograd_lint = True  # type: ignore[attr-defined]
    interpreter._implicit_cvt = implicit_cvt


def _patch_autotuner(autotuner: ModuleType) -> None:
    tuner = autotuner.Autotuner
    original = tuner.run
    if getattr(original, "_autograd_lint", False):
        return

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(self.configs) > 1:
            self.configs = self.configs[:1]
        return original(self, *args, **kwargs)

    run._autograd_lint = True  # type: ignore[attr-defined]
    tuner.run = run


def _numpy_functions() -> dict[str, Any]:
    import numpy as np

    return {
        "tanh": np.tanh, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log,
        "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
        "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan,
        "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
        "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
        "abs": np.abs, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
        "rint": np.rint, "round": np.round, "nearbyint": np.rint, "erf": _erf(),
        "pow": np.power, "fmax": np.fmax, "fmin": np.fmin, "fmod": np.fmod,
        "atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot,
        "isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit,
    }


def _erf() -> Any:
    import math

    import numpy as np

    return np.vectorize(math.erf, otypes=[float])


def _patch_libdevice(libdevice: ModuleType) -> None:
    for name, function in _numpy_functions().items():
        if callable(getattr(libdevice, name, None)):
            setattr(libdevice, name, _elementwise(function))


def _elementwise(function: Any) -> Any:
    """A libdevice function on interpreter tensors (and plain numbers)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def apply(*args: Any, **_: Any) -> Any:
        first = next((a for a in args if isinstance(a, tl.tensor)), None)
        values = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
        with np.errstate(all="ignore"):
            result = np.asarray(function(*values))
        if first is None:
            return result.item()
        if result.dtype == np.bool_:
            return tl.tensor(TensorHandle(result, tl.int1), first.type.with_element_ty(tl.int1)
                             if hasattr(first.type, "with_element_ty") else tl.int1)
        result = result.astype(first.handle.data.dtype, copy=False)
        return tl.tensor(TensorHandle(result, first.handle.dtype.scalar), first.type)

    return apply
