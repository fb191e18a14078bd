"""Child process of the dynamic mode: import one module, check its Functions.

    python -m autograd_lint.dynamic.worker REQUEST.json RESULT.json

The request names the module, its import root, the Functions (qualified
names and static facts) and the device. The result file is rewritten after
each Function, so a later hang or crash keeps what was already found. The
linter enforces the timeout and reads crashes from the exit status; the
worker runs under a guardian (`guardian.py`), in a scratch folder, and dies
with its parent.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _write(path: str, result: dict[str, Any]) -> None:
    from ..core.files import write_atomically

    write_atomically(path, json.dumps(result).encode("utf-8"))


def _die_with_parent() -> None:
    """Die with the guardian's shield that started this worker (`guardian.py`):
    a worker whose run is gone must not go on computing."""
    from .guardian import PARENT_VARIABLE, die_with_parent

    parent = os.environ.pop(PARENT_VARIABLE, "")  # the checked code's children need not see it
    if parent.isdigit() and not die_with_parent(int(parent)):
        os._exit(1)  # the parent is gone already


def _limit_memory(megabytes: int | None) -> None:
    """Limit the address space to what the worker holds now (torch imported:
    a CUDA build of torch maps gigabytes) plus `megabytes` for the checked code."""
    if not megabytes:
        return
    try:
        import resource

        limit = _address_space() + megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass  # not on this platform: the parent's timeout still applies


def _address_space() -> int:
    """Bytes of address space this process maps (0 where it cannot be read)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _import(module: str, path: str, root: str, left_out: list[str]) -> Any:
    """The module at `path`. A parent package whose `__init__` raises (it
    imports a compiled extension, or refuses without a GPU) is left out
    and named in `left_out`, when the module itself then imports."""
    import importlib

    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module and not module.startswith(f"{exc.name}."):
            return _import_past_parents(module, path, root, exc, left_out)
        # Not importable by name (no package on the path): load the file itself.
        return _load_file(module, path)
    except Exception as exc:
        return _import_past_parents(module, path, root, exc, left_out)
    if _same_file(getattr(loaded, "__file__", None), path):
        return loaded
    if "." in module:
        raise ImportError(f"`import {module}` gives {loaded.__file__}, not this file "
                          "(another package of that name comes first on sys.path)")
    # A top-level module whose name something else took first (the standard
    # library's `types`, an installed `utils`): the file itself, under a name
    # of its own so that the other module stays what its users imported.
    return _load_file(f"_autograd_lint_target_{module}", path)


def _import_past_parents(module: str, path: str, root: str, error: Exception,
                         left_out: list[str]) -> Any:
    """Import `module` with each parent package whose `__init__` raises
    replaced by an empty package of the same folder; re-raise `error` when
    no parent raised or the module fails all the same."""
    import importlib

    parents = [".".join(module.split(".")[:n]) for n in range(1, module.count(".") + 1)]
    replaced: list[str] = []
    for parent in parents:
        try:
            importlib.import_module(parent)
        except Exception as exc:
            _forget(parent)
            sys.modules[parent] = _empty_package(parent, root)
            if "." in parent:
                setattr(sys.modules[parent.rpartition(".")[0]], parent.rpartition(".")[2],
                        sys.modules[parent])
            replaced.append(f"`{parent.replace('.', '/')}/__init__.py` (it raised "
                            f"{_first_line(exc)})")
    if not replaced:
        raise error
    _forget(module)
    try:
        loaded = importlib.import_module(module)
    except Exception:
        raise error from None
    if not _same_file(getattr(loaded, "__file__", None), path):
        raise error  # another package of that name: not the file under check
    left_out.extend(replaced)
    return loaded


def _forget(name: str) -> None:
    """Drop a partly imported package and its submodules from sys.modules."""
    for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
        del sys.modules[key]


def _empty_package(name: str, root: str) -> Any:
    import importlib.machinery
    import types

    folder = os.path.join(root, *name.split("."))
    package = types.ModuleType(name)
    package.__path__ = [folder]
    package.__package__ = name
    package.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    package.__spec__.submodule_search_locations = [folder]
    return package


def _first_line(exc: BaseException) -> str:
    from .errors import first_line

    return first_line(exc)


def _load_file(name: str, path: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def _same_file(found: str | None, path: str) -> bool:
    if not found:
        return False
    try:
        return os.path.samefile(found, path)
    except OSError:
        return False


def _defined_at(cls: Any, method_lines: list[list[Any]]) -> bool:
    """Whether a class is the definition whose methods start at these lines
    (a name bound to two classes in turn names the last one that ran)."""
    import inspect

    for name, line in method_lines:
        member = cls.__dict__.get(name)
        function = getattr(member, "__func__", member)
        try:
            code = inspect.unwrap(function).__code__
        except (AttributeError, ValueError):
            continue
        return code.co_firstlineno == line
    return False  # nothing to tell them apart by: do not guess


def _stood_in(names: list[str]) -> list[str]:
    from .cuda_cpu import ALLOCATIONS

    said = [ALLOCATIONS] if ALLOCATIONS in names else []
    queries = [n for n in names if n != ALLOCATIONS]
    if queries:
        said.append("CUDA queries answered by CPU stand-ins "
                    f"({', '.join(f'`{n}`' for n in queries)})")
    return said


def _describe_import_error(exc: BaseException, root: str = "") -> str:
    from .errors import out_of_memory

    if isinstance(exc, SystemExit):
        return f"importing the module called sys.exit({exc.code!r})"
    if out_of_memory(exc):
        return "importing the module ran out of memory"
    from .errors import first_line, raised_at

    return f"importing the module raised {first_line(exc)}{raised_at(exc, root)}"


def _own_modules(root: str, checked: Any) -> list[Any]:
    """The checked module and the modules imported from under its import root
    (the project's own code, not installed libraries)."""
    prefix = os.path.realpath(root) + os.sep
    own = [checked]
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if module is not checked and isinstance(path, str) and \
                os.path.realpath(path).startswith(prefix) and "site-packages" not in path:
            own.append(module)
    return own


def worker_gpu(xdist_worker: str | None, gpus: int) -> int:
    """The GPU of a pytest-xdist worker (`gw5`: the sixth, modulo the GPUs
    there are), so that `pytest --autograd-gradcheck -n N` spreads its
    Functions over the machine's GPUs; 0 outside xdist."""
    if not xdist_worker or gpus <= 1 or not xdist_worker.startswith("gw") or \
            not xdist_worker[2:].isdigit():
        return 0
    return int(xdist_worker[2:]) % gpus


def _function_target(spec: dict[str, Any], module: Any, device: Any, stand_ins: Any) -> Any:
    """The Function class of `spec` in the imported module, as a `Target`."""
    from .checks import NotChecked, Target

    qualname = spec["qualname"]
    cls: Any = module
    for part in qualname.split("."):
        if part == "<locals>":
            raise NotChecked("defined inside a function: not importable")
        cls = getattr(cls, part)
    if spec.get("rebound_at") and not _defined_at(cls, spec["method_lines"]):
        raise NotChecked(f"`{qualname}` names another class once the module has "
                         f"run (bound again at line {spec['rebound_at']}): this one "
                         "is not importable by name")
    return Target(cls, spec["once_differentiable"], spec["has_jvp"], spec["has_vmap"], device,
                  legacy=spec.get("legacy", False),
                  tensor_hints=frozenset(spec.get("tensor_inputs", ())),
                  emulated=lambda: _emulated(stand_ins))


def _check_function(spec: dict[str, Any], module: Any, device: Any, stand_ins: Any,
                    request: dict[str, Any], entry: dict[str, Any]) -> None:
    """Every check of one Function class (`checks.py`)."""
    from .checks import run_all

    target = _function_target(spec, module, device, stand_ins)
    _budget_extras(target, request)
    target.watch = (request["path"], frozenset(spec.get("watch", ())))
    used = run_all(target, spec.get("recorded", ()))
    entry["findings"] = target.findings
    entry["probed"] = sorted(target.probed)
    entry["reached"] = sorted(target.reached)
    entry["inputs"] = used.describe() if used is not None else "none"
    entry["precision"] = target.precision.describe()


def _budget_extras(target: Any, request: dict[str, Any]) -> None:
    """The extra probes get what is left of the first 60% of the per-target
    timeout: they never cost the target its verdict."""
    if request.get("timeout"):
        target.extras_until = time.monotonic() + 0.6 * float(request["timeout"])


def _emulated(stand_ins: Any) -> bool:
    """CUDA queries answered on the CPU, or Triton run by its interpreter."""
    return bool(stand_ins.used) or (
        "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") == "1")


def _op_target(spec: dict[str, Any], module: Any, device: Any, known_ops: set[str],
               stand_ins: Any) -> tuple[Any, Any, bool]:
    """The op of `spec` as a `Target` (`op_inputs.op_stand_in`), the op, and
    whether its fake is its implementation."""
    from .op_inputs import fake_is_impl, find_op, op_stand_in, python_impl
    from .target import Target

    op = find_op(spec["op"], known_ops)
    impl = python_impl(op, module, spec["qualname"])
    target = Target(op_stand_in(op, impl), False, False, False, device,
                    emulated=lambda: _emulated(stand_ins))
    return target, op, fake_is_impl(op, impl)


def _check_op(spec: dict[str, Any], module: Any, device: Any, known_ops: set[str],
              stand_ins: Any, request: dict[str, Any], entry: dict[str, Any]) -> None:
    """opcheck one custom op (and compare it compiled): `op_checks.py`."""
    from .op_checks import run_op_checks

    target, op, fake_is_impl = _op_target(spec, module, device, known_ops, stand_ins)
    _budget_extras(target, request)
    used = run_op_checks(target, op, list(spec.get("recorded", ())),
                         spec.get("op_autograd", False), fake_is_impl)
    entry["findings"] = target.findings
    entry["inputs"] = used.describe()
    entry["precision"] = target.precision.describe()


def _importable(name: str, path: str) -> bool:
    """Whether `import name` finds this file (a test imports it so)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and _same_file(spec.origin, path)


def _plan_test(spec: dict[str, Any], module: Any, device: Any, known_ops: set[str],
               stand_ins: Any, request: dict[str, Any], entry: dict[str, Any]) -> None:
    """What the test `coverage --write-tests` writes for it does (`written_plans.py`)."""
    from .written_plans import plan_function, plan_op

    calls = list(spec.get("recorded", ()))
    if spec.get("op"):
        target, op, fake_is_impl = _op_target(spec, module, device, known_ops, stand_ins)
        plan = plan_op(target, op, calls, spec.get("op_autograd", False),
                       traceable=not (fake_is_impl and target.emulated()))
    else:
        plan = plan_function(_function_target(spec, module, device, stand_ins), calls)
    plan["device"] = str(device)
    plan["by_name"] = _importable(request["module"], request["path"])
    plan["triton"] = "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") == "1"
    entry["plan"] = plan
    entry["inputs"] = plan.get("describe", "none")


def main(request_path: str, result_path: str) -> int:
    _die_with_parent()
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    # `-m` put the working directory first on sys.path: a project's own
    # `copy.py` or `types.py` would shadow the standard library under torch.
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # the module's own root goes back on after torch is imported
    result: dict[str, Any] = {"functions": {}, "module_error": None, "device": None}
    _write(result_path, result)
    # User code may print; keep our protocol on a file and theirs on stderr.
    sys.stdout = sys.stderr
    try:
        import torch
    except BaseException as exc:  # reported, whatever it is
        reason = "it ran out of memory (raise --memory-limit)" if isinstance(exc, MemoryError) \
            else f"{type(exc).__name__}: {exc}"
        result["module_error"] = f"torch cannot be imported here ({reason})"
        _write(result_path, result)
        return 0
    device_name = request["device"]
    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    if device_name == "cuda" and not torch.cuda.is_available():
        result["module_error"] = "--device cuda, but CUDA is not available"
        _write(result_path, result)
        return 0
    result["device"] = device_name
    gpu = 0
    if device_name == "cuda":  # pytest-xdist's workers: one GPU each, in turn
        gpu = worker_gpu(os.environ.get("PYTEST_XDIST_WORKER"), torch.cuda.device_count())
        torch.cuda.set_device(gpu)
    if device_name == "cpu":
        # Only now: CUDA reserves far more address space than any limit allows,
        # and `--device auto` is only decided here.
        _limit_memory(request.get("memory_limit_mb"))
    from .cuda_cpu import StandIns  # only now: a project's `copy.py` is off sys.path

    stand_ins = StandIns()
    if device_name == "cpu":
        stand_ins.install(torch)  # a wrapper's CUDA queries, answered on the CPU
    if device_name == "cpu" and request.get("triton_interpreter", True):
        from .triton_cpu import install

        install()  # Triton kernels, if the module has any, run on the CPU
    left_out: list[str] = []
    known_ops: set[str] = set()
    if any(spec.get("op") for spec in request["functions"]):
        from .op_inputs import all_op_names

        known_ops = all_op_names()  # an op found by name alone is one the import adds
    try:
        module = _import(request["module"], request["path"], request["import_root"], left_out)
    except BaseException as exc:  # user code: anything can come out
        result["module_error"] = _describe_import_error(exc, request["import_root"])
        _write(result_path, result)
        return 0
    imported = [f"imported with {', '.join(left_out)} left out"] if left_out else []
    if device_name == "cpu":
        stand_ins.allocations_on_cpu(torch, _own_modules(request["import_root"], module))
    stand_ins.take()  # what importing asked is no Function's

    torch.manual_seed(0)
    device = torch.device(device_name, gpu) if device_name == "cuda" else torch.device(device_name)
    for spec in request["functions"]:
        entry: dict[str, Any] = {"findings": [], "reason": None, "inputs": None}
        result["functions"][spec["key"]] = entry

        def check(spec: dict[str, Any] = spec, entry: dict[str, Any] = entry) -> None:
            _check_target(spec, module, device, known_ops, stand_ins, request, entry, imported)

        if device.type == "cpu" and hasattr(os, "fork"):
            _check_in_child(check, entry)
        else:  # a CUDA context does not survive a fork
            check()
        _write(result_path, result)
    return 0


def _check_target(spec: dict[str, Any], module: Any, device: Any, known_ops: set[str],
                  stand_ins: Any, request: dict[str, Any], entry: dict[str, Any],
                  imported: list[str]) -> None:
    """One Function's or op's checks (or test plan), into `entry`."""
    from .checks import NotChecked, first_line
    from .errors import out_of_memory

    try:
        if request.get("purpose") == "plan":
            _plan_test(spec, module, device, known_ops, stand_ins, request, entry)
        elif spec.get("op"):
            _check_op(spec, module, device, known_ops, stand_ins, request, entry)
        else:
            _check_function(spec, module, device, stand_ins, request, entry)
        entry["context"] = imported + _stood_in(stand_ins.take())
    except NotChecked as exc:
        entry["reason"] = str(exc)
    except BaseException as exc:  # sys.exit and friends from user code
        if out_of_memory(exc):  # MemoryError, or torch's allocators failing
            entry["reason"] = "ran out of memory"
        elif isinstance(exc, SystemExit):
            entry["reason"] = f"the Function called sys.exit({exc.code!r})"
        elif isinstance(exc, KeyboardInterrupt):
            raise
        else:
            entry["reason"] = f"checking raised {first_line(exc)}"


def _check_in_child(check: Any, entry: dict[str, Any]) -> None:
    """Run one target's checks in a forked child of the worker: a kernel that
    crashes the process (Triton's interpreter writing out of bounds for a
    guessed shape) costs that target its verdict, not every other target of
    the module. Each target starts from the module as imported, and from
    the same random state."""
    import signal

    from .isolation import exited_cleanly, run_forked

    def work() -> bytes:
        check()
        return json.dumps(entry).encode("utf-8")

    payload, status = run_forked(work)
    if exited_cleanly(status):
        try:
            entry.update(json.loads(payload.decode("utf-8")))
            return
        except ValueError:
            pass
    if status is not None and os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        entry["reason"] = f"its check was killed by {name}"
    else:
        entry["reason"] = "its check ended without a result"


if __name__ == "__main__":
    code = main(sys.argv[1], sys.argv[2])
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: user threads must not hold us
