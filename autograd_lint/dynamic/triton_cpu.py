"""Triton kernels on the CPU: Triton's interpreter, and its gaps filled.

Without a GPU, a `@triton.jit` kernel cannot be compiled; Triton's own
interpreter (`TRITON_INTERPRET=1`) runs it on CPU tensors with numpy instead.
The dynamic mode switches it on in CPU workers (`--no-triton-interpreter`
turns that off). What compiled kernels do and the interpreter lacks, common
in real kernels, is filled in here, the way compiled Triton behaves:

- a Python `float` kernel argument is a 32-bit float scalar (the interpreter
  passes the bare float, so `scale.to(tl.float32)` fails);
- `triton.language.extra.libdevice` functions (`tanh`, `rsqrt`, ...) are
  dispatch stubs that only a compiler backend fills in; in the interpreter
  they return None. The elementwise ones get numpy implementations.
- `@triton.autotune` times each config through the GPU driver, which a CPU
  has none of; timing means nothing in the interpreter, so the first config
  runs (every config computes the same result).
- a load or store mask that is not of bool type (`mask & (head < n)` with a
  scalar comparison) or that is a scalar: compiled Triton converts it to i1
  and broadcasts it; the interpreter's loads and stores refuse it, so it is
  converted here the same way;
- "Is a Triton backend active here?" (`backend.driver.is_active()`, which
  libraries ask before they define or launch their kernels) is answered yes
  for the NVIDIA backend: the interpreter runs the kernels;
- the active driver's queries (`triton.runtime.driver.active.utils.
  get_device_properties(0)` for the multiprocessor count, often asked at
  import) are answered as `torch.cuda`'s stand-ins answer them (cuda_cpu.py),
  where the NVIDIA driver would look for libcuda.

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
BACKENDS = "triton.backends"
DRIVER = "triton.runtime.driver"
LIBDEVICE = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice")


def install() -> None:
    """Run Triton kernels through the interpreter, gaps filled."""
    os.environ["TRITON_INTERPRET"] = "1"
    after_import({INTERPRETER: _patch_scalars, AUTOTUNER: _patch_autotuner,
                  BACKENDS: _patch_active_backend, DRIVER: _patch_driver,
                  **{name: _patch_libdevice for name in LIBDEVICE}})


def _patch_masks(interpreter: ModuleType) -> None:
    import numpy as np

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_masked_load, "_autograd_lint", False):
        return
    load, store = builder.create_masked_load, builder.create_masked_store

    def as_mask(mask: Any, ptrs: Any) -> Any:
        data = np.asarray(mask.data)
        if data.dtype != np.bool_ or data.shape != np.shape(ptrs.data):
            data = np.broadcast_to(data.astype(np.bool_), np.shape(ptrs.data)).copy()
            return interpreter.TensorHandle(data, mask.dtype)
        return mask

    def masked_load(self: Any, ptrs: Any, mask: Any, *args: Any) -> Any:
        return load(self, ptrs, as_mask(mask, ptrs), *args)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any) -> Any:
        return store(self, ptrs, value, as_mask(mask, ptrs), *args)

    masked_load._autograd_lint = True  # type: ignore[attr-defined]
    builder.create_masked_load = masked_load
    builder.create_masked_store = masked_store


def _patch_scalars(interpreter: ModuleType) -> None:
    import numpy as np
    import triton.language as tl

    _patch_masks(interpreter)
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


def _patch_active_backend(module: ModuleType) -> None:
    backend = getattr(module, "backends", {}).get("nvidia")
    driver = getattr(backend, "driver", None)
    if driver is None or getattr(driver.is_active, "_autograd_lint", False):
        return

    def is_active() -> bool:
        return True

    is_active._autograd_lint = True  # type: ignore[attr-defined]
    driver.is_active = staticmethod(is_active)


class _DeviceUtils:
    """The driver's device queries, as a mid-range GPU answers them."""

    @staticmethod
    def get_device_properties(device: Any = 0) -> dict[str, int]:
        from .cuda_cpu import PROPERTIES

        return {"multiprocessor_count": PROPERTIES["multi_processor_count"],
                "max_shared_mem": PROPERTIES["shared_memory_per_block_optin"],
                "max_num_regs": PROPERTIES["regs_per_multiprocessor"],
                "warpSize": PROPERTIES["warp_size"], "sm_clock_rate": 1_410_000,
                "mem_clock_rate": 1_215_000, "mem_bus_width": 5120}


class _CpuDriver:
    """The active driver on a CPU, where the interpreter runs the kernels: it
    answers the device's counts, and names no target (`get_current_target`
    is missing, as it was): code that picks its platform by asking (fla's
    `IS_NVIDIA`, inline-asm fast paths) keeps picking the CPU's, as
    `torch.cuda.is_available()` stays False beside the CUDA stand-ins."""

    utils = _DeviceUtils()

    @staticmethod
    def is_active() -> bool:
        return True

    @staticmethod
    def get_current_device() -> int:
        return 0

    @staticmethod
    def get_current_stream(device: Any = None) -> int:
        return 0


def _patch_driver(module: ModuleType) -> None:
    config = getattr(module, "driver", None)
    if config is not None and hasattr(config, "set_active") and \
            getattr(config, "_active", None) is None:
        config.set_active(_CpuDriver())


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
