"""Shapes forward's own failing checks ask for, read from the failing frame.

Kernel wrappers state their shape contracts as code, not as messages:

    assert h_pre.shape == (N, HC)          # N, HC: locals of the frame
    scores_f = scores.view(N, L, L)        # "shape '[4, 3, 3]' is invalid ..."
    out = F.conv2d(scores_f, weight)       # torch's own contract for `weight`

When forward raises on a synthesized candidate, the statement that raised is
read back from its source, the sizes it names are evaluated in that frame
(names, arithmetic, `.shape`, `len`, `int`: nothing that calls user code),
and the tensor it constrains is traced to one of forward's parameters: the
same object, a view of it, or, across a copy (`.to(torch.float32)`), a local
of the same name. The result is a shape for that parameter to try next.
(A wrong rank everywhere, `a, b, c = x.shape`, is the message's to tell:
a layout of that rank keeps all parameters consistent; the statement says
which one tensor has it when the others passed.)
Runs in the worker (imports torch).
"""
from __future__ import annotations

import ast
import inspect
import linecache
import math
import operator
import re
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import torch


@dataclass(frozen=True)
class Demand:
    """forward wants `parameter` to have `shape`."""

    parameter: str
    shape: tuple[int, ...]


class _Unknown(Exception):
    """An expression the safe evaluator does not evaluate."""


_VIEW_ERROR = re.compile(r"shape '\[([-\d, ]*)\]' is invalid for input of size \d+")
_UNPACK_ERROR = re.compile(r"values to unpack \(expected (\d+)")
_CONV_ERROR = re.compile(r"\bweight\b|\bbias\b|groups")
_CONVOLUTIONS = {"conv1d": 1, "conv2d": 2, "conv3d": 3}
# Size a demand leaves open (a -1 in a view that no known size fixes).
OPEN_SIZE = 2
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_SAFE_CALLS = {"int": int, "len": len, "tuple": tuple, "max": max, "min": min}


@dataclass
class DemandReader:
    """Reads demands from forward's exceptions; keeps the parsed sources."""

    forward: Any  # the Function's forward (decorators unwrapped here)
    parameters: list[str]
    _trees: dict[str, ast.Module | None] = field(default_factory=dict)

    def read(self, exc: BaseException, args: tuple[Any, ...]) -> list[Demand]:
        """Demands from an exception forward raised on `args` ([] if none)."""
        frames = traceback_frames(exc)
        code = code_of(self.forward)
        forward_at = next((i for i, (frame, _) in enumerate(frames) if frame.f_code is code),
                          None)
        if forward_at is None:
            return []
        forward_frame = frames[forward_at][0]
        bound = {name: forward_frame.f_locals.get(name) for name in self.parameters}
        passed = dict(zip(self.parameters, args, strict=False))
        message = str(exc)
        # The innermost frame first: that is where the contract is written.
        for frame, line in reversed(frames[forward_at:]):
            statement = self.statement_at(frame.f_code.co_filename, line)
            if statement is None:
                continue
            evaluator = _Evaluator(frame, self._bindings(frame, statement))
            wanted = _constraints(statement, evaluator, message)
            demands = [demand for demand in (_to_parameter(w, bound, passed) for w in wanted)
                       if demand is not None]
            if demands:
                return demands
        return []

    def _bindings(self, frame: FrameType, statement: ast.stmt) -> dict[str, ast.expr]:
        """The names the frame's function binds to a size of a tensor before
        `statement` (`D = q.shape[-1]`, `B, H, T, D = q.shape`): an assert on
        `D` is an assert on that size."""
        tree = self._trees.get(frame.f_code.co_filename)
        function = _function_of(tree, frame.f_code) if tree is not None else None
        bindings: dict[str, ast.expr] = {}
        if function is None:
            return bindings
        for node in ast.walk(function):
            if not isinstance(node, ast.Assign) or node.lineno >= statement.lineno or \
                    len(node.targets) != 1:
                continue
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and _shape_subject(value) is not None:
                bindings[target.id] = value
            elif isinstance(target, ast.Tuple) and \
                    not any(isinstance(e, ast.Starred) for e in target.elts):
                bindings.update(_unpacked_sizes(target, value))
        return bindings

    def statement_at(self, filename: str, line: int) -> ast.stmt | None:
        if filename not in self._trees:
            try:
                self._trees[filename] = ast.parse("".join(linecache.getlines(filename)))
            except (SyntaxError, ValueError):
                self._trees[filename] = None
        tree = self._trees[filename]
        if tree is None:
            return None
        found: ast.stmt | None = None
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or 0):
                if found is None or node.lineno >= found.lineno:
                    found = node  # the innermost statement holding the line
        return found


def _unpacked_sizes(target: ast.Tuple, value: ast.expr) -> dict[str, ast.expr]:
    """`B, H, T, D = q.shape` (each name a size of q) and `Dq, Dk = q.shape[-1],
    k.shape[-1]` (each name the size beside it)."""
    subject = _shape_subject(value)
    if subject is not None and subject[0] == "shape":
        return {element.id: ast.Subscript(value=value, slice=ast.Constant(index))
                for index, element in enumerate(target.elts) if isinstance(element, ast.Name)}
    if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
        return {element.id: item for element, item in zip(target.elts, value.elts, strict=True)
                if isinstance(element, ast.Name) and _shape_subject(item) is not None}
    return {}


def _function_of(tree: ast.Module, code: CodeType) -> ast.AST | None:
    """The def of a code object in its module's tree."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name == code.co_name and code.co_firstlineno in (
                    node.lineno, *(d.lineno for d in node.decorator_list)):
            return node
    return None


def code_of(function: Any) -> CodeType | None:
    try:
        return inspect.unwrap(function).__code__
    except (AttributeError, ValueError):
        return None


def traceback_frames(exc: BaseException, chained: bool = False) -> list[tuple[FrameType, int]]:
    """The traceback's frames, outermost first; `chained`: then those of the
    errors it was raised from (Triton's interpreter wraps a kernel line's)."""
    frames = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        traceback = current.__traceback__
        while traceback is not None:
            frames.append((traceback.tb_frame, traceback.tb_lineno))
            traceback = traceback.tb_next
        current = current.__cause__ or current.__context__ if chained else None
    return frames


# ---------------------------------------------------------------------------
# What a statement asks of a tensor
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Wanted:
    """A tensor (as the frame holds it, and the name it goes by there) and the
    shape the statement wants it to have; `view`: the shape of a view of it."""

    tensor: torch.Tensor
    name: str | None
    shape: tuple[int, ...]
    view: bool = False


def _constraints(statement: ast.stmt, evaluator: _Evaluator, message: str) -> list[_Wanted]:
    if isinstance(statement, ast.Assert):
        return _assertion(statement.test, evaluator)
    wanted: list[_Wanted] = []
    view = _VIEW_ERROR.search(message)
    if view is not None:
        requested = tuple(int(n) for n in view.group(1).replace(" ", "").split(",") if n)
        wanted += _failed_views(statement, evaluator, requested)
    if _CONV_ERROR.search(message):
        wanted += _convolution_weights(statement, evaluator)
    unpack = _UNPACK_ERROR.search(message)
    if unpack is not None:
        wanted += _unpacked_rank(statement, evaluator, int(unpack.group(1)))
    return wanted


def _unpacked_rank(statement: ast.stmt, evaluator: _Evaluator, rank: int) -> list[_Wanted]:
    """`h, d = theta.shape` raising "too many values to unpack (expected 2)":
    that tensor, not every one, has too many dims (a lower-rank companion of
    the main input: a per-head table, a per-feature weight). Its trailing
    sizes are kept: such a companion shares the main input's last
    dimensions. Too few dims are the layout's to fix (the rank hint)."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 or \
            not isinstance(statement.targets[0], ast.Tuple) or \
            any(isinstance(e, ast.Starred) for e in statement.targets[0].elts):
        return []
    subject = _shape_subject(statement.value)
    if subject is None or subject[0] != "shape":
        return []
    try:
        tensor = evaluator.tensor(subject[1])
    except _Unknown:
        return []
    shape = tuple(tensor.shape)
    if rank >= len(shape):
        return []  # too few dims: every input's, likely (the message's rank hint)
    wanted = shape[len(shape) - rank:]
    name = subject[1].id if isinstance(subject[1], ast.Name) else None
    return [_Wanted(tensor, name, wanted)]


def _assertion(test: ast.expr, evaluator: _Evaluator) -> list[_Wanted]:
    """The failing comparisons of `assert a and b and ...` about shapes."""
    conditions = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    wanted: dict[int, _Wanted] = {}  # by tensor: `x.dim() == 2 and x.shape[0] == K`
    for condition in [pair for c in conditions for pair in _pairs(_divisibility(c))]:
        if not isinstance(condition, ast.Compare) or len(condition.ops) != 1:
            continue
        left, op, right = condition.left, condition.ops[0], condition.comparators[0]
        try:
            if evaluator.truth(condition):
                continue  # this part holds: not what failed
            found = _equal_sizes(left, op, right, evaluator, wanted) or \
                [_compared(left, op, right, evaluator, wanted)]
        except _Unknown:
            continue
        for item in found:
            if item is not None:
                wanted[id(item.tensor)] = item
    return list(wanted.values())


def _pairs(condition: ast.expr) -> list[ast.expr]:
    """`a == b == c` as `a == b` and `b == c`; any other condition as it is."""
    if not (isinstance(condition, ast.Compare) and len(condition.ops) > 1 and
            all(isinstance(op, ast.Eq) for op in condition.ops)):
        return [condition]
    operands = [condition.left, *condition.comparators]
    return [ast.Compare(left=a, ops=[ast.Eq()], comparators=[b])
            for a, b in zip(operands, operands[1:], strict=False)]


def _equal_sizes(left: ast.expr, op: ast.cmpop, right: ast.expr, evaluator: _Evaluator,
                 earlier: dict[int, _Wanted]) -> list[_Wanted | None]:
    """`Lq == Lk` between sizes of two tensors: both take the larger (a size
    learnt from another assert, `Lk in {16, 32}`, is larger than a guess),
    so that a chain of such asserts settles instead of going round)."""
    if not isinstance(op, ast.Eq) or not (isinstance(left, ast.Name) and
                                          isinstance(right, ast.Name)):
        return []  # (a size written out is another tensor's contract: see _compared)
    left, right = evaluator.expand(left), evaluator.expand(right)
    sides = [_shape_subject(left), _shape_subject(right)]
    if any(side is None or side[0] != "dim" for side in sides):
        return []
    values = [evaluator.value(left), evaluator.value(right)]
    if not all(isinstance(v, int) for v in values):
        return []
    target = ast.Constant(max(values))
    return [_compared(side, op, target, evaluator, earlier) for side in (left, right)]


# A helper that asserts divisibility: `divisible_by(block, 16)`, `is_multiple_of(d, 8)`.
_DIVISIBLE = re.compile(r"divisib|multiple", re.I)


def _divisibility(condition: ast.expr) -> ast.expr:
    """`divisible_by(x, k)` read as `x % k == 0`; any other condition as it is."""
    if isinstance(condition, ast.Call) and len(condition.args) == 2 and \
            not condition.keywords and _DIVISIBLE.search(ast.unparse(condition.func)):
        return ast.Compare(left=ast.BinOp(left=condition.args[0], op=ast.Mod(),
                                          right=condition.args[1]),
                           ops=[ast.Eq()], comparators=[ast.Constant(0)])
    return condition


def _compared(left: ast.expr, op: ast.cmpop, right: ast.expr, evaluator: _Evaluator,
              earlier: dict[int, _Wanted]) -> _Wanted | None:
    multiple = _multiple_of(left, op, right, evaluator)
    if multiple is not None:  # `x.shape[-1] % 16 == 0`
        left = left.left  # type: ignore[attr-defined]
    written_right = right
    left, right = evaluator.expand(left), evaluator.expand(right)
    subject = _shape_subject(left)
    other = right
    if subject is None and isinstance(op, ast.Eq) and multiple is None and \
            not isinstance(written_right, ast.Name):
        # `weight.numel() == D`, D a size of the main input: the other side's
        # contract, not the main input's (moving it alone would leave the
        # inputs shaped alike with it, `u` beside `x`, behind).
        subject, other = _shape_subject(right), left
    if subject is None:
        return None
    kind, tensor_node, index = subject
    tensor = evaluator.tensor(tensor_node)
    if multiple is not None:
        current = evaluator.value(left)
        if kind != "dim" or not isinstance(current, int):
            return None
        value = max(multiple, -(-current // multiple) * multiple)
        op = ast.Eq()
    else:
        value = evaluator.value(other)
    if isinstance(op, ast.In) and isinstance(value, (tuple, list)) and value:
        value = value[0]  # the first of the shapes allowed
    elif isinstance(op, (ast.GtE, ast.Gt)) and kind == "rank" and isinstance(value, int):
        value = value + isinstance(op, ast.Gt)
    elif not isinstance(op, ast.Eq):
        return None
    current = earlier[id(tensor)].shape if id(tensor) in earlier else tuple(tensor.shape)
    name = tensor_node.id if isinstance(tensor_node, ast.Name) else None
    if kind == "shape" and isinstance(value, (tuple, list)) and \
            all(isinstance(n, int) for n in value):
        return _Wanted(tensor, name, tuple(value))
    if kind == "dim" and isinstance(value, int) and -len(current) <= index < len(current):
        changed = list(current)
        changed[index] = value
        return _Wanted(tensor, name, tuple(changed))
    if kind == "rank" and isinstance(value, int) and 1 <= value <= 6:
        return _Wanted(tensor, name, _with_rank(current, value))
    return None


def _multiple_of(left: ast.expr, op: ast.cmpop, right: ast.expr,
                 evaluator: _Evaluator) -> int | None:
    """k in `SIZE % k == 0` (a size that must be a multiple of k), else None."""
    if not (isinstance(op, ast.Eq) and isinstance(left, ast.BinOp) and
            isinstance(left.op, ast.Mod) and isinstance(right, ast.Constant) and
            right.value == 0):
        return None
    try:
        divisor = evaluator.value(left.right)
    except _Unknown:
        return None
    return divisor if isinstance(divisor, int) and divisor > 1 else None


def _shape_subject(node: ast.expr) -> tuple[str, ast.expr, int] | None:
    """("shape", T, 0) for `T.shape`; ("dim", T, i) for `T.shape[i]` or
    `T.size(i)`; ("rank", T, 0) for `T.dim()`, `T.ndim` or `len(T.shape)`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("tuple", "len") and len(node.args) == 1:
        inner = _shape_subject(node.args[0])
        if inner is not None and inner[0] == "shape":
            return ("shape" if node.func.id == "tuple" else "rank", inner[1], 0)
        return None
    if isinstance(node, ast.Attribute):
        if node.attr == "shape":
            return "shape", node.value, 0
        if node.attr == "ndim":
            return "rank", node.value, 0
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
            node.value.attr == "shape" and _int_constant(node.slice) is not None:
        return "dim", node.value.value, _int_constant(node.slice)  # type: ignore[return-value]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method, receiver = node.func.attr, node.func.value
        if method in ("dim", "ndimension") and not node.args:
            return "rank", receiver, 0
        if method == "size":
            if not node.args:
                return "shape", receiver, 0
            index = _int_constant(node.args[0])
            if index is not None:
                return "dim", receiver, index
    return None


def _int_constant(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_constant(node.operand)
        return -inner if inner is not None else None
    return None


def _failed_views(statement: ast.stmt, evaluator: _Evaluator,
                  requested: tuple[int, ...]) -> list[_Wanted]:
    """The `T.view(...)`/`T.reshape(...)` in the statement that asked for `requested`."""
    wanted = []
    for node in ast.walk(statement):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("view", "reshape") and node.args):
            continue
        try:
            tensor = evaluator.tensor(node.func.value)
            sizes = evaluator.value(node.args[0]) if len(node.args) == 1 \
                else tuple(evaluator.value(a) for a in node.args)
        except _Unknown:
            continue
        if isinstance(sizes, int):
            sizes = (sizes,)
        if tuple(sizes) == requested:
            name = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            wanted.append(_Wanted(tensor, name, requested, view=True))
    return wanted


def _convolution_weights(statement: ast.stmt, evaluator: _Evaluator) -> list[_Wanted]:
    """torch's own contract for `conv{1,2,3}d(input, weight, bias, ..., groups)`:
    weight [C, C / groups, 1, ...] (a 1x1 kernel keeps the spatial sizes), bias [C]."""
    wanted = []
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else ""
        spatial = _CONVOLUTIONS.get(callee)
        if spatial is None:
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        positional = dict(enumerate(node.args))
        try:
            source = evaluator.tensor(positional.get(0, keywords.get("input")))
            groups = evaluator.value(positional[6]) if 6 in positional else \
                evaluator.value(keywords["groups"]) if "groups" in keywords else 1
        except (_Unknown, KeyError, AttributeError):
            continue
        if source.dim() != spatial + 2 or not isinstance(groups, int) or groups <= 0 or \
                source.shape[1] % groups:
            continue
        channels = source.shape[1]
        shapes = {1: (channels, channels // groups) + (1,) * spatial, 2: (channels,)}
        for position, keyword in ((1, "weight"), (2, "bias")):
            node_of = positional.get(position, keywords.get(keyword))
            try:
                tensor = evaluator.tensor(node_of) if node_of is not None else None
            except _Unknown:
                continue
            if tensor is not None and tuple(tensor.shape) != shapes[position]:
                name = node_of.id if isinstance(node_of, ast.Name) else None
                wanted.append(_Wanted(tensor, name, shapes[position]))
    return wanted


def _with_rank(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """`shape` grown (leading dims of OPEN_SIZE) or folded (leading dims
    merged) to `rank` dims, its trailing dims kept."""
    if len(shape) <= rank:
        return (OPEN_SIZE,) * (rank - len(shape)) + shape
    keep = rank - 1
    return (math.prod(shape[:len(shape) - keep]),) + (shape[len(shape) - keep:] if keep else ())


# ---------------------------------------------------------------------------
# From the constrained tensor to forward's parameter
# ---------------------------------------------------------------------------
def _to_parameter(wanted: _Wanted, bound: dict[str, Any],
                  passed: dict[str, Any]) -> Demand | None:
    name, same = _owner(wanted.tensor, wanted.name, bound)
    if name is None:
        return None
    current = passed.get(name)
    if not isinstance(current, torch.Tensor):
        return None
    shape = wanted.shape if same and not wanted.view else fit(tuple(current.shape), wanted.shape)
    if any(n <= 0 for n in shape) or shape == tuple(current.shape):
        return None
    return Demand(name, shape)


def _owner(tensor: torch.Tensor, name: str | None,
           bound: dict[str, Any]) -> tuple[str | None, bool]:
    """The parameter `tensor` is (True), is a view of, or shares a name with (False)."""
    for parameter, value in bound.items():
        if value is tensor:
            return parameter, True
    root = _root(tensor)
    for parameter, value in bound.items():
        if isinstance(value, torch.Tensor) and _root(value) is root:
            return parameter, False
    if name is not None and name in bound:
        return name, False  # a copy under the same name (`h_pre.to(torch.float32)`)
    return None, False


def _root(tensor: torch.Tensor) -> torch.Tensor:
    while tensor._base is not None:
        tensor = tensor._base
    return tensor


def fit(current: tuple[int, ...], wanted: tuple[int, ...]) -> tuple[int, ...]:
    """A shape for a parameter whose view (or copy) should have shape
    `wanted`: the parameter's leading dims kept where they hold as many
    elements as the wanted leading dims, the wanted trailing dims taken.

    fit((2, 2, 3, 4), (4, 3, 3)) == (2, 2, 3, 3); fit((2, 3, 4), (-1, 3, 3)) == (2, 3, 3)
    """
    for trailing in range(1, len(wanted) + 1):
        head, tail = current[:len(current) - trailing], wanted[len(wanted) - trailing:]
        wanted_head = wanted[:len(wanted) - trailing]
        if len(current) < trailing or -1 in tail:
            break
        if head and (-1 in wanted_head or math.prod(head) == math.prod(wanted_head)):
            return head + tail
    return tuple(OPEN_SIZE if n == -1 else n for n in wanted)


# ---------------------------------------------------------------------------
# Evaluating a frame's size expressions without running user code
# ---------------------------------------------------------------------------
class _Evaluator:
    def __init__(self, frame: FrameType, bindings: dict[str, ast.expr] | None = None) -> None:
        self.frame = frame
        self.bindings = bindings or {}

    def expand(self, node: ast.expr) -> ast.expr:
        """A name bound to a tensor's size, as that size's expression."""
        if isinstance(node, ast.Name) and node.id in self.bindings:
            return self.bindings[node.id]
        return node

    def tensor(self, node: ast.expr) -> torch.Tensor:
        value = self.value(node)
        if not isinstance(value, torch.Tensor):
            raise _Unknown
        return value

    def truth(self, node: ast.Compare) -> bool:
        left, right = self.value(node.left), self.value(node.comparators[0])
        op = node.ops[0]
        compare = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.GtE: operator.ge,
                   ast.Gt: operator.gt, ast.LtE: operator.le, ast.Lt: operator.lt,
                   ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}.get(type(op))
        if compare is None:
            raise _Unknown
        try:
            return bool(compare(_plain(left), _plain(right)))
        except (TypeError, RuntimeError) as exc:
            raise _Unknown from exc

    def value(self, node: ast.expr) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise _Unknown
        return method(node)

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        for scope in (self.frame.f_locals, self.frame.f_globals):
            if node.id in scope:
                value = scope[node.id]
                if isinstance(value, (int, float, bool, str, tuple, list, torch.Size,
                                      torch.Tensor)) or value is None:
                    return value
                raise _Unknown
        if node.id in _SAFE_CALLS:
            return _SAFE_CALLS[node.id]
        raise _Unknown

    def _Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        items: list[Any] = []
        for element in node.elts:
            if isinstance(element, ast.Starred):
                items.extend(self.value(element.value))
            else:
                items.append(self.value(element))
        return tuple(items)

    _List = _Tuple

    def _Set(self, node: ast.Set) -> tuple[Any, ...]:
        """A set of sizes, in order (the smallest allowed is tried first)."""
        items = self._Tuple(ast.Tuple(elts=node.elts))
        try:
            return tuple(sorted(items))
        except TypeError as exc:
            raise _Unknown from exc

    def _BinOp(self, node: ast.BinOp) -> Any:
        function = _BINARY.get(type(node.op))
        if function is None:
            raise _Unknown
        try:
            return function(_plain(self.value(node.left)), _plain(self.value(node.right)))
        except (TypeError, ZeroDivisionError) as exc:
            raise _Unknown from exc

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        if not isinstance(node.op, ast.USub):
            raise _Unknown
        value = self.value(node.operand)
        if not isinstance(value, (int, float)):
            raise _Unknown
        return -value

    def _Subscript(self, node: ast.Subscript) -> Any:
        container = _plain(self.value(node.value))
        if not isinstance(container, (tuple, list)):
            raise _Unknown
        if isinstance(node.slice, ast.Slice):
            parts = [self.value(p) if p is not None else None
                     for p in (node.slice.lower, node.slice.upper, node.slice.step)]
            return container[slice(*parts)]
        index = self.value(node.slice)
        if not isinstance(index, int) or not -len(container) <= index < len(container):
            raise _Unknown
        return container[index]

    def _Attribute(self, node: ast.Attribute) -> Any:
        owner = self.value(node.value)
        if isinstance(owner, torch.Tensor) and node.attr in ("shape", "ndim"):
            return tuple(owner.shape) if node.attr == "shape" else owner.dim()
        raise _Unknown

    def _Call(self, node: ast.Call) -> Any:
        if node.keywords:
            raise _Unknown
        if isinstance(node.func, ast.Attribute):
            receiver = self.value(node.func.value)
            if not isinstance(receiver, torch.Tensor):
                raise _Unknown
            args = [self.value(a) for a in node.args]
            if node.func.attr == "size" and len(args) <= 1:
                return tuple(receiver.shape) if not args else receiver.shape[args[0]]
            if node.func.attr in ("dim", "ndimension") and not args:
                return receiver.dim()
            if node.func.attr == "numel" and not args:
                return receiver.numel()
            raise _Unknown
        function = self.value(node.func)
        if function not in _SAFE_CALLS.values():
            raise _Unknown
        try:
            return function(*(_plain(self.value(a)) for a in node.args))
        except (TypeError, ValueError) as exc:
            raise _Unknown from exc


def _plain(value: Any) -> Any:
    """torch.Size as a tuple; tensors stay tensors (and are not compared)."""
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, torch.Tensor):
        raise _Unknown
    return value
