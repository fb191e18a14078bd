"""A custom op in the worker: found in torch's registry by name, and the
inputs it is checked with (recorded calls first, then synthesis from its
Python signature, the way a Function's forward is synthesized for).

An op is presented to the Function machinery as a stand-in class whose
`forward` has the schema's parameters (exact types; defaults and dtype
annotations as the Python implementation writes them) and reads as that
implementation (synthesis learns from its source and its failing
statements), and whose `apply` calls the op through the dispatcher, as its
callers do.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from .errors import NotChecked, Unsynthesizable, environmental, first_line, out_of_memory
from .inputs import Inputs, Synthesis, recorded
from .precision import LADDER
from .probing import identical, map_tensors, tensors_of
from .recording import TORCH_NAMESPACES
from .target import Target


def all_op_names() -> set[str]:
    """Every operator name the dispatcher knows now ("ns::name")."""
    return set(torch._C._dispatch_get_all_op_names())


def find_op(name: str, known_before: set[str]) -> Any:
    """The OpOverload of `name` ("ns::name", or "::name" when the namespace
    was not known statically: the op of that name the module's import
    registered)."""
    namespace, _, short = name.partition("::")
    if not namespace:
        found = sorted(n for n in all_op_names() - known_before
                       if n.partition("::")[2].split(".")[0] == short and
                       n.partition("::")[0] not in TORCH_NAMESPACES)
        if len(found) != 1:
            raise NotChecked(f"no op named `{short}` was registered by importing the module"
                             if not found else f"`{short}` names several ops: "
                             f"{', '.join(found)}")
        namespace, _, short = found[0].partition("::")
    short, _, overload = short.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), short)
    except (AttributeError, RuntimeError):
        raise NotChecked(f"`{namespace}::{short}` is not registered once the module is "
                         "imported (registered by code that did not run?)") from None
    overloads = packet.overloads()
    chosen = overload or ("default" if "default" in overloads else
                          overloads[0] if len(overloads) == 1 else None)
    if chosen is None:
        raise NotChecked(f"`{namespace}::{short}` has several overloads: "
                         f"{', '.join(overloads)}")
    return getattr(packet, chosen)


def python_impl(op: Any, module: Any, qualname: str) -> Callable[..., Any] | None:
    """The op's Python implementation, where its source can be read: a
    custom_op's decorated function (also inside the wrapper triton_op keeps),
    else the module's function of the op's Python name."""
    from torch._library.custom_ops import OPDEFS

    definition = OPDEFS.get(op._schema.name)
    candidate = definition._init_fn if definition is not None else getattr(module, qualname,
                                                                             None)
    if not inspect.isfunction(candidate):
        return None
    if _named_parameters(candidate):
        return candidate
    inner = [cell.cell_contents for cell in candidate.__closure__ or ()
             if inspect.isfunction(cell.cell_contents) and _named_parameters(cell.cell_contents)]
    return inner[0] if len(inner) == 1 else None


def fake_is_impl(op: Any, impl: Callable[..., Any] | None) -> bool:
    """Whether the op's fake is its implementation (a triton_op: traced
    through its kernels under fake tensors)."""
    from torch._library.custom_ops import OPDEFS

    definition = OPDEFS.get(op._schema.name)
    return impl is not None and getattr(definition, "_abstract_fn", None) is impl


def _named_parameters(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def op_stand_in(op: Any, impl: Callable[..., Any] | None) -> type:
    """A class the Function machinery takes. Its `forward` has the schema's
    parameters (their types are exact) and reads as the op's Python
    implementation where there is one (synthesis learns from its source and
    its failing statements); `apply` calls the op."""

    def forward(*args: Any) -> None:
        raise NotImplementedError  # never called: it carries the signature and the source

    forward.__signature__ = _schema_signature(op, impl)  # type: ignore[attr-defined]
    forward.__annotations__ = {}
    if impl is not None:
        forward.__wrapped__ = impl  # type: ignore[attr-defined]

    def apply(*args: Any) -> Any:
        return op(*args)

    return type(f"op:{op._schema.name}", (), {
        "forward": staticmethod(forward), "apply": staticmethod(apply),
        "setup_context": None,  # every parameter of forward is an input (no ctx)
    })


# Schema types synthesis reads as annotations (a dtype is an `int` in a
# schema: the Python implementation's annotation tells them apart).
_ANNOTATIONS = {"int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str"}
# Parameters with one sensible value get it when they have no default.
_FIXED = {"dtype": torch.float32, "ScalarType": torch.float32, "Device": torch.device("cpu"),
          "device": torch.device("cpu"), "Layout": torch.strided,
          "MemoryFormat": torch.contiguous_format}


def _schema_signature(op: Any, impl: Callable[..., Any] | None) -> inspect.Signature:
    """The schema's positional parameters; defaults as the Python
    implementation writes them (a schema keeps a dtype as its number)."""
    try:
        written = inspect.signature(impl).parameters if impl is not None else {}
    except (TypeError, ValueError):
        written = {}
    parameters = []
    for argument in op._schema.arguments:
        if argument.kwarg_only:
            break
        type_name = str(getattr(argument, "real_type", argument.type))  # ScalarType, not int
        python = written.get(argument.name)
        kind = _python_kind(python) or type_name.removeprefix("Optional[").removesuffix("]")
        default = python.default if python is not None else (
            argument.default_value if argument.has_default_value() else
            inspect.Parameter.empty)
        if default is inspect.Parameter.empty and kind in _FIXED:
            default = _FIXED[kind]
        annotation = "Tensor" if "Tensor" in type_name else _ANNOTATIONS.get(
            kind, inspect.Parameter.empty)
        parameters.append(inspect.Parameter(argument.name,
                                            inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=default, annotation=annotation))
    # A fixed value may precede a parameter without a default: not a valid
    # Python signature, and none is needed (synthesis reads each parameter).
    return inspect.Signature(parameters, __validate_parameters__=False)


def _python_kind(parameter: inspect.Parameter | None) -> str | None:
    """"dtype" or "device" when the implementation annotates the parameter so."""
    text = str(parameter.annotation) if parameter is not None else ""
    return next((word for word in ("dtype", "device") if word in text), None)


def tensor_list_positions(op: Any) -> list[int]:
    return [i for i, a in enumerate(op._schema.arguments)
            if not a.kwarg_only and "Tensor" in str(a.type) and
            str(a.type).replace("Optional[", "").startswith(("List[", "Tensor[]"))]


def tensor_names(op: Any) -> frozenset[str]:
    return frozenset(a.name for a in op._schema.arguments if "Tensor" in str(a.type))


def choose_op_inputs(target: Target, op: Any, calls: list[dict[str, Any]],
                     ask_fake: bool = True) -> Inputs:
    """Recorded calls the op takes, else synthesized inputs it takes (the
    first dtype of the ladder it computes in, finite, repeatable outputs)
    and, with `ask_fake`, its fake takes."""
    if calls:
        errors = []
        for candidate in recorded(target.cls, calls, target.device):
            taken, error = _on_ladder(target, candidate)
            if taken is not None:
                return taken
            errors.append(error)
        if errors and not all(environmental(e) for e in errors):
            raise NotChecked(f"the op refuses its recorded calls: {errors[0]}")
    try:
        synthesis = Synthesis(target.cls, target.device, tensor_names(op))
    except Unsynthesizable as exc:
        raise NotChecked(f"cannot synthesize inputs: {exc}") from None
    lists = tensor_list_positions(op)
    errors = []
    try:
        for candidate in synthesis:
            taken, error = _on_ladder(target, _listed(candidate, lists), synthesis)
            refused = fake_refusal(op, taken) if taken is not None and ask_fake else None
            if taken is not None and refused is None:
                return taken
            error = refused or error
            errors.append(error)
            synthesis.learn(error)
    except Unsynthesizable as exc:
        raise NotChecked(f"cannot synthesize inputs: {exc}") from None
    last = errors[-1] if errors else "the op takes no inputs that can be synthesized"
    if errors and out_of_memory(last):  # the machine's limit: as a MemoryError is
        raise NotChecked(f"ran out of memory on every input tried (last try: {last})")
    if environmental(last):
        raise NotChecked(f"the op needs what this machine lacks (last try: {last})")
    raise NotChecked(f"could not build inputs the op accepts (last try: {last}); record the "
                     "project's own calls (`pytest --autograd-record`)")


def _on_ladder(target: Target, candidate: Inputs, synthesis: Synthesis | None = None
               ) -> tuple[Inputs | None, str]:
    """The candidate in the first dtypes the op takes (each input in its
    callers' own dtype first, when recorded; then one dtype for all, down
    the ladder), moving on while the op's complaint is about the dtype;
    (None, the last error) when it takes none. `synthesis` learns from the
    statement that raised."""
    error = ""
    native = candidate.in_native_dtypes()
    trials = [native] if native is not None else []
    trials += [candidate.with_dtype(dtype) for dtype in LADDER]
    for trial in trials:
        trial = without_grad(trial)
        try:
            found = op_error(target, trial, raising=True)
        except _Raised as raised:
            found = first_line(raised.exc)
            if synthesis is not None and "type" not in found.lower():
                synthesis.learn_from(raised.exc, trial)
        if found is None:
            return trial, ""
        error = found
        if "type" not in error.lower():
            break
    return None, error


class _Raised(Exception):
    """The op raised on a candidate (the exception, for synthesis to read)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


def fake_refusal(op: Any, inputs: Inputs) -> str | None:
    """What the op's fake says against made-up inputs the kernel took (None:
    nothing): a fake that checks its inputs (`torch._check(A.dtype ==
    torch.int8)`) states the op's contract, which a guess must meet before
    the fake is judged by it. Only errors raised while the project's own
    code ran count: torch's (no fake registered, say) are opcheck's to report."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())  # a fake may make dynamic sizes
    try:
        args = tuple([mode.from_tensor(v) for v in a] if isinstance(a, list) else
                     mode.from_tensor(a) if isinstance(a, torch.Tensor) else a
                     for a in copies(inputs.args))
        with mode:
            op(*args)
    except Exception as exc:
        if _raised_in_project_code(exc):
            return f"the op's fake refuses them: {first_line(exc)}"
    return None


def _raised_in_project_code(exc: BaseException) -> bool:
    """Whether a frame of the traceback is outside torch and autograd-lint."""
    import os

    ours = (os.path.dirname(os.path.abspath(torch.__file__)),  # torch's package
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # autograd_lint
    frame = exc.__traceback__
    while frame is not None:
        filename = os.path.abspath(frame.tb_frame.f_code.co_filename)
        if not filename.startswith(ours) and "<" not in filename:
            return True
        frame = frame.tb_next
    return False


def _listed(candidate: Inputs, positions: list[int]) -> Inputs:
    """A list-of-tensors parameter gets a list of two of the tensors made for it."""
    for index in positions:
        value = candidate.args[index] if index < len(candidate.args) else None
        if isinstance(value, torch.Tensor):
            candidate = candidate.with_arg(index, [value, value.detach().clone()])
    return candidate


def without_grad(inputs: Inputs) -> Inputs:
    return replace(inputs, args=map_tensors(inputs.args, lambda t: t.detach().clone()))


def with_grad(inputs: Inputs) -> Inputs:
    """Floating tensors require grad: an op with an autograd formula."""
    return replace(inputs, args=map_tensors(inputs.args, lambda t: t.detach().clone(
        ).requires_grad_(True) if t.is_floating_point() else t))


def op_error(target: Target, inputs: Inputs, raising: bool = False) -> str | None:
    """Why the op refuses the inputs (None: it takes them): it raises, an
    output is empty or not finite, or two identical calls differ (memory a
    kernel leaves unwritten for these sizes). With `raising`, what the op
    raised comes out as `_Raised`."""
    try:
        first, second = _twice(target, inputs)
    except Exception as exc:
        if raising:
            raise _Raised(exc) from None
        return first_line(exc)
    if any(t.numel() == 0 for t in first):
        return "an output is empty"
    if not all(bool(torch.isfinite(t).all()) for t in first if t.is_floating_point()):
        return "non-finite outputs"
    if not identical(first, second) and not repeats(target, inputs, seed=0):
        return "identical calls give different results"
    return None


def repeats(target: Target, inputs: Inputs, seed: int | None = None) -> bool:
    """Whether two calls give the same outputs (with `seed`, each after
    seeding torch's generator: a random op repeats itself then). A call that
    raises is not this question's to answer: True."""
    try:
        return identical(*_twice(target, inputs, seed))
    except Exception:
        return seed is None


def _twice(target: Target, inputs: Inputs, seed: int | None = None
           ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The op's tensor outputs from two calls on fresh copies of the inputs."""
    runs = []
    with torch.no_grad():
        for _ in range(2):
            if seed is not None:
                torch.manual_seed(seed)
            runs.append(tensors_of(target.apply(*copies(inputs.args))))
    return runs[0], runs[1]


def copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies, lists of tensors included (the op may write its inputs)."""
    return map_tensors(args, lambda t: t.detach().clone().requires_grad_(t.requires_grad))
