"""Recorded calls: the inputs a project's own tests pass to its Functions
and custom ops.

    pytest --autograd-record                      # or: --autograd-record-file FILE
    autograd-lint record -- python -m pytest tests/
    autograd-lint check --dynamic src/            # uses them (or --recorded FILE)

While the project's tests run, `Function.apply` is observed: for each
Function, a few distinct call signatures are kept (tensor shapes, dtypes,
devices, strides, `requires_grad`, the value range of floating tensors, the
values of small integer and boolean tensors: indices and labels must stay
valid, and the non-tensor arguments). The dynamic mode rebuilds a call with
fresh random values in the recorded range, integer tensors as recorded, and
checks the Function with it before trying anything else.

The file is JSON, one entry per Function keyed by `module:qualname`:

    {"tool": "autograd-lint", "format": 1, "functions": {
      "pkg.ops:Scale": [{"file": "pkg/ops.py", "line": 12, "calls": [
        {"args": [{"tensor": {"shape": [8, 64], "dtype": "float32", "device": "cuda",
                              "stride": [64, 1], "requires_grad": true,
                              "range": [-2.1, 2.3]}},
                  {"value": 2}]}]}]}}

Custom ops are recorded too, by op name, when called positionally (through
`torch.ops.ns.name`, an overload, or a custom_op's own function; calls with
keyword arguments are not kept): `"ops": {"ns::name": [{"line": 0, "calls":
[...]}]}` beside `"functions"`, each call described as above.

A dataclass or NamedTuple argument (a parameter bundle) is recorded as the
constructor call that makes it again, `{"object": {"class": "pkg.ops:Params",
"fields": {...}}}`, each field described as above.

Recording never changes what the tests do: an argument that cannot be
described is recorded as `{"opaque": "<type>"}` (that call is not replayed),
and any failure of the recorder itself is swallowed. Nothing here imports
torch at module level: the console command and the pytest plugin load it.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FORMAT = 1
RECORDING_FILE = "recorded-calls.json"  # in the cache directory, by default
MAX_CALLS = 4  # distinct signatures kept per Function
MAX_VALUES = 4096  # integer/bool tensors up to this many elements keep their values
# torch's own operator namespaces: their calls are never recorded.
TORCH_NAMESPACES = frozenset({"aten", "prim", "prims", "quantized", "_quantized", "profiler",
                              "_test", "mkldnn", "quantized_decomposed", "higher_order",
                              "_c10d_functional", "c10d", "_dtensor", "inductor", "fsdp",
                              "debugprims", "rngprims", "onednn", "_inductor_test"})
ENVIRONMENT = "AUTOGRAD_LINT_RECORD"  # `autograd-lint record`: where child processes write


# ---------------------------------------------------------------------------
# Describing a call (in the process being recorded)
# ---------------------------------------------------------------------------
def describe(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": _tensor(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).replace("torch.", "")}
    bundle = _bundle(value)
    if bundle is not None:
        return bundle
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return {type(value).__name__: [describe(v) for v in value]}
    if _plain(value):
        return {"value": list(value) if isinstance(value, tuple) else value}
    return {"opaque": type(value).__name__}


def _bundle(value: Any) -> dict[str, Any] | None:
    """A dataclass or NamedTuple argument, as the constructor call that makes
    it again: its importable class and its fields, each described."""
    import dataclasses

    cls = type(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
    elif isinstance(value, tuple) and hasattr(cls, "_fields"):
        fields = dict(zip(cls._fields, value, strict=False))
    else:
        return None
    if cls.__module__ in ("__main__", None) or "<locals>" in cls.__qualname__:
        return {"opaque": cls.__name__}  # not importable by name in the worker
    return {"object": {"class": f"{cls.__module__}:{cls.__qualname__}",
                       "fields": {name: describe(v) for name, v in fields.items()}}}


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return not isinstance(value, float) or value == value and abs(value) != float("inf")
    if isinstance(value, (list, tuple)):
        return len(value) <= 64 and all(_plain(v) for v in value)
    return False


def _tensor(tensor: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "shape": list(tensor.shape), "dtype": str(tensor.dtype).replace("torch.", ""),
        "device": tensor.device.type, "stride": list(tensor.stride()),
        "requires_grad": bool(tensor.requires_grad),
    }
    if tensor.numel() == 0 or tensor.is_complex():
        return spec
    detached = tensor.detach()
    if detached.is_floating_point():
        low, high = detached.min().item(), detached.max().item()
        if low == low and high == high:  # not NaN
            spec["range"] = [low, high]
    elif detached.numel() <= MAX_VALUES:
        spec["values"] = detached.reshape(-1).tolist()
    else:
        spec["range"] = [int(detached.min().item()), int(detached.max().item())]
    return spec


def signature(args: list[dict[str, Any]]) -> str:
    """What makes two calls different: shapes, dtypes, flags and plain values
    (not the random contents of floating tensors)."""
    def strip(spec: Any) -> Any:
        if isinstance(spec, dict):
            return {k: strip(v) for k, v in spec.items() if k not in ("range", "values")}
        if isinstance(spec, list):
            return [strip(v) for v in spec]
        return spec
    return json.dumps(strip(args), sort_keys=True)


class Recorder:
    """Observes `torch.autograd.Function.apply` and keeps, per Function, a
    few distinct calls; `save` merges them into the recording file."""

    def __init__(self, path: str | os.PathLike[str], *, autosave: bool = False) -> None:
        self.path = Path(path)
        # Save each new call at once: a command killed at a time limit keeps
        # what it recorded (at most MAX_CALLS writes per Function).
        self.autosave = autosave
        # By (module:qualname, forward's first line): two classes may share a name.
        self.entries: dict[tuple[str, int], dict[str, Any]] = {}
        self.op_entries: dict[str, dict[str, Any]] = {}  # by op name ("ns::name")
        self._original: Any = None
        self._op_originals: list[tuple[type, Any]] = []

    def install(self) -> None:
        from torch.autograd.function import Function

        if self._original is not None:
            return
        original = Function.__dict__["apply"].__func__
        recorder = self

        def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                recorder.observe(cls, args)
            except Exception:  # the recorder must never change what the tests do
                pass
            return original(cls, *args, **kwargs)

        self._original = original
        Function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]
        self._install_op_hooks()

    def _install_op_hooks(self) -> None:
        """Calls of custom ops: `torch.ops.ns.name(...)` (an OpOverloadPacket),
        `torch.ops.ns.name.default(...)` and a custom_op's own function (an
        OpOverload). torch's own namespaces are passed by at once."""
        from torch._ops import OpOverload, OpOverloadPacket

        recorder = self
        for cls, name_of in ((OpOverload, lambda op: op._schema.name),
                             (OpOverloadPacket, lambda op: op._qualified_op_name)):
            original = cls.__dict__["__call__"]

            def call(op: Any, /, *args: Any, _original: Any = original,
                     _name_of: Any = name_of, **kwargs: Any) -> Any:
                try:
                    name = _name_of(op)
                    if name.partition("::")[0] not in TORCH_NAMESPACES and not kwargs:
                        recorder.observe_op(name, args)
                except Exception:  # the recorder must never change what the tests do
                    pass
                return _original(op, *args, **kwargs)

            self._op_originals.append((cls, original))
            cls.__call__ = call  # type: ignore[method-assign]

    def uninstall(self) -> None:
        from torch.autograd.function import Function

        if self._original is not None:
            Function.apply = classmethod(self._original)  # type: ignore[method-assign,assignment]
            self._original = None
        for cls, original in reversed(self._op_originals):
            cls.__call__ = original  # type: ignore[method-assign]
        self._op_originals.clear()

    def observe(self, cls: type, args: tuple[Any, ...]) -> None:
        key = (f"{cls.__module__}:{cls.__qualname__}", _forward_line(cls))
        entry = self.entries.get(key)
        if entry is None:
            module = sys.modules.get(cls.__module__)
            entry = {"file": getattr(module, "__file__", None), "line": key[1], "calls": []}
            self.entries[key] = entry
        self._keep(entry, args)

    def observe_op(self, name: str, args: tuple[Any, ...]) -> None:
        self._keep(self.op_entries.setdefault(name, {"line": 0, "calls": []}), args)

    def _keep(self, entry: dict[str, Any], args: tuple[Any, ...]) -> None:
        """Add the call to the entry unless it has as many as it keeps or
        one of the same signature."""
        if len(entry["calls"]) >= MAX_CALLS:
            return
        import torch

        with torch.no_grad():
            described = [describe(a) for a in args]
        if signature(described) not in {signature(call["args"]) for call in entry["calls"]}:
            entry["calls"].append({"args": described})
            if self.autosave:
                self.save()

    def save(self) -> None:
        """Merge into the file (other processes, such as pytest-xdist workers,
        may write the same file: they take turns)."""
        from ..core.files import write_atomically
        from ..engine.cache import CACHE_DIR, make_cache_directory

        if not self.entries and not self.op_entries:
            return
        if self.path.parent.name == CACHE_DIR:
            make_cache_directory(self.path.parent)
        else:  # a file the team keeps (and maybe commits): no .gitignore beside it
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path):
            data = read_recording(self.path, strict=False)
            functions = data.setdefault("functions", {})
            for (name, _), entry in self.entries.items():
                merge_entry(functions.setdefault(name, []), entry)
            ops = data.get("ops") if isinstance(data.get("ops"), dict) else {}
            for name, entry in self.op_entries.items():
                merge_entry(ops.setdefault(name, []), entry)
            recorded = {"tool": "autograd-lint", "format": FORMAT, "functions": functions}
            if ops:
                recorded["ops"] = ops
            text = json.dumps(recorded, indent=1)
            write_atomically(self.path, (text + "\n").encode("utf-8"))


def merge_entry(stored: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    same = next((e for e in stored if e.get("line") == entry["line"]), None)
    if same is None:
        stored.append({**entry, "calls": entry["calls"][:MAX_CALLS]})
        return
    known = {signature(call["args"]) for call in same["calls"]}
    for call in entry["calls"]:
        if len(same["calls"]) < MAX_CALLS and signature(call["args"]) not in known:
            same["calls"].append(call)
            known.add(signature(call["args"]))


def _forward_line(cls: type) -> int:
    for klass in cls.__mro__:
        member = vars(klass).get("forward")
        if member is not None:
            function = getattr(member, "__func__", member)
            code = getattr(function, "__code__", None)
            return code.co_firstlineno if code is not None else 0
    return 0


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock = path.with_name(path.name + ".lock")
    try:
        import fcntl
    except ImportError:  # Windows: writers take their chances
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def default_path(start: str | os.PathLike[str]) -> Path:
    """Where recordings go unless told: recorded-calls.json in the cache
    directory ($AUTOGRAD_LINT_CACHE_DIR, else .autograd_lint_cache/ at the
    project's root: its pyproject.toml's directory, else `start`)."""
    from ..core.config import ConfigFinder
    from ..engine.cache import CACHE_DIR

    directory = os.environ.get("AUTOGRAD_LINT_CACHE_DIR")
    if directory:
        return Path(directory) / RECORDING_FILE
    start = Path(start)
    return ConfigFinder(start).for_path(start, is_dir=True).root / CACHE_DIR / RECORDING_FILE


def record_on_import(path: str | os.PathLike[str]) -> Recorder:
    """Record in this process once torch's autograd is imported; save at exit."""
    import atexit

    from ._hooks import after_import

    recorder = Recorder(path, autosave=True)
    atexit.register(recorder.save)
    after_import({"torch.autograd.function": lambda module: recorder.install()})
    return recorder


# Put first on PYTHONPATH by `autograd-lint record`: every Python process the
# command starts records (and still runs a sitecustomize of its own).
SITECUSTOMIZE = f"""\
import os
import sys

if os.environ.get({ENVIRONMENT!r}):
    try:
        from autograd_lint.dynamic.recording import record_on_import

        record_on_import(os.environ[{ENVIRONMENT!r}])
    except Exception as exc:
        sys.stderr.write(f"autograd-lint record: not recording in this process ({{exc}})\\n")
_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _other = os.path.join(_entry or os.curdir, "sitecustomize.py")
    if os.path.abspath(_entry or os.curdir) != _here and os.path.isfile(_other):
        import importlib.util

        _spec = importlib.util.spec_from_file_location("_project_sitecustomize", _other)
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
        break
"""


def record_command(command: list[str], output: Path) -> tuple[int, str]:
    """Run `command` with recording on in every Python process it starts;
    (its exit status, a one-line summary)."""
    import subprocess
    import tempfile

    output = output.resolve()
    before = _count(read_recording(output, strict=False))
    with tempfile.TemporaryDirectory(prefix="autograd-lint-record-") as hooks:
        Path(hooks, "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        existing = os.environ.get("PYTHONPATH")
        env = {**os.environ, ENVIRONMENT: str(output),
               "PYTHONPATH": hooks + (os.pathsep + existing if existing else "")}
        try:
            status = subprocess.call(command, env=env)
        except OSError as exc:
            raise RecordingError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
    functions, calls = _count(read_recording(output, strict=False))
    new = calls - before[1]
    if not output.exists():  # nothing was written: say so, and why it may be
        failed = f"; the command exited with status {status}" if status else ""
        return status, f"nothing recorded{failed} (no Function or custom op was called with " \
            "recording on)"
    summary = f"{new} new call{'' if new == 1 else 's'} recorded ({calls} calls of " \
              f"{functions} Functions and ops in {output})"
    return status, summary


def _count(data: dict[str, Any]) -> tuple[int, int]:
    """(Functions and ops recorded, their calls)."""
    groups = [*data.get("functions", {}).values(), *(data.get("ops") or {}).values()]
    entries = [e for group in groups if isinstance(group, list)
               for e in group if isinstance(e, dict)]
    return len(entries), sum(len(e.get("calls", [])) for e in entries)


# ---------------------------------------------------------------------------
# Reading (the parent, no torch) and rebuilding (the worker)
# ---------------------------------------------------------------------------
class RecordingError(ValueError):
    """A recording file that cannot be used."""


def read_recording(path: str | os.PathLike[str], *, strict: bool = True) -> dict[str, Any]:
    from ..core.files import read_regular_file

    try:
        data = json.loads(read_regular_file(path).decode("utf-8"))
    except FileNotFoundError:
        if strict:
            raise RecordingError(f"recorded calls not found: {path}") from None
        return {}
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad UTF-8 or JSON
        if strict:
            reason = "nested too deeply to be a recording" if isinstance(exc, RecursionError) \
                else exc
            raise RecordingError(f"cannot read recorded calls {path}: {reason}") from None
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            not isinstance(data.get("functions"), dict):
        if strict:
            raise RecordingError(f"{path} is not an autograd-lint recording (format {FORMAT}; "
                                 "make one with `pytest --autograd-record`)")
        return {}
    return data


def calls_for(recording: dict[str, Any], module: str, qualname: str, first_line: int,
              last_line: int) -> list[dict[str, Any]]:
    """The recorded calls of one Function (the class whose lines hold the
    recorded forward, when two classes share a name)."""
    entries = recording.get("functions", {}).get(f"{module}:{qualname}")
    if not isinstance(entries, list) or not entries:
        return []
    inside = [e for e in entries if isinstance(e, dict) and
              isinstance(e.get("line"), int) and first_line <= e["line"] <= last_line]
    chosen = inside or ([entries[0]] if len(entries) == 1 and isinstance(entries[0], dict)
                        else [])
    return [call for entry in chosen for call in entry.get("calls", [])
            if isinstance(call, dict) and isinstance(call.get("args"), list)]


def calls_for_op(recording: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The recorded calls of a custom op ("ns::name"; "::name" when its
    namespace is not known statically: the one op of that name)."""
    ops = recording.get("ops")
    if not isinstance(ops, dict):
        return []
    if name.startswith("::"):
        named = [key for key in ops if key.partition("::")[2] == name[2:]]
        name = named[0] if len(named) == 1 else name
    entries = ops.get(name)
    if not isinstance(entries, list):
        return []
    return [call for entry in entries if isinstance(entry, dict)
            for call in entry.get("calls", [])
            if isinstance(call, dict) and isinstance(call.get("args"), list)]


def size(call: dict[str, Any]) -> int:
    """How many tensor elements a recorded call passes."""
    total = 0
    for spec in call.get("args", ()):
        shape = spec.get("tensor", {}).get("shape") if isinstance(spec, dict) else None
        if isinstance(shape, list):
            count = 1
            for n in shape:
                count *= int(n) if isinstance(n, int) else 1
            total += count
    return total


def recorded_dtypes(call: dict[str, Any]) -> list[str | None]:
    """Each argument's recorded floating dtype ("float32"), None for the rest."""
    found: list[str | None] = []
    for spec in call.get("args", ()):
        tensor = spec.get("tensor") if isinstance(spec, dict) else None
        dtype = tensor.get("dtype") if isinstance(tensor, dict) else None
        found.append(dtype if isinstance(dtype, str) and dtype.startswith(("float", "bfloat"))
                     else None)
    return found


def rebuild(call: dict[str, Any], device: Any, seed: int = 0) -> tuple[tuple[Any, ...],
                                                                        frozenset[int]]:
    """A recorded call's arguments with fresh values; raises ValueError for a
    call that cannot be rebuilt. Returns (args, positions of floating tensors
    the caller did not differentiate)."""
    import torch

    generator = torch.Generator().manual_seed(100 + seed)
    args = []
    frozen = set()
    for index, spec in enumerate(call["args"]):
        value = _rebuild(spec, device, generator)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and \
                not spec["tensor"].get("requires_grad", True):
            frozen.add(index)
        args.append(value)
    return tuple(args), frozenset(frozen)


def _rebuild(spec: Any, device: Any, generator: Any) -> Any:
    import torch

    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError("malformed recorded argument")
    (kind, value), = spec.items()
    if kind == "value":
        return value
    if kind == "dtype":
        return getattr(torch, str(value))
    if kind in ("list", "tuple"):
        items = [_rebuild(v, device, generator) for v in value]
        return items if kind == "list" else tuple(items)
    if kind == "tensor":
        return _rebuild_tensor(value, device, generator)
    if kind == "object":
        return _rebuild_object(value, device, generator)
    if kind == "opaque" and value == "ProcessGroup":
        from .process_group import single_process_group

        return single_process_group()  # the recorded world, shrunk to this process
    raise ValueError(f"a recorded {value} argument cannot be rebuilt")


def _rebuild_object(spec: dict[str, Any], device: Any, generator: Any) -> Any:
    """A recorded dataclass or NamedTuple, constructed again from its fields."""
    import importlib

    module, _, qualname = str(spec.get("class", "")).partition(":")
    try:
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        fields = {name: _rebuild(v, device, generator)
                  for name, v in dict(spec.get("fields", {})).items()}
        return cls(**fields)
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"a recorded {qualname} argument cannot be rebuilt ({exc})") from None


def _rebuild_tensor(spec: dict[str, Any], device: Any, generator: Any) -> Any:
    import torch

    shape = tuple(int(n) for n in spec["shape"])
    dtype = getattr(torch, spec["dtype"])
    if dtype.is_floating_point or dtype.is_complex:
        low, high = spec.get("range", (0.5, 1.5))
        if not high > low:
            low, high = low - 0.5, low + 0.5
        values = torch.rand(shape, dtype=torch.float64, generator=generator) * (high - low) + low
        if dtype.is_complex:
            values = torch.complex(values, values.flip(-1) if values.dim() else values)
        leaf = _strided(values.to(device), spec.get("stride"))
        return leaf.detach().requires_grad_(bool(spec.get("requires_grad", True)))
    if "values" in spec:
        return torch.tensor(spec["values"], dtype=dtype).reshape(shape).to(device)
    low, high = spec.get("range", (0, 1))
    return torch.randint(int(low), int(high) + 1, shape, generator=generator,
                         dtype=torch.int64).to(dtype).to(device)


def _strided(values: Any, stride: Any) -> Any:
    """`values` laid out with the recorded strides when they were neither
    contiguous nor overlapping (a transposed or sliced input), else as is."""
    import torch

    if not isinstance(stride, list) or len(stride) != values.dim() or \
            list(values.stride()) == stride or any(s <= 0 for s in stride):
        return values
    extent = 1 + sum((n - 1) * s for n, s in zip(values.shape, stride, strict=True))
    if extent < values.numel():
        return values  # overlapping memory: finite differences cannot perturb one element
    base = torch.zeros(extent, dtype=values.dtype, device=values.device)
    view = base.as_strided(values.shape, stride)
    view.copy_(values)
    return view
