"""CPU stand-ins for the CUDA queries of kernel wrappers.

A Triton wrapper often asks CUDA something before it launches its kernel:
`with torch.cuda.device(x.device.index):`, the number of multiprocessors
(`torch.cuda.get_device_properties(dev).multi_processor_count`), the
current stream, the compute capability. On a machine without CUDA each of
these raises, and the kernel, which Triton's interpreter could run on the
CPU, is never reached. In a CPU worker, where `torch.cuda.is_available()`
is False, these queries get plausible answers instead: a device context that
does nothing, the properties of a mid-range GPU, a stream that does nothing,
an event timed by the wall clock.
What the checked code computes does not depend on them (a launch grid sized
by the multiprocessor count covers the same elements in more or fewer
programs). `torch.cuda.is_available()` stays False, so code that chooses
its device by asking keeps choosing the CPU. Allocations a wrapper makes on
CUDA by name (`torch.empty(n, device="cuda")`, `x.new_zeros(..., device=
"cuda")`, `.to("cuda")`, `.cuda()`) are made on the CPU.

Which stand-ins a Function's check used is kept (`StandIns.used`): the verdict
says so.
"""
from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

# A mid-range GPU: few multiprocessors keep interpreted persistent kernels short.
PROPERTIES = {
    "name": "CPU stand-in for a CUDA device", "major": 8, "minor": 0,
    "multi_processor_count": 4, "total_memory": 16 * 1024 ** 3,
    "max_threads_per_multi_processor": 2048, "warp_size": 32,
    "regs_per_multiprocessor": 65536, "L2_cache_size": 40 * 1024 ** 2,
    "shared_memory_per_block": 48 * 1024, "shared_memory_per_block_optin": 163 * 1024,
    "shared_memory_per_multiprocessor": 164 * 1024, "is_integrated": False,
    "is_multi_gpu_board": False, "gcnArchName": "", "uuid": "stand-in",
}


# torch's factory functions and Tensor's allocating methods that take `device=`.
_FACTORIES = ("empty", "zeros", "ones", "full", "arange", "rand", "randn", "randint",
              "tensor", "as_tensor", "empty_like", "zeros_like", "ones_like", "full_like",
              "rand_like", "randn_like", "randint_like", "empty_strided", "linspace", "eye")
_NEW_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor")
ALLOCATIONS = "device='cuda' allocations, made on the CPU"


def names_cuda(device: Any) -> bool:
    """Whether a `device` argument names a CUDA device ("cuda", "cuda:1",
    torch.device("cuda", 0))."""
    if isinstance(device, str):
        return device.split(":", 1)[0].strip() == "cuda"
    return getattr(device, "type", None) == "cuda"


# A module that allocates on CUDA by name: `device="cuda"`, `device='cuda:0'`,
# `device=torch.device("cuda")`.
_CUDA_DEVICE = re.compile(r"""device\s*=\s*(?:torch\.device\(\s*)?["']cuda""")


def _allocates_on_cuda(module: Any) -> bool:
    path = getattr(module, "__file__", None)
    if not path:
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return _CUDA_DEVICE.search(handle.read()) is not None
    except OSError:
        return False


class _TorchOnCpu(ModuleType):
    """torch as a module that allocates on a named CUDA device sees it: its
    factory functions make the tensors on the CPU (and say so)."""

    def __init__(self, torch: Any, stand_ins: StandIns) -> None:
        super().__init__("torch", getattr(torch, "__doc__", None))
        self.__dict__["_torch"] = torch
        self.__dict__["_factories"] = {name: stand_ins._device_on_cpu(getattr(torch, name))
                                       for name in _FACTORIES if hasattr(torch, name)}

    def __getattr__(self, name: str) -> Any:
        factories = self.__dict__["_factories"]
        return factories[name] if name in factories else getattr(self.__dict__["_torch"], name)


class _Stream:
    """A stream that orders nothing: the CPU runs everything in order."""

    cuda_stream = 0
    stream_id = 0
    device_index = 0
    device_type = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        return event

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class _Event:
    """A CUDA event on the CPU: recorded at once, timed by the wall clock
    (a wrapper that times its kernels to choose a config only compares)."""

    at = 0.0  # when it was recorded

    def record(self, stream: Any = None) -> None:
        import time

        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        return (end.at - self.at) * 1000.0  # milliseconds, as CUDA's


class _DeviceContext:
    """`with torch.cuda.device(i):` where there is one device, the CPU."""

    idx = 0

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        pass


@dataclass
class StandIns:
    """The stand-ins installed, and which the code under check has called."""

    used: set[str] = field(default_factory=set)

    def take(self) -> list[str]:
        """The stand-ins used since the last call, sorted; forgets them."""
        names = sorted(self.used)
        self.used.clear()
        return names

    def _noting(self, name: str, value: Any) -> Any:
        def stand_in(*args: Any, **kwargs: Any) -> Any:
            self.used.add(name)
            return value(*args, **kwargs) if callable(value) else value

        stand_in._autograd_lint = True  # type: ignore[attr-defined]
        return stand_in

    def install(self, torch: Any) -> None:
        """Answer torch.cuda's queries on a machine without CUDA."""
        cuda = torch.cuda
        if cuda.is_available() or getattr(cuda.current_device, "_autograd_lint", False):
            return
        answers: dict[str, Any] = {
            "current_device": 0,
            "set_device": None,
            "synchronize": None,
            "get_device_properties": lambda *a, **k: SimpleNamespace(**PROPERTIES),
            "get_device_capability": (PROPERTIES["major"], PROPERTIES["minor"]),
            "get_device_name": PROPERTIES["name"],
            "current_stream": lambda *a, **k: _Stream(),
            "default_stream": lambda *a, **k: _Stream(),
            "stream": lambda *a, **k: nullcontext(),
        }
        for name, value in answers.items():
            if hasattr(cuda, name):
                setattr(cuda, name, self._noting(f"torch.cuda.{name}", value))
        # Classes stay classes (`isinstance(s, torch.cuda.Stream)`).
        cuda.device = self._class("torch.cuda.device", _DeviceContext)
        cuda.Stream = self._class("torch.cuda.Stream", _Stream)
        cuda.Event = self._class("torch.cuda.Event", _Event)
        if not hasattr(torch.cpu, "device"):
            # `getattr(torch, x.device.type).device(x.device)`: the device
            # context of whichever backend a tensor is on, which torch.cpu lacks.
            torch.cpu.device = self._class("torch.cpu.device", _DeviceContext)
        self._allocate_on_cpu(torch)

    def _allocate_on_cpu(self, torch: Any) -> None:
        """`.cuda()` and `.to("cuda")` on a machine without CUDA: the tensor
        stays on the CPU. (torch's factory functions are not replaced here:
        TorchScript compiles torch's own code that names them; see
        `allocations_on_cpu`.)"""
        used = self.used
        to = torch.Tensor.to

        def to_on_cpu(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if any(names_cuda(a) for a in args) or names_cuda(kwargs.get("device")):
                used.add(ALLOCATIONS)
                args = tuple("cpu" if names_cuda(a) else a for a in args)
                if names_cuda(kwargs.get("device")):
                    kwargs["device"] = "cpu"
            return to(tensor, *args, **kwargs)

        def cuda_on_cpu(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            used.add(ALLOCATIONS)
            return tensor

        torch.Tensor.to = to_on_cpu
        torch.Tensor.cuda = cuda_on_cpu
        for name in _NEW_METHODS:
            if hasattr(torch.Tensor, name):
                setattr(torch.Tensor, name, self._device_on_cpu(getattr(torch.Tensor, name)))

    def allocations_on_cpu(self, torch: Any, modules: list[Any]) -> None:
        """In the checked code's own modules that allocate on a named CUDA
        device (`torch.empty(n, device="cuda")`), `torch` is a view of torch
        whose factory functions allocate on the CPU instead: torch's own code
        keeps the real ones."""
        if torch.cuda.is_available():
            return
        view = _TorchOnCpu(torch, self)
        for module in modules:
            if getattr(module, "torch", None) is torch and _allocates_on_cuda(module):
                module.torch = view

    def _device_on_cpu(self, function: Any) -> Any:
        used = self.used

        def on_cpu(*args: Any, **kwargs: Any) -> Any:
            if names_cuda(kwargs.get("device")):
                used.add(ALLOCATIONS)
                kwargs["device"] = "cpu"
            return function(*args, **kwargs)

        on_cpu.__name__ = getattr(function, "__name__", "stand_in")
        on_cpu.__doc__ = getattr(function, "__doc__", None)
        return on_cpu

    def _class(self, name: str, base: type) -> type:
        used = self.used

        def __init__(instance: Any, *args: Any, **kwargs: Any) -> None:
            used.add(name)

        return type(base.__name__, (base,), {"__init__": __init__, "_autograd_lint": True})
