"""Inputs for a Function's checks, best first: calls recorded from the
project's own tests (`recording.py`), examples declared next to the Function,
then synthesis from forward's signature. Runs in the worker (imports torch).

Synthesis gives each tensor parameter a *role* from its name (the main
operand, a per-feature vector like `weight`/`bias`/`gamma`, a weight matrix,
class labels, a mask, a cos/sin table) and tries *layouts* that size those
roles consistently: elementwise (all alike), rows (`x[3, 4]`, `weight[4]`),
logits with labels (`x[3, 5]`, `target[3]` in 0..4), a linear head
(`x[3, 4]`, `weight[5, 4]`, `target[3]`), sequences, attention heads and
channels. No dimension is 1 (a slice `x[1:]` would be empty and hide a bug)
and dimensions differ (a transposed gradient cannot pass for the right one).
Forward's error messages steer the search: an unpacking error names the rank
it wanted, a dtype complaint moves down the precision ladder, an
AttributeError on a number makes that number a tensor.
"""
from __future__ import annotations

import enum
import inspect
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from . import EXAMPLES_ATTRIBUTE
from .bundles import annotated_class, build, is_bundle, refuse
from .demands import DemandReader
from .errors import Unsynthesizable
from .literals import compared_strings
from .number_uses import numbers_wanted
from .parameter_names import (
    BOOL_PREFIXES,
    INDEX_NAMES,
    KNOWN_VALUES,
    LONGEST,
    LONGEST_NAME,
    OFFSETS_NAME,
    SCALARS,
    SINGLE_PROCESS_GROUP,
    STATE_NAME,
    TENSOR_NAMES,
    classify,
    is_output_buffer,
    names_a_group,
    packing_role,
    scalar_annotation,
    tensor_role,
)
from .process_group import is_process_group, single_process_group
from .signatures import forward_of, forward_parameters

RECORDED, DECLARED, SYNTHESIZED = "recorded", "declared", "synthesized"


# The sizes synthesis gives dimensions (distinct, none of them 1).
ROWS, HIDDEN, VOCAB = 3, 4, 5
BATCH, SEQUENCE, HEADS, HEAD_DIM = 2, 3, 2, 4
CHANNELS, GROUPS, LENGTH = 4, 2, 3


@dataclass(frozen=True)
class Layout:
    """Consistent shapes for the roles of a Function's tensor parameters."""

    name: str
    main: tuple[int, ...]
    vector: tuple[int, ...] | None = None  # None: like main
    matrix: tuple[int, ...] | None = None  # None: like vector
    table: tuple[int, ...] | None = None  # None: like main
    labels_high: int = HIDDEN  # class labels are in [0, labels_high)
    target_is_labels: bool = False  # `target` holds class labels (else like main)
    sizes: tuple[tuple[str, int], ...] = ()  # integer parameters named after a dimension

    @property
    def rank(self) -> int:
        return len(self.main)


_DIM_SIZES = (("hidden", HIDDEN), ("hidden_size", HIDDEN), ("n_cols", HIDDEN),
              ("vocab_size", VOCAB), ("num_heads", HEADS), ("n_heads", HEADS),
              ("head_dim", HEAD_DIM), ("seq_len", SEQUENCE))
LAYOUTS: tuple[Layout, ...] = (
    Layout("elementwise", (ROWS, HIDDEN)),
    Layout("rows", (ROWS, HIDDEN), vector=(HIDDEN,), matrix=(VOCAB, HIDDEN), sizes=_DIM_SIZES),
    Layout("logits", (ROWS, VOCAB), vector=(VOCAB,), labels_high=VOCAB, target_is_labels=True,
           sizes=_DIM_SIZES),
    Layout("linear", (ROWS, HIDDEN), vector=(VOCAB,), matrix=(VOCAB, HIDDEN), labels_high=VOCAB,
           target_is_labels=True, sizes=_DIM_SIZES),
    Layout("linear-soft", (ROWS, HIDDEN), vector=(VOCAB,), matrix=(VOCAB, HIDDEN),
           labels_high=VOCAB, sizes=_DIM_SIZES),
    Layout("vector", (VOCAB,)),
    Layout("sequence", (BATCH, SEQUENCE, HIDDEN), vector=(HIDDEN,), matrix=(VOCAB, HIDDEN),
           sizes=_DIM_SIZES),
    Layout("sequence-logits", (BATCH, SEQUENCE, VOCAB), vector=(VOCAB,), labels_high=VOCAB,
           target_is_labels=True, sizes=_DIM_SIZES),
    Layout("heads", (BATCH, HEADS, SEQUENCE, HEAD_DIM), vector=(HEAD_DIM,),
           table=(BATCH, SEQUENCE, HEAD_DIM), sizes=_DIM_SIZES),
    Layout("heads-last", (BATCH, SEQUENCE, HEADS, HEAD_DIM), vector=(HEAD_DIM,),
           table=(BATCH, SEQUENCE, HEAD_DIM), sizes=_DIM_SIZES),
    Layout("channels", (BATCH, CHANNELS, LENGTH), vector=(CHANNELS,),
           sizes=(("num_channels", CHANNELS), ("channels", CHANNELS),
                  ("in_channels", CHANNELS), ("num_groups", GROUPS))),
    Layout("elementwise-3d", (BATCH, SEQUENCE, HIDDEN)),
    Layout("elementwise-4d", (BATCH, HEADS, SEQUENCE, HEAD_DIM)),
)
MAX_CANDIDATES = 48  # forward calls synthesis may spend on one Function
MAX_PER_LAYOUT = 4


@dataclass
class Inputs:
    """One set of arguments for `apply`, and where it came from."""

    args: tuple[Any, ...]
    names: list[str]
    source: str  # RECORDED | DECLARED | SYNTHESIZED
    none_defaults: list[int] = field(default_factory=list)  # positions given a tensor
    # for a parameter that defaults to None
    flags: list[int] = field(default_factory=list)  # bool flags synthesis chose
    frozen: frozenset[int] = frozenset()  # inputs the caller does not differentiate
    layout: str = ""
    # The floating dtype callers pass for each input (a recording or a
    # declaration says; None: unknown), whatever dtype the checks use.
    native: tuple[torch.dtype | None, ...] = ()

    def native_dtype(self, index: int) -> torch.dtype | None:
        return self.native[index] if index < len(self.native) else None

    @property
    def trusted(self) -> bool:
        """Inputs the project itself uses: an error with them is the code's."""
        return self.source != SYNTHESIZED

    def describe(self) -> str:
        if self.source == DECLARED:
            return "declared inputs"
        return f"{self.source} inputs " + ", ".join(
            f"{name}={short(value)}" for name, value in zip(self.names, self.args, strict=False))

    def name(self, index: int) -> str:
        return self.names[index] if index < len(self.names) else f"arg{index}"

    def with_dtype(self, dtype: torch.dtype) -> Inputs:
        """The same inputs with floating tensors in `dtype`."""
        return replace(self, args=tuple(_as_dtype(a, dtype) for a in self.args))

    def in_native_dtypes(self) -> Inputs | None:
        """The same inputs with each floating tensor in the dtype its caller
        passed or declared (float64 is the checks' choice, and kernels refuse
        it); None when that is float64 already."""
        args = tuple(_as_dtype(a, self.native_dtype(i))
                     if isinstance(a, torch.Tensor) and self.native_dtype(i) is not None and
                     self.native_dtype(i).is_floating_point else a  # type: ignore[union-attr]
                     for i, a in enumerate(self.args))
        if all(not isinstance(a, torch.Tensor) or a.dtype == b.dtype
               for a, b in zip(args, self.args, strict=True)):
            return None
        return replace(self, args=args)

    def with_arg(self, index: int, value: Any) -> Inputs:
        args = list(self.args)
        args[index] = value
        return replace(self, args=tuple(args))


def _as_dtype(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(dtype).requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_as_dtype(v, dtype) for v in value)
    return value


def short(value: Any) -> str:
    if value is SINGLE_PROCESS_GROUP or is_process_group(value):
        return "<one-process group>"
    if isinstance(value, torch.Tensor):
        kind = str(value.dtype).replace("torch.", "")
        return f"{kind}{list(value.shape)}"
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
        return f"[{', '.join(short(v) for v in value)}]"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def prepare(value: Any, device: torch.device) -> Any:
    """float64 (complex128) on the device, requiring grad; other values as given."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.is_floating_point():
            tensor = tensor.to(device=device, dtype=torch.float64)
        elif tensor.is_complex():
            tensor = tensor.to(device=device, dtype=torch.complex128)
        else:
            return tensor.to(device=device)
        return tensor.clone().requires_grad_(True)
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(prepare(v, device) for v in value)
    return value


def declared(cls: type, device: torch.device) -> list[Inputs] | None:
    """Examples from `@example_inputs(...)` or a `gradcheck_inputs` staticmethod."""
    raw: list[Any] = []
    factories = getattr(cls, EXAMPLES_ATTRIBUTE, None)
    if factories:
        for factory in factories:
            raw.append(factory() if callable(factory) else factory)
    elif callable(getattr(cls, "gradcheck_inputs", None)):
        produced = cls.gradcheck_inputs()
        raw.extend(produced if isinstance(produced, list) else [produced])
    else:
        return None
    examples = []
    for example in raw:
        args = example if isinstance(example, tuple) else (example,)
        examples.append(Inputs(tuple(prepare(a, device) for a in args), _names(cls, len(args)),
                               DECLARED, native=tuple(_dtype(a) for a in args)))
    return examples


def _dtype(value: Any) -> torch.dtype | None:
    return value.dtype if isinstance(value, torch.Tensor) and value.is_floating_point() else None


def _names(cls: type, count: int) -> list[str]:
    """Names for `count` arguments of apply: forward's, else arg0, arg1, ..."""
    return [p.name for p in forward_parameters(cls) or []][:count] or \
        [f"arg{i}" for i in range(count)]


def recorded(cls: type, calls: list[dict[str, Any]], device: torch.device) -> list[Inputs]:
    """Calls recorded from the project's own runs (see recording.py), rebuilt:
    fresh random values with the recorded shapes, integer tensors as recorded."""
    from .recording import rebuild, recorded_dtypes, size

    examples = []
    for number, call in enumerate(sorted(calls, key=size)):  # the smallest first: fastest
        try:
            args, frozen = rebuild(call, device, seed=number)
        except ValueError:
            continue  # an argument that cannot be rebuilt (a process group, ...)
        examples.append(Inputs(args, _names(cls, len(args)), RECORDED, frozen=frozen,
                               native=tuple(getattr(torch, d) if d else None
                                            for d in recorded_dtypes(call))))
    return examples


# ---------------------------------------------------------------------------
# Synthesis
# ---------------------------------------------------------------------------


@dataclass
class _Parameter:
    """What synthesis makes of one of forward's positional parameters."""

    name: str
    role: str  # a tensor role, or "value" (numbers, strings, flags)
    values: list[Any] = field(default_factory=list)  # for "value": candidates
    optional: bool = False  # defaults to None: try a tensor, then None
    none_first: bool = False  # optional, and None is the usual call (a recurrent state)
    # No default at all (`hidden_state`): None is tried, as for a state, but
    # leaving it None is no call the signature promises (no AGD012).
    required: bool = False
    flag: bool = False
    given: bool = False  # its value is forward's own default


MAX_ENUM_MEMBERS = 4


class Synthesis:
    """Candidate inputs from forward's signature, most plausible first; it
    learns from the errors of the candidates tried (see `learn`)."""

    def __init__(self, cls: type, device: torch.device,
                 tensor_hints: frozenset[str] = frozenset()) -> None:
        self.device = device
        self.forward = forward_of(cls)
        parameters = forward_parameters(cls)
        if parameters is None:
            raise Unsynthesizable("forward's signature cannot be read")
        # Named positional parameters only: `*args` gets nothing, keyword-only
        # ones keep their defaults (apply passes positionals).
        positional = [p for p in parameters
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.tensor_hints = set(tensor_hints)
        self.numbers: set[str] = set()  # learnt: numbers, whatever else fails
        self.strings = compared_strings(self.forward)
        self.packed = any(packing_role(p.name) is not None and p.default is p.empty
                          for p in positional)
        self.parameters = [self._parameter(p) for p in positional]
        self.rank_hint: int | None = None
        self.shapes: dict[str, tuple[int, ...]] = {}  # learnt from forward's messages
        # learnt from forward's failing statements, per layout (the sizes they
        # name are that layout's)
        self.layout_shapes: dict[str, dict[str, tuple[int, ...]]] = {}
        self.power_of_two = False  # a kernel takes only power-of-two sizes
        self.preferred: str | None = None  # the layout the shapes were learnt on
        self.generation = 0  # bumped by what is learnt: the layouts start over
        self.count = 0
        self.demand_reader = DemandReader(self.forward, [p.name for p in self.parameters])

    # -- parameters ------------------------------------------------------------
    def _parameter(self, parameter: inspect.Parameter) -> _Parameter:
        name = parameter.name
        annotation = str(parameter.annotation)
        default = parameter.default
        hinted = name in self.tensor_hints or "Tensor" in annotation
        annotated = annotated_class(self.forward, name) if default is parameter.empty else None
        if annotated is not None and is_bundle(annotated):
            return _Parameter(name, "bundle", [annotated])
        if annotated is not None and issubclass(annotated, enum.Enum):
            # every member (a backend choice may have one that runs here)
            return _Parameter(name, "value", list(annotated)[:MAX_ENUM_MEMBERS])
        if annotated is not None:
            refuse(name, annotated)
        if default is not parameter.empty and default is not None and not hinted:
            return _Parameter(name, "value", [default], given=True)
        if default is None and is_output_buffer(name):
            # Where forward writes its result when the caller passes one: a
            # made-up buffer would only make that write look like a defect.
            return _Parameter(name, "value", [None], given=True)
        packing = packing_role(name)
        if packing is not None and default is parameter.empty:
            # Required variable-length offsets (`cu_seqlens`): the main input's
            # first dimension packs two sequences (what forward takes as
            # `max_seqlen` follows).
            return _Parameter(name, packing, optional=True, required=True)
        if self.packed and default is parameter.empty and LONGEST_NAME.search(name.lower()):
            return _Parameter(name, "value", [LONGEST])
        if OFFSETS_NAME.search(name.lower()):
            # Optional variable-length offsets mean nothing when made up: None,
            # as forward's default (one sequence).
            return _Parameter(name, "value", [None], given=True)
        if STATE_NAME.search(name.lower()) and default in (None, parameter.empty) and \
                not name.lower().startswith(BOOL_PREFIXES):  # `output_final_state`: a flag
            return _Parameter(name, tensor_role(name), optional=True, none_first=True,
                              required=default is parameter.empty)
        if default is None and not hinted and names_a_group(name.lower()):
            # `group=None` means the default group, which a check has not set
            # up: a one-process group of its own instead.
            return _Parameter(name, "value", [SINGLE_PROCESS_GROUP])
        if default is None:
            if hinted or name in TENSOR_NAMES or tensor_role(name) in ("labels", "mask"):
                return _Parameter(name, tensor_role(name), optional=True)
            return _Parameter(name, "value", [None])
        if not hinted and default is parameter.empty and self.strings.get(name):
            return _Parameter(name, "value", self.strings[name])
        if not hinted and default is parameter.empty:
            classified = classify(name)
            if classified is not None:
                return _Parameter(name, "value", classified, flag=classified == [False, True])
        if name in INDEX_NAMES:
            return _Parameter(name, "index")
        if not hinted:
            if name in KNOWN_VALUES:
                return _Parameter(name, "value", list(KNOWN_VALUES[name]))
            members = scalar_annotation(annotation)
            if members == {"bool"}:
                return _Parameter(name, "value", [False, True], flag=True)
            if members == {"str"}:
                raise Unsynthesizable(f"`{name}` is a string forward gives meaning to")
            if members:
                # `float | None`, `Optional[int]`: None (the usual call) first
                values = [None] if "None" in members else []
                values += [SCALARS[m] for m in ("float", "int") if m in members][:1] or \
                    ([False, True] if "bool" in members else [])
                return _Parameter(name, "value", values)
        return _Parameter(name, tensor_role(name))

    def learn(self, error: str) -> None:
        """Take a hint from forward's error with the last candidate."""
        rank = _rank_in(error)
        if rank is not None:
            self.rank_hint = rank
        for word, shape in _shapes_in(error):
            parameter = self._named(word)
            if parameter is not None and parameter.role != "value" and \
                    self.shapes.get(parameter.name) != shape:
                self.shapes[parameter.name] = shape
                self._start_over(None)  # the same layouts, with that shape
                return
        if "object has no attribute" in error and ("'float'" in error or "'int'" in error):
            # A number where forward wants a tensor: make the guessed numbers tensors.
            for parameter in self.parameters:
                if parameter.role == "value" and not parameter.given and \
                        parameter.name not in self.numbers and \
                        any(isinstance(v, float) for v in parameter.values):
                    self.tensor_hints.add(parameter.name)
                    parameter.role = "vector" if tensor_role(parameter.name) == "main" \
                        else tensor_role(parameter.name)
                    parameter.values = []
                    return

    def learn_from(self, exc: BaseException, candidate: Inputs) -> None:
        """Take the shapes forward's failing statement asks for (demands.py)."""
        changed = False
        shapes = self.layout_shapes.setdefault(candidate.layout, {})
        for demand in self.demand_reader.read(exc, candidate.args):
            parameter = next((p for p in self.parameters if p.name == demand.parameter), None)
            if parameter is not None and parameter.role != "value" and \
                    shapes.get(parameter.name) != demand.shape:
                shapes[parameter.name] = demand.shape
                changed = True
        if not self.power_of_two and _POWER_OF_TWO.search(str(exc)):
            self.power_of_two = changed = True
        changed = self._leave_out_refused(str(exc), candidate) or changed
        if changed:
            self._start_over(candidate.layout)

    def learn_numbers(self, exc: BaseException, candidate: Inputs) -> bool:
        """Parameters forward's failing statement uses as numbers, guessed as
        tensors: numbers from now on. Whether there were any (the error is
        then about them, not the dtype it may name: "pointer<fp16>")."""
        names = [n for n in numbers_wanted(self.demand_reader, exc, candidate.args)
                 if n not in self.numbers]
        for parameter in self.parameters:
            if parameter.name in names:
                self.numbers.add(parameter.name)
                parameter.role, parameter.values = "value", [0.5]
                parameter.optional = parameter.none_first = False
        if names:
            self._start_over(candidate.layout)
        return bool(names)

    def learn_unwritten(self, candidate: Inputs) -> None:
        """A kernel left memory unwritten with this candidate (two identical
        calls differ): a vector as long as a row of the main input may be
        one value per row instead (routing weights, per-row scales). (Not
        power-of-two sizes: with more rows than a guessed vector is long, a
        kernel reading a value per row reads past its end.)"""
        main = next((a for a in candidate.args if isinstance(a, torch.Tensor)
                     and a.dim() >= 2), None)
        if main is None or main.shape[0] == main.shape[-1]:
            return
        shapes = self.layout_shapes.setdefault(candidate.layout, {})
        changed = False
        for parameter, value in zip(self.parameters, candidate.args, strict=False):
            if isinstance(value, torch.Tensor) and value.dim() == 1 and \
                    value.is_floating_point() and value.shape[0] == main.shape[-1] and \
                    parameter.name not in shapes:
                shapes[parameter.name] = (main.shape[0],)
                changed = True
        if changed:
            self._start_over(candidate.layout)

    def learn_reads_past(self) -> None:
        """A kernel read past the end of an input with this candidate: its
        blocks may assume sizes they divide, so power-of-two sizes from now on."""
        if not self.power_of_two:
            self.power_of_two = True
            self._start_over(None)

    def _leave_out_refused(self, message: str, candidate: Inputs) -> bool:
        """An optional input forward's error names ("rowscale is not supported
        with ..."), given in the candidate: left None first from now on."""
        refused = False
        for position, parameter in enumerate(self.parameters):
            if parameter.optional and not parameter.none_first and \
                    position < len(candidate.args) and \
                    isinstance(candidate.args[position], torch.Tensor) and \
                    re.search(rf"\b{re.escape(parameter.name)}\b", message):
                parameter.none_first = refused = True
        return refused

    def _start_over(self, layout: str | None) -> None:
        self.preferred = layout or self.preferred
        self.generation += 1

    def _named(self, word: str) -> _Parameter | None:
        """The parameter a message calls `word` ("Weight" for `W`)."""
        word = word.lower()
        for parameter in self.parameters:
            name = parameter.name.lower().lstrip("_")
            if name == word or (len(name) == 1 and word.startswith(name)):
                return parameter
        return None

    # -- candidates ------------------------------------------------------------
    def __iter__(self) -> Iterator[Inputs]:
        """Candidates until one is taken or MAX_CANDIDATES; when a shape is
        learnt, the layouts start over with it (the one it was learnt on first)."""
        while self.count < MAX_CANDIDATES:
            generation = self.generation
            for candidate in self._breadth_first():
                self.count += 1
                yield candidate
                if self.generation != generation or self.count >= MAX_CANDIDATES:
                    break
            else:
                return

    def _breadth_first(self) -> Iterator[Inputs]:
        """Each layout's most plausible candidate, then the second ones; the
        order of the rest follows the hints learnt so far."""
        streams = {layout.name: self._for_layout(layout) for layout in LAYOUTS}
        exhausted: set[str] = set()
        for _ in range(MAX_PER_LAYOUT):
            served: set[str] = set()
            while True:
                waiting = [layout for layout in self._layouts()
                           if layout.name not in exhausted and layout.name not in served]
                if not waiting:
                    break
                name = waiting[0].name
                served.add(name)
                candidate = next(streams[name], None)
                if candidate is None:
                    exhausted.add(name)
                    continue
                yield candidate

    def _layouts(self) -> list[Layout]:
        return sorted(LAYOUTS, key=lambda layout: (
            layout.name != self.preferred,
            self.rank_hint is not None and layout.rank != self.rank_hint))

    def _for_layout(self, layout: Layout) -> Iterator[Inputs]:
        values = [self._choices(p, layout) for p in self.parameters]
        for combination in itertools.islice(itertools.product(*values), MAX_PER_LAYOUT):
            yield self._build(layout, combination)

    def _choices(self, parameter: _Parameter, layout: Layout) -> list[Any]:
        if parameter.role == "value":
            sized = dict(layout.sizes).get(parameter.name)
            return [sized] if sized is not None and parameter.values in ([1, 2], [1]) \
                else parameter.values
        if parameter.none_first:
            return [None, parameter.role]
        return [parameter.role, None] if parameter.optional else [parameter.role]

    def _build(self, layout: Layout, combination: tuple[Any, ...]) -> Inputs:
        args: list[Any] = []
        for position, (parameter, choice) in enumerate(
                zip(self.parameters, combination, strict=True)):
            if parameter.role == "bundle":
                args.append(build(parameter.values[0], lambda field, at=position: self.tensor(
                    tensor_role(field), layout, at, args), self.strings))
            elif parameter.role != "value" and choice is not None:
                args.append(self.tensor(parameter.role, layout, position, args))
            elif choice is SINGLE_PROCESS_GROUP:
                args.append(single_process_group())
            elif choice is LONGEST:  # the longer of the two packed sequences
                args.append(layout.main[0] - layout.main[0] // 2)
            else:
                args.append(choice)
        names = [p.name for p in self.parameters]
        none_defaults = [i for i, (p, a) in enumerate(zip(self.parameters, args, strict=True))
                         if p.optional and not p.required and isinstance(a, torch.Tensor)]
        flags = [i for i, p in enumerate(self.parameters) if p.flag]
        return Inputs(tuple(args), names, SYNTHESIZED, none_defaults=none_defaults,
                      flags=flags, layout=layout.name)

    def tensor(self, role: str, layout: Layout, position: int, earlier: list[Any]) -> Any:
        """A tensor for a role in a layout."""
        name = self.parameters[position].name
        forced = self.layout_shapes.get(layout.name, {}).get(name) or self.shapes.get(name)
        if self.power_of_two:
            layout = _powers_of_two(layout)
            forced = forced and tuple(POWER_OF_TWO_SIZES.get(n, n) for n in forced)
        main = layout.main
        if role in ("offsets", "lengths"):
            # Two sequences packed along the main input's first dimension.
            total = main[0]
            first = total // 2
            values = [0, first, total] if role == "offsets" else [first, total - first]
            return torch.tensor(values, dtype=torch.int32, device=self.device)
        if role == "index":
            dim = next((a for p, a in zip(self.parameters, earlier, strict=False)
                        if p.name in ("dim", "axis") and isinstance(a, int)), 0)
            size = main[dim] if -len(main) <= dim < len(main) else main[0]
            return torch.arange(size, device=self.device)
        if role == "labels" or (role == "target" and layout.target_is_labels):
            generator = torch.Generator().manual_seed(17 + position)
            shape = forced if forced is not None else main[:-1] or main
            return torch.randint(0, layout.labels_high, shape, generator=generator).to(self.device)
        if role == "mask":
            return torch.ones(forced if forced is not None else main[:-1] or main,
                              dtype=torch.bool, device=self.device)
        if forced is not None:
            return float_tensor(forced, position, self.device)
        shape = {"vector": layout.vector, "matrix": layout.matrix or layout.vector,
                 "weight": layout.matrix or layout.vector, "table": layout.table}.get(role)
        if role == "weight" and layout.name in ("rows", "sequence", "heads", "heads-last",
                                                  "channels"):
            shape = layout.vector  # a norm's weight: one per feature
        return float_tensor(shape or main, position, self.device)


# Power-of-two stand-ins for the sizes synthesis uses, still distinct (a
# kernel's `tl.arange(0, HC)` needs a power of two).
POWER_OF_TWO_SIZES = {ROWS: 8, VOCAB: 16}
_POWER_OF_TWO = re.compile(r"power of 2|power of two", re.I)


def _powers_of_two(layout: Layout) -> Layout:
    def scaled(shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return shape and tuple(POWER_OF_TWO_SIZES.get(n, n) for n in shape)

    return replace(layout, main=scaled(layout.main), vector=scaled(layout.vector),
                   matrix=scaled(layout.matrix), table=scaled(layout.table),
                   labels_high=POWER_OF_TWO_SIZES.get(layout.labels_high, layout.labels_high))


def float_tensor(shape: tuple[int, ...], position: int, device: torch.device) -> torch.Tensor:
    # Values in [0.5, 1.5): away from the kinks and domain edges of relu, abs,
    # sqrt and log, where finite differences disagree with any correct backward.
    # A different seed per position: equal inputs would hide swapped gradients.
    generator = torch.Generator().manual_seed(1000 * position + len(shape))
    values = torch.rand(tuple(shape), dtype=torch.float64, generator=generator) + 0.5
    return values.to(device).requires_grad_(True)


_RANK = re.compile(r"\(expected (\d)[,)]|\bmust be (\d)D\b|\bexpected (\d)D\b|\b(\d)D tensor")


def _rank_in(error: str) -> int | None:
    match = _RANK.search(error)
    if match is None:
        return None
    rank = int(next(g for g in match.groups() if g))
    return rank if 1 <= rank <= 4 else None


_SHAPE = re.compile(r"((?:\w+\s+){1,3})must (?:have shape \(([\d, ]*)\)|be a scalar)", re.I)


def _shapes_in(error: str) -> list[tuple[str, tuple[int, ...]]]:
    """("Weight", (3,)) from "Weight tensor must have shape (3,)" (each of the
    words before "must", nearest first); a scalar: ()."""
    found = []
    for match in _SHAPE.finditer(error):
        sizes = match.group(2)
        shape = tuple(int(n) for n in sizes.replace(" ", "").split(",") if n) \
            if sizes is not None else ()
        found.extend((word, shape) for word in reversed(match.group(1).split()))
    return found


def argument_of_gradient(args: tuple[Any, ...], index: int) -> int:
    """The position in `args` of the input autograd names "index N" in
    "returned an invalid gradient at index N": it counts the tensor
    arguments only (its edges), not every argument forward takes."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    return tensors[index] if 0 <= index < len(tensors) else index


def differentiable_positions(args: tuple[Any, ...]) -> list[int]:
    return [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
