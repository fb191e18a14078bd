"""CPU stand-ins for the CUDA queries of kernel wrappers.

A Triton wrapper often asks CUDA something before it launches its kernel:
`with torch.cuda.device(x.device.index):`, the number of multiprocessors
(`torch.cuda.get_device_properties(dev).multi_processor_count`), the
current stream, the compute capability. On a machine without CUDA each of
these raises, and the kernel, which Triton's interpreter could run on the
CPU, is never reached. In a CPU worker, where `torch.cuda.is_available()`
is False, these queries get plausible answers instead: a device context that
does nothing, the properties of a mid-range GPU, a stream that does nothing.
What the checked code computes does not depend on them (a launch grid sized
by the multiprocessor count covers the same elements in more or fewer
programs). `torch.cuda.is_available()` stays False, so code that chooses
its device by asking keeps choosing the CPU.

Which stand-ins a Function's check used is kept (`StandIns.used`): the verdict
says so.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

# A mid-range GPU: few multiprocessors keep interpreted persistent kernels short.
_PROPERTIES = {
    "name": "CPU stand-in for a CUDA device", "major": 8, "minor": 0,
    "multi_processor_count": 4, "total_memory": 16 * 1024 ** 3,
    "max_threads_per_multi_processor": 2048, "warp_size": 32,
    "regs_per_multiprocessor": 65536, "L2_cache_size": 40 * 1024 ** 2,
    "shared_memory_per_block": 48 * 1024, "shared_memory_per_block_optin": 163 * 1024,
    "shared_memory_per_multiprocessor": 164 * 1024, "is_integrated": False,
    "is_multi_gpu_board": False, "gcnArchName": "", "uuid": "stand-in",
}


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
            "get_device_properties": lambda *a, **k: SimpleNamespace(**_PROPERTIES),
            "get_device_capability": (_PROPERTIES["major"], _PROPERTIES["minor"]),
            "get_device_name": _PROPERTIES["name"],
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

    def _class(self, name: str, base: type) -> type:
        used = self.used

        def __init__(instance: Any, *args: Any, **kwargs: Any) -> None:
            used.add(name)

        return type(base.__name__, (base,), {"__init__": __init__, "_autograd_lint": True})
