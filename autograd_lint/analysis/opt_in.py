"""What a caller opts into: a Function's flags, and the in-place changes that
happen without them.

RULES.md (AGF011; "Precision first", the event): a write that happens only
when the caller passes a non-default value to a flag (`inplace=True`,
`in_place=True`, a mode string) of forward, or of the public function that
calls `apply`, is the caller's choice, not a defect every caller gets. To
tell, forward and backward are interpreted again, specialized to the values a
caller gets without opting in (walker.py and callees.py decide branches,
conditional aliases and callees' branches from them: `Recorder.decided`); a
write that no such run makes is opt-in.

A flag's values without opting in, in order of preference:
- the literals every `Fn.apply(...)` call of forward's module passes, or the
  literal defaults of the wrapper parameters passed there (`def rms_norm(...,
  in_place=True): return Fn.apply(..., in_place)`);
- forward's own literal default;
- unknown: then a write must happen whatever the flag is (each value its
  tests compare it with, and one other; `True` and `False` for a bare test).
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .events import CtxStore, MethodFacts, Mutation
from .guards import Other
from .syntax import NOT_LITERAL as _NOT_LITERAL
from .syntax import literal_value
from .values import Kind

if TYPE_CHECKING:
    from .function_facts import FunctionFacts

_MAX_RUNS = 16  # specialized runs per method; beyond that, every write counts
_UNSET = object()


@dataclass(frozen=True)
class FlagSpace:
    """The flags of one Function and their values without opting in."""

    # Flags whose values callers get are known: a write happens without
    # opting in when some of those values make it happen.
    known: dict[str, tuple[object, ...]] = field(default_factory=dict)
    # Flags nobody sets in sight: a write must happen under every value.
    unknown: dict[str, tuple[object, ...]] = field(default_factory=dict)
    # Every known value is a literal some `apply` call passes (no default a
    # caller could change): a write they all rule out is no write at all.
    closed: bool = False
    ctx_attrs: dict[str, str] = field(default_factory=dict)  # ctx attribute -> flag

    def describe(self) -> str:
        names = sorted({*self.known, *self.unknown})
        return " or ".join(f"`{name}`" for name in names)


class OptIn:
    """The specialized runs of one Function's methods, computed on demand."""

    def __init__(self, facts: FunctionFacts) -> None:
        self.facts = facts
        self._space: FlagSpace | None | object = _UNSET
        self._runs: dict[tuple[str, tuple[tuple[str, object], ...]], MethodFacts | None] = {}

    @property
    def space(self) -> FlagSpace | None:
        if self._space is _UNSET:
            self._space = flag_space(self.facts)
        return self._space  # type: ignore[return-value]

    def verdict(self, method: str, mutation: Mutation, root: str) -> str:
        """"default": the write happens for callers that opt into nothing;
        "opt-in": only for callers that set a flag; "never": the literal
        arguments of every call rule it out."""
        space = self.space
        if space is None:
            return "default"
        known = list(itertools.product(*space.known.values()))
        unknown = list(itertools.product(*space.unknown.values()))
        if len(known) * len(unknown) > _MAX_RUNS:
            return "default"
        for known_values in known:
            if all(self._writes(method, space, {**dict(zip(space.known, known_values,
                                                               strict=True)),
                                                **dict(zip(space.unknown, unknown_values,
                                                           strict=True))}, mutation, root)
                   for unknown_values in unknown):
                return "default"
        return "never" if space.closed and not space.unknown else "opt-in"

    def _writes(self, method: str, space: FlagSpace, values: dict[str, object],
                mutation: Mutation, root: str) -> bool:
        run = self._run(method, space, values)
        if run is None:
            return True  # nothing to compare with: as the unspecialized run says
        return any(m.node is mutation.node and root in m.value.roots for m in run.of(Mutation))

    def _run(self, method: str, space: FlagSpace, values: dict[str, object]
             ) -> MethodFacts | None:
        if method in ("forward", "setup_context"):
            decided = dict(values)
        else:
            decided = {f"ctx.{attr}": values[flag] for attr, flag in space.ctx_attrs.items()
                       if flag in values}
        key = (method, tuple(sorted(decided.items(), key=lambda item: item[0])))
        if key not in self._runs:
            self._runs[key] = self.facts.specialized(method, decided) if decided else None
        return self._runs[key]


def flag_space(facts: FunctionFacts) -> FlagSpace | None:
    """The flags of a Function (non-tensor inputs its branches test, or that
    forward passes on), with their values without opting in; None: no flag."""
    fn = facts.fn
    forward = fn.forward
    if forward is None or forward.node is None or fn.has_varargs:
        return None
    ctx_attrs = _ctx_flag_attrs(facts)
    tested = _tested_names(forward.node) | set(ctx_attrs.values())
    passed = _passed_names(forward.node)
    names = [arg.arg for arg in fn.inputs]
    candidates = [name for name in names if (name in tested or name in passed)
                  and facts.inputs[name].kind is not Kind.TENSOR
                  and name not in facts.evidence and not facts.inputs[name].seq]
    if not candidates:
        return None
    at_calls = _call_site_values(facts, names)
    known: dict[str, tuple[object, ...]] = {}
    unknown: dict[str, tuple[object, ...]] = {}
    closed = True
    for name in candidates:
        values, from_literals = at_calls.get(name, ((), False))
        if not values and (default := forward.defaults.get(name)) is not None:
            value = literal_value(default)
            values, from_literals = ((value,), False) \
                if value is not _NOT_LITERAL and _hashable(value) else ((), False)
        if values:
            known[name] = values
            closed = closed and from_literals
        elif name in tested:
            unknown[name] = _trial_values(facts, name, ctx_attrs)
    if not known and not unknown:
        return None
    return FlagSpace(known, unknown, closed and bool(known), ctx_attrs)


def _ctx_flag_attrs(facts: FunctionFacts) -> dict[str, str]:
    """ctx attributes forward (or setup_context) sets to an input as is."""
    found: dict[str, str] = {}
    for name in ("forward", "setup_context"):
        method = facts.facts(name)
        for store in method.of(CtxStore) if method else ():
            src = store.value.src or ""
            if src.startswith("input:") and store.value.kind is not Kind.TENSOR:
                found[store.attr] = src[6:]
    return found


def _tested_names(node: ast.AST) -> set[str]:
    """Names a branch test of this body reads (`if inplace:`, `x if mode == "a" else y`)."""
    names: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, (ast.If, ast.IfExp, ast.While)):
            names.update(n.id for n in ast.walk(inner.test) if isinstance(n, ast.Name))
    return names


def _passed_names(node: ast.AST) -> set[str]:
    """Names passed as arguments to calls (a flag handed on to a helper or kernel)."""
    names: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            for argument in (*inner.args, *(k.value for k in inner.keywords)):
                if isinstance(argument, ast.Name):
                    names.add(argument.id)
    return names


def _trial_values(facts: FunctionFacts, name: str, ctx_attrs: dict[str, str]
                  ) -> tuple[object, ...]:
    """Values that cover every branch a flag's tests tell apart: each literal
    it is compared with and one other value, or True and False."""
    attrs = {attr for attr, flag in ctx_attrs.items() if flag == name}
    literals: list[object] = []
    bare = False
    for method in ("forward", "backward", "vjp", "jvp"):
        found = facts.fn.method(method)
        if found is None or found.node is None:
            continue
        for node in ast.walk(found.node):
            if isinstance(node, ast.Compare) and _names_flag(node.left, name, attrs):
                for comparator in node.comparators:
                    value = literal_value(comparator)
                    if value is not _NOT_LITERAL:
                        literals.extend(value if isinstance(value, tuple) else (value,))
            elif any(_names_flag(test, name, attrs) for test in _truth_tests(node)):
                bare = True
    values: list[object] = list(dict.fromkeys(v for v in literals if _hashable(v)))
    if literals:
        values.append(Other())
    if bare or not literals:
        values.extend(v for v in (True, False) if v not in values)
    return tuple(values)


def _truth_tests(node: ast.AST) -> list[ast.expr]:
    """The expressions a node tests for truth (`if flag:`, `not flag`, `a and flag`)."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While)):
        return [node.test]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [node.operand]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    return []


def _names_flag(node: ast.expr, name: str, attrs: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id == name or \
        isinstance(node, ast.Attribute) and node.attr in attrs


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _call_site_values(facts: FunctionFacts, names: list[str]
                      ) -> dict[str, tuple[tuple[object, ...], bool]]:
    """Per input, the values the `apply` calls of forward's module pass (and
    whether all are literals, not defaults); inputs some call passes in a way
    not known are left out."""
    fn = facts.fn
    project = fn.project
    module = fn.module
    if project is not None and module.partial:
        module = project.complete(module)
    calls = [node for node in ast.walk(module.tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "apply"
             and isinstance(node.func.value, ast.Name) and node.func.value.id == fn.name]
    if not calls:
        return {}
    enclosing = _enclosing_defs(module.tree)
    found: dict[str, tuple[tuple[object, ...], bool]] = {}
    for index, name in enumerate(names):
        values: list[object] = []
        literal = True
        for call in calls:
            value, is_literal = _argument_value(call, index, enclosing.get(id(call)))
            if value is _NOT_LITERAL:
                break
            values.append(value)
            literal = literal and is_literal
        else:
            found[name] = (tuple(dict.fromkeys(v for v in values if _hashable(v))), literal)
    return found


def _argument_value(call: ast.Call, index: int,
                    enclosing: ast.FunctionDef | ast.AsyncFunctionDef | None
                    ) -> tuple[object, bool]:
    """The value an `apply` call passes at a position: a literal, or the
    literal default of the enclosing def's parameter passed there."""
    if any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return _NOT_LITERAL, False
    if index >= len(call.args):
        return _NOT_LITERAL, False  # forward's default: decided by forward
    argument = call.args[index]
    value = literal_value(argument)
    if value is not _NOT_LITERAL:
        return value, True
    if isinstance(argument, ast.Name) and enclosing is not None:
        defaults = {a.arg: d for a, d in _defaults(enclosing)}
        if argument.id in defaults and argument.id not in _rebound(enclosing):
            return literal_value(defaults[argument.id]), False
    return _NOT_LITERAL, False


def _defaults(node: ast.FunctionDef | ast.AsyncFunctionDef
              ) -> list[tuple[ast.arg, ast.expr]]:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                     strict=False))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
              if d is not None]
    return pairs


def _rebound(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {target.id for inner in ast.walk(node)
            if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for target in (inner.targets if isinstance(inner, ast.Assign) else [inner.target])
            if isinstance(target, ast.Name)}


def _enclosing_defs(tree: ast.AST) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The innermost def around each call (by id)."""
    found: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def visit(node: ast.AST, current: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else current
            if isinstance(child, ast.Call) and current is not None:
                found[id(child)] = current
            visit(child, inner)

    visit(tree, None)
    return found
