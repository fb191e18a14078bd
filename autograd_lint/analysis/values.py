"""Abstract values: what the analysis knows about one expression's result."""
from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Kind(enum.Enum):
    TENSOR = "tensor"  # one tensor, certainly
    TENSORS = "tensors"  # a tuple/list/dict holding tensors
    TENSORISH = "tensorish"  # a tensor or a container of tensors
    NONTENSOR = "nontensor"  # certainly not a tensor and not None
    NONE = "none"  # the None constant
    UNKNOWN = "unknown"

    @property
    def holds_tensor(self) -> bool:
        return self in (Kind.TENSOR, Kind.TENSORS, Kind.TENSORISH)


_TENSOR_FAMILY = frozenset({Kind.TENSOR, Kind.TENSORS, Kind.TENSORISH})
_SINGLE_KINDS = frozenset({Kind.TENSOR, Kind.NONE, Kind.NONTENSOR})


def join_kinds(a: Kind, b: Kind) -> Kind:
    if a is b:
        return a
    if a is Kind.NONE:
        return b
    if b is Kind.NONE:
        return a
    if a in _TENSOR_FAMILY and b in _TENSOR_FAMILY:
        return Kind.TENSORISH
    return Kind.UNKNOWN


@dataclass(frozen=True)
class Value:
    """The abstract result of an expression.

    roots: the root tensors this value may be, or may be a view of
        ("input:x", "grad:g", "saved"): the alias facts of RULES.md.
    elems: the elements when the value is a tuple of known length.
    seq: the value is a Python tuple/list/dict/set, never a tensor.
    literal: a non-None literal constant (`0`, `1.0`, `"s"`, `-1`).
    maybe_none: the value may also be None (an Optional).
    src: where the value comes from ("ctx", "input:x", "output", "inputs",
        "saved", "rng"), for messages and severities.
    """

    kind: Kind = Kind.UNKNOWN
    roots: frozenset[str] = frozenset()
    elems: tuple[Value, ...] | None = None
    seq: bool = False
    literal: bool = False
    maybe_none: bool = False
    src: str | None = None
    text: str | None = None  # the literal's source text, for messages
    single: bool = False  # certainly one object, not a tuple (`x * 3`)
    is_list: bool = False  # a list: elems are tracked, but it is not a tuple result
    # A list of unknown length may still know what some positions hold:
    # `pinned` maps an index to the roots stored there, `rest` covers the others.
    pinned: tuple[tuple[int, frozenset[str]], ...] = ()
    rest: frozenset[str] | None = None
    item: Value | None = None  # any element of a container whose layout is unknown
    # Data flow, not aliasing: the markers of everything this value was computed
    # from ("src:grad", "src:saved", "left:3", "acc:1"), so a rule can ask whether
    # a value that left autograd reaches the returned gradient.
    taint: frozenset[str] = frozenset()
    view: bool = False  # a view of (or the same tensor as) its roots, made by a view op
    integral: bool = False  # an integer or bool tensor (indices, masks): no gradient
    scalar: bool = False  # a 0-d tensor (`x.sum()`, `torch.tensor(1.0)`, arithmetic on one)
    detached: bool = False  # a copy made with `.detach()` in this method
    # `x if flag else y` on a caller's flag: (the flag's text, the roots when it
    # is true, when it is false), so that a branch on the same flag knows which.
    decided_by: tuple[str, frozenset[str], frozenset[str]] | None = None

    @property
    def is_none(self) -> bool:
        return self.kind is Kind.NONE

    @property
    def definitely_not_none(self) -> bool:
        return self.kind is not Kind.NONE and not self.maybe_none and self.kind is not Kind.UNKNOWN

    def with_roots(self, roots: frozenset[str]) -> Value:
        return replace(self, roots=roots)

    def arity(self) -> int | None:
        """How many values a `return` of this value hands to autograd."""
        if self.elems is not None and not self.is_list:
            return len(self.elems)
        if self.seq:
            return None
        if self.single or self.kind in (Kind.TENSOR, Kind.NONE, Kind.NONTENSOR):
            return 1
        return None


UNKNOWN = Value()
NONE = Value(Kind.NONE)
NONTENSOR = Value(Kind.NONTENSOR)
TENSOR = Value(Kind.TENSOR)


def list_slots(value: Value) -> tuple[dict[int, frozenset[str]], frozenset[str]]:
    """(roots by known position, roots of every other position) of a list."""
    if value.elems is not None:
        return {i: e.roots for i, e in enumerate(value.elems)}, frozenset()
    rest = value.rest if value.rest is not None else value.roots
    return dict(value.pinned), rest


def item_roots(container: Value, index: int | None) -> frozenset[str]:
    """The roots of `container[index]` for a list or tuple."""
    if index is None or index < 0 or not container.is_list:
        if container.elems is not None and index is not None and \
                -len(container.elems) <= index < len(container.elems):
            return container.elems[index].roots
        return container.roots
    pinned, rest = list_slots(container)
    return pinned.get(index, rest)


def _join_lists(a: Value, b: Value) -> tuple[tuple[tuple[int, frozenset[str]], ...],
                                             frozenset[str]]:
    a_pinned, a_rest = list_slots(a)
    b_pinned, b_rest = list_slots(b)
    indices = sorted(set(a_pinned) | set(b_pinned))
    pinned = tuple((i, a_pinned.get(i, a_rest) | b_pinned.get(i, b_rest)) for i in indices)
    return pinned, a_rest | b_rest


def join(a: Value, b: Value) -> Value:
    """The value of an expression that may be `a` on one path and `b` on another."""
    if a == b:
        return a
    kind = join_kinds(a.kind, b.kind)
    elems = None
    if a.elems is not None and b.elems is not None and len(a.elems) == len(b.elems):
        elems = tuple(join(x, y) for x, y in zip(a.elems, b.elems, strict=False))
    maybe_none = (a.maybe_none or b.maybe_none or a.kind is Kind.NONE or b.kind is Kind.NONE)
    return Value(
        kind=kind,
        roots=a.roots | b.roots,
        elems=elems,
        seq=a.seq and b.seq,
        literal=a.literal and b.literal,
        maybe_none=maybe_none and kind is not Kind.NONE,
        src=a.src if a.src == b.src else None,
        text=a.text if a.text == b.text else None,
        single=(a.single or a.kind in _SINGLE_KINDS) and (b.single or b.kind in _SINGLE_KINDS),
        is_list=a.is_list and b.is_list,
        **(dict(zip(("pinned", "rest"), _join_lists(a, b), strict=False))
           if a.is_list and b.is_list and elems is None else {}),
        item=_joined_item(a, b),
        taint=a.taint | b.taint,
        view=a.view or b.view,
        integral=_joined_flag(a, b, "integral"),
        scalar=_joined_flag(a, b, "scalar"),
        detached=_joined_flag(a, b, "detached"),
        decided_by=a.decided_by if a.decided_by == b.decided_by else None,
    )


def _joined_item(a: Value, b: Value) -> Value | None:
    """What any element is, after a join: the elements of both sides (an
    empty container, `[]` before a loop appends to it, adds nothing)."""
    if a.item is not None and b.item is not None:
        return join(a.item, b.item)
    if not (a.seq and b.seq):
        return None
    items = [_any_element(v) for v in (a, b) if v.elems != ()]
    if not items or None in items:
        return None
    return items[0] if len(items) == 1 else join(items[0], items[1])  # type: ignore[arg-type]


def _any_element(value: Value) -> Value | None:
    if value.item is not None:
        return value.item
    if value.elems:
        out = value.elems[0]
        for element in value.elems[1:]:
            out = join(out, element)
        return out
    return None


def _joined_flag(a: Value, b: Value, name: str) -> bool:
    """A flag holds after a join when it holds on every path that has a tensor."""
    flags = [getattr(v, name) for v in (a, b) if v.kind not in (Kind.NONE, Kind.NONTENSOR)]
    return bool(flags) and all(flags)


def tuple_of(elems: list[Value] | tuple[Value, ...], *, known: bool = True) -> Value:
    """A tuple display (or another sequence) of these element values."""
    elems = tuple(elems)
    kinds = {e.kind for e in elems}
    if kinds & _TENSOR_FAMILY:
        kind = Kind.TENSORS
    elif kinds <= {Kind.NONTENSOR, Kind.NONE} and elems:
        kind = Kind.NONTENSOR
    else:
        kind = Kind.UNKNOWN
    roots: frozenset[str] = frozenset().union(*(e.roots for e in elems)) if elems else frozenset()
    taint: frozenset[str] = frozenset().union(*(e.taint for e in elems)) if elems else frozenset()
    item = None
    if not known and elems:
        item = elems[0]
        for element in elems[1:]:
            item = join(item, element)
    return Value(kind=kind, roots=roots, elems=elems if known else None, seq=True, taint=taint,
                 item=item)


def element_of(container: Value) -> Value:
    """The value of one unknown element of a container (a loop target)."""
    if container.elems:
        out = container.elems[0]
        for element in container.elems[1:]:
            out = join(out, element)
        return out
    if container.item is not None:
        return container.item
    # An element of forward's output tuple is an output; of saved_tensors, saved.
    src = container.src if container.src in ("output", "saved") else None
    kind = Kind.TENSOR if container.kind in (Kind.TENSORS, Kind.TENSORISH) else Kind.UNKNOWN
    return Value(kind, roots=container.roots, src=src, taint=container.taint)
